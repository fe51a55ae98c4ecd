import CometChatCallsSDK
import Foundation

/// Runs the call screen on the main thread: turns listener events into the view model, polls
/// input and audio levels, and redraws at most 30 times a second, only when something changed.
///
/// Thread rules: main thread only (the SDK callback queue must be main).
@MainActor
public final class CallScreenController {
    public private(set) var model: CallViewModel
    private let driver: any TerminalDriver
    private let session: CallSession
    private var bridge: ListenerBridge?
    private var timer: DispatchSourceTimer?
    private var dirty = true
    private var lastSecond = -1
    private var ticks = 0
    /// Called when the user asks to quit and the session is over (or was never joined).
    public var onFinished: ((Int32) -> Void)?
    public private(set) var framesDrawn = 0

    public init(driver: any TerminalDriver, title: String, session: CallSession = .shared) {
        self.driver = driver
        self.session = session
        self.model = CallViewModel(title: title)
    }

    /// Registers listeners and starts the redraw timer.
    public func start(refreshHz: Int = 30) {
        let bridge = ListenerBridge { [weak self] e in MainActor.assumeIsolated { self?.handle(e) } }
        bridge.register(on: session)
        self.bridge = bridge
        let t = DispatchSource.makeTimerSource(queue: .main)
        t.schedule(deadline: .now(), repeating: .milliseconds(1000 / refreshHz))
        t.setEventHandler { [weak self] in MainActor.assumeIsolated { self?.tick() } }
        t.resume()
        timer = t
        draw()
    }

    public func stop() {
        timer?.cancel()
        timer = nil
        driver.shutdown()
    }

    public func apply(settings: SessionSettingsBuilder.SessionSettings) {
        model.apply(settings)
        dirty = true
    }

    public func show(notice: String?) {
        model.notice = notice
        dirty = true
    }

    public func setStatus(_ s: String) {
        model.status = s
        dirty = true
    }

    func handle(_ e: CallEvent) {
        model.apply(e, localPID: session.localParticipantID)
        // The chat badge is the SDK's (`setChatButtonUnreadCount`): keep both in step.
        if case .chatMessage = e, model.chatUnread != session.chatButtonUnreadCount { session.setChatButtonUnreadCount(model.chatUnread) }
        dirty = true
        switch e {
        case .sessionLeft, .sessionTimedOut: finish(0)
        case .connectionClosed: finish(3)
        default: break
        }
    }

    private func finish(_ code: Int32) {
        draw()
        onFinished?(code)
    }

    /// One UI tick: input, levels, clock, then a redraw if anything changed.
    public func tick() {
        while let input = driver.poll() { handle(input) }
        if model.updateLevels(session.audioLevels()) { dirty = true }
        ticks += 1
        if ticks % 15 == 0, model.updateQuality(session.connectionQuality()) { dirty = true }
        let unread = session.chatButtonUnreadCount
        if unread != model.chatUnread { model.chatUnread = unread; dirty = true }
        model.now = Date()
        let second = Int(model.now.timeIntervalSince1970)
        if second != lastSecond { lastSecond = second; dirty = true }
        if dirty { draw() }
    }

    private func draw() {
        let (w, h) = driver.size
        driver.present(CallScreenRenderer.render(model, width: w, height: h, unicode: driver.supportsUnicode))
        framesDrawn += 1
        dirty = false
    }

    public func handle(_ input: TerminalInput) {
        dirty = true
        if model.panel == .chat, handleChatInput(input) { return }
        if model.participantListVisible, handleParticipantList(input) { return }
        switch input {
        case .escape: model.panel = .log
        case .char("l"), .char("L"), .char("q"), .char("Q"), .interrupt: quit()
        case .char("w"), .char("W"):
            session.isPictureInPictureLayoutEnabled ? session.disablePictureInPictureLayout() : session.enablePictureInPictureLayout()
        case .char("?"): model.panel = model.panel == .help ? .log : .help
        case .char("o"), .char("O"):
            model.panel = model.panel == .settings ? .log : .settings
            if model.panel == .settings { model.playbackDevices = session.playbackDevices }
        case .char("e"), .char("E"): model.logHidden.toggle()
        case .char("f"), .char("F"):
            let all = CallViewModel.logFilters
            let i = all.firstIndex { $0 == model.logFilter } ?? 0
            model.logFilter = all[(i + 1) % all.count]
            model.logScroll = 0
        case .up: model.logScroll = min(model.logScroll + 1, max(0, model.visibleLog.count - 1))
        case .down: model.logScroll = max(0, model.logScroll - 1)
        case .char(let c) where model.panel == .settings && c.properties.numericType != nil:
            let i = Int(c.value) - 49
            if model.audioModes.indices.contains(i) { session.setAudioMode(model.audioModes[i]) }
        case .char(let c):
            let key = Unicode.Scalar(c.properties.lowercaseMapping.unicodeScalars.first?.value ?? c.value) ?? c
            guard let (button, _, _) = model.buttons.first(where: { $0.1 == key }) else { return }
            press(button)
        case .mouse(let x, let y):
            let (w, h) = driver.size
            let l = CallScreenRenderer.layout(for: model, width: w, height: h)
            if let b = l.buttons.first(where: { $0.rect.contains(x: x, y: y) }), let button = BuiltInButton(rawValue: b.id) { press(button) }
        default: break
        }
    }

    /// A control-bar button: the SDK fires its callback and acts; the surface opens its panels.
    private func press(_ button: BuiltInButton) {
        session.click(button)
        switch button {
        case .chat: model.panel = model.panel == .chat ? .log : .chat
        case .shareInvite:
            guard let link = session.inviteLink else { return }
            model.notice = "Invite: \(link) (copied)"
            driver.copyToClipboard(link)
        default: break
        }
    }

    /// Keys of the participant list: search, selection and moderation of the selected
    /// participant (the server refuses non-moderators with an error event). Returns whether the
    /// key was consumed.
    private func handleParticipantList(_ input: TerminalInput) -> Bool {
        if model.searchingParticipants {
            switch input {
            case .enter, .escape: model.searchingParticipants = false
            case .backspace: if !model.participantSearch.isEmpty { model.participantSearch.removeLast() }
            case .char(let c): model.participantSearch.unicodeScalars.append(c); model.participantSelection = 0
            default: return false
            }
            return true
        }
        let target = model.selectedTile?.pid
        switch input {
        case .char("/"): model.searchingParticipants = true
        case .up: model.participantSelection = max(0, model.participantSelection - 1)
        case .down: model.participantSelection = min(max(0, model.listedTiles.count - 1), model.participantSelection + 1)
        case .char("P"): if let t = target { session.pinParticipant(participantId: t) }
        case .char("M"): if let t = target { session.muteParticipant(participantId: t) }
        case .char("V"): if let t = target { session.pauseParticipantVideo(participantId: t) }
        case .char("X"): if let t = target { session.removeParticipant(participantId: t) }
        default: return false
        }
        return true
    }

    /// Typing in the chat panel: text, Backspace, Enter sends, Esc closes. Returns whether the
    /// key was consumed.
    private func handleChatInput(_ input: TerminalInput) -> Bool {
        switch input {
        case .enter:
            let text = model.chatDraft.trimmingCharacters(in: .whitespaces)
            if !text.isEmpty { session.sendChatMessage(text) }
            model.chatDraft = ""
            return true
        case .backspace:
            if !model.chatDraft.isEmpty { model.chatDraft.removeLast() }
            return true
        case .escape:
            model.panel = .log
            return true
        case .char(let c):
            if model.chatDraft.count < 2000 { model.chatDraft.unicodeScalars.append(c) }
            return true
        default:
            return false
        }
    }

    /// Leaves the session (or finishes at once when not in one).
    public func quit() {
        if session.isCallSessionActive() {
            model.status = "leaving…"
            dirty = true
            session.click(.leaveSession)
        } else {
            finish(0)
        }
    }
}

extension CallScreenController: @preconcurrency CallContainer {
    public func callSessionDidStart(_ session: CallSession, settings: SessionSettingsBuilder.SessionSettings) {
        apply(settings: settings)
    }
}
