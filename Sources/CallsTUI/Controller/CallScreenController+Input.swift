import CallsCore
import CometChatCallsSDK
import Foundation

// MARK: Keys and mouse (main thread)
extension CallScreenController {
    public func handle(_ input: TerminalInput) {
        dispatchPrecondition(condition: .onQueue(.main))
        dirty = true
        if model.overlay == .summary {
            if input != .resize { exitNow() }
            return
        }
        if input == .resize { return }
        if input == .interrupt { return quit() }
        if case .paste(let text) = input { return paste(text) }
        if let p = model.pending { return confirm(p, input, button: currentLayoutButton(at: input)) }
        if currentLayout.tooSmall {
            // Nothing else fits, so nothing else can be asked: q (or l) leaves at once.
            if [.char("q"), .char("l"), .char("Q"), .char("L")].contains(input) { quit() }
            return
        }
        if model.overlay == .sharePicker { return handleSharePicker(input) }
        if model.overlay != nil, handleOverlay(input) { return }
        if model.panel == .chat, handleChatInput(input) { return }
        if model.editingLogSearch, handleLogSearch(input) { return }
        if model.participantListVisible, handleParticipantList(input) { return }
        if handleLobby(input) { return }
        handleMain(input)
    }

    /// The second key of a dangerous action: the same key (or Enter) confirms, anything else
    /// cancels and says so. Either way the question goes at once (it never shows again after
    /// it was answered).
    private func confirm(_ p: CallViewModel.Pending, _ input: TerminalInput, button: CallScreenRenderer.Button?) {
        model.pending = nil
        model.toasts.removeAll { $0.kind == .prompt }
        switch p {
        case .leave:
            let leaveButton = button?.id == BuiltInButton.leaveSession.rawValue
            if [.char("l"), .char("L"), .char("q"), .char("Q"), .enter].contains(input) || leaveButton {
                quit()
            } else {
                model.toast("Still in the call")
            }
        case .ban(let pid, let uid):
            let name = model.tiles.first { $0.pid == pid }?.name ?? uid
            if input == .char("B") || input == .enter {
                session.setBan(uid: uid, banned: true)
                model.toast("Banning \(name) from this room…")
            } else {
                model.toast("\(name) is not banned")
            }
        case .remove(let pid):
            let name = model.tiles.first { $0.pid == pid }?.name ?? pid
            if [.char("x"), .char("X"), .enter].contains(input) {
                session.removeParticipant(participantId: pid)
                model.toast("Removing \(name)…")
            } else {
                model.toast("\(name) stays")
            }
        }
    }

    private func currentLayoutButton(at input: TerminalInput) -> CallScreenRenderer.Button? {
        guard case .click(let x, let y) = input else { return nil }
        return currentLayout.buttons.first { $0.rect.contains(x: x, y: y) }
    }

    /// Rows of the side panel's content (page size for PgUp/PgDn).
    private var panelRows: Int { max(1, (currentLayout.panel?.height ?? 10) - 2) }

    /// While someone waits in the lobby (moderators): `y` lets the first in, `n` sends them away.
    private func handleLobby(_ input: TerminalInput) -> Bool {
        guard let first = model.lobby.first else { return false }
        switch input {
        case .char("y"), .char("Y"):
            session.admitFromLobby(participantId: first.id)
            model.toast("Letting \(first.name) in…")
        case .char("n"), .char("N"):
            session.denyFromLobby(participantId: first.id)
            model.toast("\(first.name) is sent away")
        default: return false
        }
        return true
    }

    private func handleMain(_ input: TerminalInput) {
        switch input {
        case .escape:
            if model.panel != .log { model.panel = .log } else if !model.log.search.isEmpty { model.log.search = "" }
        case .char("l"), .char("L"), .char("q"), .char("Q"):
            model.pending = .leave
            model.toast("Leave the call? Press \(input == .char("q") || input == .char("Q") ? "q" : "l") again (or Enter) to leave, any other key to stay.",
                        kind: .prompt, seconds: 8)
        case .char("w"), .char("W"):
            session.isPictureInPictureLayoutEnabled ? session.disablePictureInPictureLayout() : session.enablePictureInPictureLayout()
        case .char("k"), .char("K"):
            // (Moderators; the server refuses anyone else, and the refusal shows.)
            model.roomLocked ? session.unlockRoom() : session.lockRoom()
            model.toast(model.roomLocked ? "Unlocking the room…" : "Locking the room…")
        case .char("?"): model.overlay = .help; model.overlayScroll = 0
        case .char("i"), .char("I"): model.overlay = .stats; model.overlayScroll = 0
        case .char("o"), .char("O"):
            model.panel = model.panel == .settings ? .log : .settings
            if model.panel == .settings { refreshAudioDevices() }
        case .up where model.panel == .settings: model.settingsSelection = max(0, model.settingsSelection - 1)
        case .down where model.panel == .settings: model.settingsSelection = min(model.audioChoices.count - 1, model.settingsSelection + 1)
        case .enter where model.panel == .settings:
            let choices = model.audioChoices
            guard choices.indices.contains(model.settingsSelection) else { return }
            pick(choices[model.settingsSelection])
        case .char("e"), .char("E"): model.logHidden.toggle()
        case .char("n"), .char("N"): model.panel = model.panel == .counts ? .log : .counts
        case .char("f"), .char("F"):
            let all = CallViewModel.logFilters
            let i = all.firstIndex { $0 == model.log.listenerFilter } ?? 0
            model.log.listenerFilter = all[(i + 1) % all.count]
            model.log.anchor = nil
        case .char("u"), .char("U"):
            let uids: [String?] = [nil] + model.seen.keys.sorted { (model.seen[$0] ?? $0) < (model.seen[$1] ?? $1) }
            let i = uids.firstIndex { $0 == model.log.participantFilter } ?? 0
            model.log.participantFilter = uids[(i + 1) % uids.count]
            model.log.anchor = nil
        case .char("/"): model.editingLogSearch = true; model.logHidden = false; model.panel = .log
        case .char("x"), .char("X"): exportLog()
        case .char("["): model.tilePage = max(0, model.tilePage - 1)
        case .char("]"): model.tilePage = min(model.tiles.count, model.tilePage + 1)
        // The counts panel scrolls its rows; otherwise the keys move through the log.
        case .up where model.panel == .counts: model.countsScroll = max(0, model.countsScroll - 1)
        case .down where model.panel == .counts: model.countsScroll = min(countsScrollLimit, model.countsScroll + 1)
        case .pageUp where model.panel == .counts: model.countsScroll = max(0, model.countsScroll - panelRows)
        case .pageDown where model.panel == .counts: model.countsScroll = min(countsScrollLimit, model.countsScroll + panelRows)
        case .home where model.panel == .counts: model.countsScroll = 0
        case .end where model.panel == .counts: model.countsScroll = countsScrollLimit
        case .up: model.log.scroll(by: -1)
        case .down: model.log.scroll(by: 1)
        case .pageUp: model.log.scroll(by: -panelRows)
        case .pageDown: model.log.scroll(by: panelRows)
        case .home: model.log.scrollToOldest(rows: panelRows)
        case .end: model.log.scrollToNewest()
        case .enter:
            if let e = model.log.selected { model.overlay = .payload(seq: e.seq); model.overlayScroll = 0 }
        case .char(let c) where model.panel == .settings && c.properties.numericType != nil:
            let i = Int(c.value) - 49
            guard model.audioModes.indices.contains(i) else { return model.toast("No audio mode \(c)") }
            pick(.mode(model.audioModes[i]))
        case .char(let c):
            let key = Unicode.Scalar(c.properties.lowercaseMapping.unicodeScalars.first?.value ?? c.value) ?? c
            if let spec = ControlBar.specs(model, glyphs: .for(unicode: driver.supportsUnicode)).first(where: { $0.key == key }) {
                press(spec.item)
            } else if let hidden = hiddenButtonName(key) {
                model.toast("'\(key)' (\(hidden)) is not available in this call (hidden by the session settings)")
            } else if c != " " {
                model.toast("No key '\(c)': ? lists every key")
            }
        case .click(let x, let y):
            if let b = currentLayout.buttons.first(where: { $0.rect.contains(x: x, y: y) }) {
                if b.id == "help" { press(.help) } else if let button = BuiltInButton(rawValue: b.id) { press(.builtIn(button)) }
            }
        case .wheel(let up, _, _):
            if model.participantListVisible {
                model.participantSelection = max(0, min(model.listedTiles.count - 1, model.participantSelection + (up ? -1 : 1)))
            } else {
                model.log.scroll(by: up ? -3 : 3)
            }
        default: break
        }
    }

    /// Reads the devices and endpoints for the audio settings panel.
    func refreshAudioDevices() {
        model.playbackDevices = session.playbackDevices
        model.captureDevices = session.captureDevices
        if let e = session.audioEndpoints { model.audioInput = e.input; model.audioOutput = e.output }
    }

    /// One row of the audio settings panel: what is already in use changes nothing.
    private func pick(_ choice: CallViewModel.AudioChoice) {
        switch choice {
        case .mode(let mode):
            // Picking the current mode changes nothing (and fires no onAudioModeChanged).
            if mode == model.audioMode { model.toast("\(mode.value) is already the audio mode") } else { session.setAudioMode(mode) }
        case .input(let spec, let label):
            if spec == model.audioInput { return model.toast("\(label) is already your microphone") }
            session.setAudioInputDevice(spec)
            model.toast("Microphone: \(label)")
        case .output(let spec, let label):
            if spec == model.audioOutput { return model.toast("\(label) is already your speaker") }
            session.setAudioOutputDevice(spec)
            model.toast("Speaker: \(label)")
        case .testTone:
            session.playTestTone()
            model.toast("Playing a test tone (440 Hz, 1 s)")
        }
        refreshAudioDevices()
    }

    /// The name of a built-in button the settings hide whose key is `key`.
    private func hiddenButtonName(_ key: Unicode.Scalar) -> String? {
        let names: [Unicode.Scalar: String] = ["m": "mute", "v": "video", "c": "camera", "h": "raise hand", "y": "layout", "p": "participant list",
                                               "t": "chat", "s": "share invite", "r": "record", "a": "captions", "g": "transcription", "b": "live stream",
                                               "d": "terminal share"]
        return names[key]
    }

    /// A control-bar button: the SDK fires its callback and acts; the surface opens its panels.
    /// Leave asks for a second press first.
    func press(_ item: ControlBar.Item) {
        guard case .builtIn(let button) = item else {
            model.overlay = model.overlay == .help ? nil : .help
            model.overlayScroll = 0
            return
        }
        switch button {
        case .leaveSession:
            model.pending = .leave
            model.toast("Leave the call? Press l again, Enter or click Leave to leave, any other key to stay.", kind: .prompt, seconds: 8)
            return
        default: break
        }
        session.click(button)
        switch button {
        case .chat: model.panel = model.panel == .chat ? .log : .chat
        case .closedCaptions:
            // Not transcribing yet: the click asked the server to (captions show when it starts).
            if model.transcriptionLanguage == nil {
                model.captionsHidden = false
                model.toast("Captions: asking the server to transcribe…")
            } else {
                model.captionsHidden.toggle()
            }
        case .screenShareToggle: toggleShare()
        case .shareInvite:
            guard session.inviteLink != nil else { return model.toast("No invite link yet (not in a session)", kind: .error) }
            model.toast("Making an invite link…")
            // A guest invite (no key in it): minted over REST, then copied on the main thread.
            let session = self.session
            Task { @MainActor [weak self] in
                guard let self, let shareable = await session.shareableLink() else { return }
                let outcome = self.driver.copyToClipboard(shareable.link)
                switch shareable {
                case .guestInvite(let link):
                    self.model.toast(outcome.inviteToast(link), seconds: outcome == .unavailable ? 15 : 8)
                case .sessionLink(let link, let reason):
                    // Not an invite: said so, with why (a guest's link, a ringing call's room).
                    self.model.toast("No guest invite (\(reason)); the session's link, for people with an account: \(link)",
                                     kind: .error, seconds: 15)
                }
                self.dirty = true
            }
        default: break
        }
    }

    /// Overlays: scroll keys; Esc (or the overlay's own key) closes. Returns whether consumed.
    private func handleOverlay(_ input: TerminalInput) -> Bool {
        switch input {
        case .up: model.overlayScroll = max(0, model.overlayScroll - 1)
        case .down: model.overlayScroll += 1
        case .pageUp: model.overlayScroll = max(0, model.overlayScroll - panelRows)
        case .pageDown: model.overlayScroll += panelRows
        case .home: model.overlayScroll = 0
        case .end: model.overlayScroll = 10_000
        case .wheel(let up, _, _): model.overlayScroll = max(0, model.overlayScroll + (up ? -3 : 3))
        case .escape, .enter, .char("?"), .char("i"), .char("I"), .char("q"): model.overlay = nil
        case .click(let x, let y):
            // A click on the bar acts on the bar; Help (or any bar button) closes the overlay first.
            guard let b = currentLayout.buttons.first(where: { $0.rect.contains(x: x, y: y) }) else { return true }
            model.overlay = nil
            return b.id == "help"
        default: return false
        }
        clampOverlayScroll()
        return true
    }

    private func clampOverlayScroll() {
        let (w, h) = driver.size
        let width = min(w, 100) - 2
        let lines: Int
        switch model.overlay {
        case .help: lines = OverlayRenderer.helpLines(width: min(w, 84) - 2, glyphs: .for(unicode: driver.supportsUnicode)).count
        case .payload(let seq): lines = model.log.entries.first { $0.seq == seq }.map { OverlayRenderer.payloadLines($0, width: width).count } ?? 0
        case .stats: lines = OverlayRenderer.statsLines(model, width: width).count
        default: lines = 0
        }
        let rows = max(1, h - 4)
        model.overlayScroll = min(model.overlayScroll, max(0, lines - rows))
    }

    /// Typing the event-log search: Enter keeps it, Esc clears it.
    private func handleLogSearch(_ input: TerminalInput) -> Bool {
        switch input {
        case .enter: model.editingLogSearch = false
        case .escape: model.editingLogSearch = false; model.log.search = ""
        case .backspace: if !model.log.search.isEmpty { model.log.search.removeLast() }
        case .char(let c): model.log.search.unicodeScalars.append(c)
        default: return false
        }
        model.log.anchor = nil
        return true
    }

    /// Keys of the participant list act on the selected participant and say so (the server
    /// refuses non-moderators with an error event, shown as a toast). Returns whether consumed.
    private func handleParticipantList(_ input: TerminalInput) -> Bool {
        if model.searchingParticipants {
            switch input {
            case .enter: model.searchingParticipants = false
            case .escape: model.searchingParticipants = false; model.participantSearch = ""
            case .backspace: if !model.participantSearch.isEmpty { model.participantSearch.removeLast() }
            case .char(let c): model.participantSearch.unicodeScalars.append(c); model.participantSelection = 0
            default: return false
            }
            return true
        }
        let count = model.listedTiles.count
        guard let t = model.selectedTile else {
            if input == .char("/") { model.searchingParticipants = true; return true }
            return false
        }
        let who = t.isYou ? "yourself" : t.name
        switch input {
        case .char("/"): model.searchingParticipants = true
        case .up: model.participantSelection = max(0, min(count - 1, model.participantSelection) - 1)
        case .down: model.participantSelection = min(max(0, count - 1), model.participantSelection + 1)
        case .pageUp: model.participantSelection = max(0, model.participantSelection - panelRows)
        case .pageDown: model.participantSelection = min(max(0, count - 1), model.participantSelection + panelRows)
        case .home: model.participantSelection = 0
        case .end: model.participantSelection = max(0, count - 1)
        case .escape: session.setParticipantListVisible(false)
        case .char("m"), .char("M"):
            if t.isYou {
                session.click(.toggleAudio)
            } else {
                session.muteParticipant(participantId: t.pid)
                model.toast("Muting \(who)…")
            }
        case .char("v"), .char("V"):
            session.pauseParticipantVideo(participantId: t.pid)
            model.toast("Pausing the video of \(who)…")
        case .char("P"):
            if t.isPinned { session.unpinParticipant(); model.toast("Unpinning \(who) for everyone…") }
            else { session.pinParticipant(participantId: t.pid); model.toast("Pinning \(who) for everyone…") }
        case .enter:
            if model.localPinPID == t.pid {
                model.localPinPID = nil
                model.toast("\(t.name) unpinned in your view")
            } else {
                model.localPinPID = t.pid
                model.toast("\(t.name) pinned in your view (spotlight and sidebar show them large)")
            }
        case .char("B"):
            guard !t.isYou else { model.toast("You cannot ban yourself"); return true }
            model.pending = .ban(pid: t.pid, uid: t.uid)
            model.toast("Ban \(t.name) from this room for good? Press B again (or Enter) to ban, any other key to keep.", kind: .prompt, seconds: 8)
        case .char("U"):
            guard let last = model.bans.last else { model.toast("Nobody is banned from this room"); return true }
            session.setBan(uid: last, banned: false)
            model.toast("Lifting the ban on \(last)…")
        case .char("R"):
            guard let last = model.rejoinable.last else { model.toast("Nobody was removed from this session"); return true }
            model.removed.removeAll { $0.id == last.id }
            session.allowRejoin(uid: last.id)
            model.toast("\(last.name) may join again (with a new call token)")
        case .char("x"), .char("X"):
            guard !t.isYou else { model.toast("To leave, press l"); return true }
            model.pending = .remove(pid: t.pid)
            model.toast("Remove \(t.name) from the call? Press x again (or Enter) to remove, any other key to keep.", kind: .prompt, seconds: 8)
        default: return false
        }
        return true
    }

    /// How far the counts panel scrolls (its rows beyond one panel).
    private var countsScrollLimit: Int { max(0, EventLogRenderer.countRows(model).count - panelRows) }

    /// How far the chat can scroll back (its lines beyond one panel).
    private var chatScrollLimit: Int {
        guard let p = currentLayout.panel else { return 0 }
        return max(0, PanelRenderer.chatLines(model, width: p.width - 2).count - (p.height - 3))
    }

    /// Pasted text (bracketed paste) is text, never key commands: into the chat draft (lines and
    /// all: Enter sends it as one message), the log search (its first line), or, anywhere else,
    /// nowhere — a toast says where pasting works.
    private func paste(_ text: String) {
        if model.panel == .chat {
            let room = max(0, 2000 - model.chatDraft.count)
            model.chatDraft += String(DisplayText.message(text).prefix(room))
            let lines = text.split(separator: "\n").count
            if lines > 1 { model.toast("Pasted \(lines) lines: Enter sends them as one message, Esc discards", seconds: 6) }
        } else if model.editingLogSearch {
            model.log.search += String(text.split(separator: "\n").first ?? "").prefix(200)
            model.log.anchor = nil
        } else {
            model.toast("Pasted text is not read as keys: open chat (c) to paste into a message")
        }
    }

    /// Typing in the chat panel: text, Backspace, Enter sends, Esc closes. Returns whether the
    /// key was consumed.
    private func handleChatInput(_ input: TerminalInput) -> Bool {
        switch input {
        case .enter:
            let text = model.chatDraft.trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { session.sendChatMessage(text) }
            model.chatDraft = ""
            return true
        case .backspace:
            if !model.chatDraft.isEmpty { model.chatDraft.removeLast() }
            return true
        case .escape:
            model.panel = .log
            model.chatScroll = 0
            return true
        case .pageUp: model.chatScroll = min(chatScrollLimit, model.chatScroll + panelRows); return true
        case .pageDown: model.chatScroll = max(0, model.chatScroll - panelRows); return true
        case .up: model.chatScroll = min(chatScrollLimit, model.chatScroll + 1); return true
        case .down: model.chatScroll = max(0, model.chatScroll - 1); return true
        case .end: model.chatScroll = 0; return true
        case .char(let c):
            if model.chatDraft.count < 2000 { model.chatDraft.unicodeScalars.append(c) }
            return true
        default:
            return false
        }
    }

    /// Writes the whole event log as JSON lines and says where.
    func exportLog() {
        let stamp = ISO8601DateFormatter.string(from: Date(), timeZone: .current, formatOptions: [.withYear, .withMonth, .withDay, .withTime])
        let name = "callroom-events-\(stamp.replacingOccurrences(of: ":", with: "")).jsonl"
        let dirs = [exportDirectory, FileManager.default.temporaryDirectory.path]
        for dir in dirs {
            let path = URL(fileURLWithPath: dir).appendingPathComponent(name).path
            if FileManager.default.createFile(atPath: path, contents: Data(model.log.jsonl.utf8)) {
                model.toast("Exported \(model.log.entries.count) events to \(path)", seconds: 10)
                return
            }
        }
        model.toast("Cannot write the event log export in \(dirs.joined(separator: " or "))", kind: .error)
    }
}
