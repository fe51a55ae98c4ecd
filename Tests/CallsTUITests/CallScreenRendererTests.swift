@testable import CallsTUI
import CallsCore
import CometChatCallsSDK
import Foundation
import XCTest

/// Builds view models the way listener events do.
enum Fixture {
    static let names = ["You", "Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov",
                        "Claude Shannon", "Katherine Johnson"]

    static func participant(_ uid: String, _ name: String, muted: Bool = false) -> Participant {
        var p = Participant(uid: uid, name: name)
        p.pid = "pid-" + uid
        p.isAudioMuted = muted
        return p
    }

    /// `count` participants (you first, Grace muted), joined at t0, with an empty log.
    static func model(count: Int = 3, you: String = "you", names: [String] = names) -> CallViewModel {
        var m = CallViewModel(title: "Standup")
        let ps = (0..<count).map { participant($0 == 0 ? you : "u\($0)", names[$0 % names.count], muted: $0 == 2) }
        let t0 = Date(timeIntervalSince1970: 0)
        m.apply(.sessionJoined, localPID: "pid-" + you, at: t0)
        m.apply(.participantListChanged(participants: ps), localPID: "pid-" + you, at: t0)
        m.joinedAt = nil
        m.log = EventLog()
        return m
    }
}

final class CallScreenRendererTests: XCTestCase {
    func model(count: Int = 3) -> CallViewModel { Fixture.model(count: count) }
    func participant(_ uid: String, _ name: String, muted: Bool = false) -> Participant { Fixture.participant(uid, name, muted: muted) }

    func testTilesControlBarAndHeader() {
        var m = model()
        _ = m.updateLevels(["pid-u1": -10, "pid-you": -80])
        let s = CallScreenRenderer.render(m, width: 140, height: 34).text
        XCTAssertTrue(s.contains("Standup"))
        XCTAssertTrue(s.contains("3 participants"))
        XCTAssertTrue(s.contains("You (you)"))
        XCTAssertTrue(s.contains("Ada Lovelace"))
        XCTAssertTrue(s.contains("✖ muted"), "Grace is muted")
        XCTAssertTrue(s.contains("♪ speaking"), "Ada is loud")
        XCTAssertTrue(s.contains("[m] Mute"))
        XCTAssertTrue(s.contains("[l] Leave"))
        XCTAssertTrue(s.contains("[?] Help"))
        XCTAssertTrue(s.contains("Event log"))
        XCTAssertTrue(s.contains("┌ AL "), "tile titled with initials")
        XCTAssertTrue(s.contains("▄▀▄"), "tall tiles show big initials")
    }

    func testEventLogShowsEveryCallbackWithMillisecondTimes() {
        var m = model()
        let t = Date(timeIntervalSince1970: 1_700_000_000.125)
        m.apply(.participantJoined(participant: participant("u9", "Hedy Lamarr")), localPID: "pid-you", at: t)
        m.apply(.audioMuted, localPID: "pid-you", at: t)
        let s = CallScreenRenderer.render(m, width: 160, height: 30).text
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss.SSS"
        XCTAssertTrue(s.contains("\(f.string(from: t)) ParticipantEvent.onParticipantJoined"), s)
        XCTAssertTrue(s.contains(".125 "), "millisecond timestamps")
        XCTAssertTrue(s.contains("Hedy Lamarr") && s.contains("(u9)"), "long entries wrap instead of being cut:\n\(s)")
        XCTAssertTrue(s.contains("MediaEvents.onAudioMuted"))
        XCTAssertTrue(s.contains("[m] Unmute") || s.contains("m Unmute"), "the button reflects the state")
        XCTAssertTrue(s.contains("YOU ARE MUTED"))
    }

    func testNarrowTerminalPutsTheLogBelowTheTilesAndHidingItReflows() throws {
        var m = model()
        let l = CallScreenRenderer.layout(for: m, width: 80, height: 24)
        let panel = try XCTUnwrap(l.panel)
        XCTAssertEqual(panel.width, 80)
        XCTAssertGreaterThan(panel.y, l.tiles.y)
        let wide = CallScreenRenderer.layout(for: m, width: 120, height: 24)
        XCTAssertGreaterThan(try XCTUnwrap(wide.panel).x, 0)
        m.logHidden = true
        let hidden = CallScreenRenderer.layout(for: m, width: 120, height: 24)
        XCTAssertNil(hidden.panel)
        XCTAssertEqual(hidden.tiles.width, 120, "hiding the log gives its columns to the tiles")
        XCTAssertEqual(CallScreenRenderer.layout(for: m, width: 80, height: 24).tiles.height, 22, "and its rows")
        let s = CallScreenRenderer.render(m, width: 120, height: 24)
        XCTAssertTrue(s.lines[5].hasSuffix("│") || s.lines[5].hasSuffix("┐") || s.lines[5].hasSuffix("┘"), "tiles reach the right edge:\n\(s.text)")
    }

    func testHiddenButtonsAndPanels() {
        var m = model()
        m.hideToggleAudioButton = true
        var s = CallScreenRenderer.render(m, width: 100, height: 30).text
        XCTAssertFalse(s.contains("[m]"))
        XCTAssertTrue(s.contains("Leave"))
        m.hideControlPanel = true
        m.hideHeaderPanel = true
        s = CallScreenRenderer.render(m, width: 100, height: 30).text
        XCTAssertFalse(s.contains("Leave"))
        XCTAssertFalse(s.contains("Standup"))
        XCTAssertTrue(CallScreenRenderer.layout(for: m, width: 100, height: 30).buttons.isEmpty)
    }

    func testButtonsAreClickableRegions() {
        let m = model()
        let l = CallScreenRenderer.layout(for: m, width: 120, height: 30)
        XCTAssertEqual(l.buttons.map(\.id), ["toggleAudio", "toggleVideo", "switchCamera", "raiseHand", "changeLayout",
                                              "participantList", "leaveSession", "help"], "a video session's default bar")
        let s = CallScreenRenderer.render(m, width: 120, height: 30)
        for b in l.buttons {
            XCTAssertEqual(b.rect.y, 29)
            XCTAssertEqual(s.column(of: b.label, row: 29), b.rect.x, "\(b.label) is drawn where it is clicked")
        }
    }

    /// Leave and Help are always on the bar; labels get shorter, then low-priority buttons go.
    func testControlBarDegradesByPriority() {
        var m = model()
        m.settings = SessionSettingsBuilder().hideRecordingButton(false).hideChatButton(false).hideShareInviteButton(false).build()
        m.chatUnread = 3
        let widths = [200, 120, 80, 60, 40, 32]
        var previous = Int.max
        for w in widths {
            let l = CallScreenRenderer.layout(for: m, width: w, height: 24)
            let ids = l.buttons.map(\.id)
            XCTAssertTrue(ids.contains("leaveSession"), "Leave at \(w): \(ids)")
            XCTAssertTrue(ids.contains("help"), "Help at \(w): \(ids)")
            XCTAssertTrue(l.buttons.allSatisfy { $0.rect.maxX <= w }, "nothing overflows at \(w)")
            XCTAssertLessThanOrEqual(l.buttons.count, previous)
            previous = l.buttons.count
            if ids.contains("chat") { XCTAssertTrue(l.buttons.first { $0.id == "chat" }!.label.contains("3"), "the unread badge at \(w)") }
        }
        XCTAssertEqual(CallScreenRenderer.layout(for: m, width: 200, height: 24).buttons.first?.label, "[m] Mute  ", "full labels when wide (as wide as Unmute)")
        // Labels that change keep every button where it was: muting, a chat badge.
        let before = CallScreenRenderer.layout(for: m, width: 200, height: 24).buttons.map(\.rect)
        var changed = m
        changed.isMuted = true
        changed.chatUnread = 12
        XCTAssertEqual(CallScreenRenderer.layout(for: changed, width: 200, height: 24).buttons.map(\.rect), before, "no button moved")
        XCTAssertEqual(CallScreenRenderer.layout(for: changed, width: 200, height: 24).buttons.first?.label, "[m] Unmute")
        let at80 = CallScreenRenderer.layout(for: m, width: 80, height: 24).buttons
        XCTAssertEqual(at80.count, 11, "at 80 columns every button (short labels): \(at80.map(\.label))")
        let at32 = CallScreenRenderer.layout(for: m, width: 32, height: 24).buttons
        XCTAssertTrue(at32.contains { $0.label == "l✕" }, "key + symbol when narrow: \(at32.map(\.label))")
        XCTAssertFalse(at32.contains { $0.id == "switchCamera" }, "camera is the first to go")
    }

    func testASCIIFallback() {
        var m = Fixture.model(count: 3, names: ["王小明 🎧", "Ada Lovelace", "Grace Hopper"])
        m.notices = ["no capture device — sending silence"]
        m.tiles[1].raisedHandAt = 1
        m.toast("Muting Ada Lovelace…")
        m.participantListVisible = true
        let s = CallScreenRenderer.render(m, width: 100, height: 30, unicode: false).text
        XCTAssertTrue(s.contains("Muting Ada Lovelace..."), "UI punctuation has ASCII spellings:\n\(s)")
        XCTAssertTrue(s.contains("no capture device - sending silence"))
        XCTAssertTrue(s.contains("> ??? ?") || s.contains("??? ?"), "what the locale cannot show is '?'")
        XCTAssertFalse(s.unicodeScalars.contains { !$0.isASCII }, "only ASCII without a UTF-8 locale:\n\(s)")
        XCTAssertTrue(s.contains("+ AL "))
        XCTAssertTrue(s.contains("^ hand 1"))
        XCTAssertTrue(s.contains("x muted"))
    }

    func testTinyTerminalsSaySoInsteadOfDrawingGarbage() {
        for (w, h) in [(0, 0), (1, 1), (10, 3), (20, 8), (31, 40), (120, 9)] {
            let b = CallScreenRenderer.render(model(count: 6), width: w, height: h)
            XCTAssertEqual(b.lines.count, max(0, h))
            if w >= 12 && h >= 3 {
                XCTAssertTrue(b.text.replacingOccurrences(of: "\n", with: " ").contains("window too small"), "\(w)x\(h):\n\(b.text)")
                XCTAssertTrue(b.text.contains("need"))
            }
        }
        XCTAssertFalse(CallScreenRenderer.render(model(count: 6), width: 32, height: 10).text.contains("too small"), "the stated minimum draws")
    }

    /// Everyone is on screen or counted in "+N more", in every layout and size; you are always shown.
    func testNobodyIsDroppedAndYouAreAlwaysShown() {
        let count = 8
        for layout in LayoutType.allCases {
            for (w, h) in [(120, 40), (80, 24), (60, 16), (40, 12), (32, 10)] {
                var m = Fixture.model(count: count)
                m.layout = layout
                m.tiles[3].raisedHandAt = 1
                let s = CallScreenRenderer.render(m, width: w, height: h).text
                let shown = Fixture.names.prefix(count).filter { s.contains(String($0.prefix(6))) }.count
                let more = s.range(of: #"\+(\d+)"#, options: .regularExpression).flatMap { Int(s[$0].dropFirst()) } ?? 0
                XCTAssertGreaterThanOrEqual(shown + more, count, "\(layout) \(w)x\(h): \(shown) shown + \(more) more\n\(s)")
                XCTAssertTrue(s.contains("You"), "your own tile at \(layout) \(w)x\(h)\n\(s)")
            }
        }
    }

    func testPagingShowsTheOthers() {
        var m = Fixture.model(count: 8)
        let first = CallScreenRenderer.render(m, width: 40, height: 12).text
        XCTAssertTrue(first.contains("page 1/"), first)
        m.tilePage = 1
        let second = CallScreenRenderer.render(m, width: 40, height: 12).text
        XCTAssertTrue(second.contains("page 2/"), second)
        XCTAssertNotEqual(first, second)
        XCTAssertTrue(second.contains("You"), "you stay on every page")
        m.tilePage = 99
        XCTAssertFalse(CallScreenRenderer.render(m, width: 40, height: 12).text.contains("page 99"), "clamped to the last page")
    }

    func testOnlyChangedCellsAreWritten() {
        let term = MemoryTerminal(width: 100, height: 30)
        var m = model()
        _ = m.updateLevels(["pid-u1": -50])
        let first = term.present(CallScreenRenderer.render(m, width: 100, height: 30))
        XCTAssertGreaterThan(first, 300, "the first frame draws everything that is not blank")
        XCTAssertEqual(term.present(CallScreenRenderer.render(m, width: 100, height: 30)), 0, "nothing changed")
        _ = m.updateLevels(["pid-u1": -45])
        let n = term.present(CallScreenRenderer.render(m, width: 100, height: 30))
        XCTAssertGreaterThan(n, 0)
        XCTAssertLessThan(n, 12, "a meter change rewrites only the meter cells that changed")
    }

    func testEveryButtonFollowsItsHideSetting() {
        var m = model()
        m.settings = SessionSettingsBuilder().setSessionType(.voice).hideRecordingButton(false).hideChatButton(false)
            .hideShareInviteButton(false).hideRaiseHandButton(true).build()
        XCTAssertEqual(ControlBar.specs(m, glyphs: .unicode).map(\.item),
                       [.builtIn(.toggleAudio), .builtIn(.changeLayout), .builtIn(.participantList), .builtIn(.chat), .builtIn(.shareInvite),
                        .builtIn(.recordingToggle), .builtIn(.leaveSession), .help],
                       "voice: no video controls; hidden raise-hand; shown chat, invite and record")
        m.chatUnread = 3
        XCTAssertTrue(CallScreenRenderer.render(m, width: 130, height: 20).text.contains("[t] Chat (3)"), "the unread badge")
    }

    func testSpotlightSidebarAndPictureInPicture() {
        var m = model(count: 4)
        m.tiles[2].isPinned = true
        m.layout = .spotlight
        let spot = CallScreenRenderer.render(m, width: 100, height: 30)
        XCTAssertTrue(spot.text.contains("◆ pinned"))
        XCTAssertTrue(spot.lines[1].hasPrefix("┌ GH ─"), "the main tile is first: \(spot.lines[1])")
        m.layout = .sidebar
        let side = CallScreenRenderer.render(m, width: 100, height: 30)
        XCTAssertTrue(side.lines[1].hasPrefix("┌ GH ─"))
        XCTAssertTrue(side.text.contains("Ada Lovelace"), "others in the side column")
        m.localPinPID = "pid-u3"
        XCTAssertTrue(CallScreenRenderer.render(m, width: 100, height: 30).lines[1].hasPrefix("┌ AT ─"), "your own pin wins in your view")
        m.pictureInPicture = true
        let pip = CallScreenRenderer.render(m, width: 100, height: 30)
        XCTAssertTrue(pip.text.contains("PiP · Standup"))
        XCTAssertTrue(pip.text.contains("4 in call"))
        XCTAssertFalse(pip.text.contains("Event log"), "compact: nothing else")
    }

    /// Someone sharing their screen as their video (a browser's share) is shown large, after
    /// the pins; a presenter whose share is a terminal (drawn as text) or whose video is off is not.
    func testAScreenSharedAsVideoTakesTheSpotlight() {
        var m = model(count: 4)
        m.layout = .spotlight
        m.dominantPID = "pid-u1"
        XCTAssertTrue(CallScreenRenderer.render(m, width: 100, height: 30).lines[1].hasPrefix("┌ AL ─"), "the dominant speaker first")
        m.tiles[3].isPresenting = true
        XCTAssertEqual(m.mainTile?.pid, "pid-u3")
        XCTAssertTrue(CallScreenRenderer.render(m, width: 100, height: 30).lines[1].hasPrefix("┌ AT ─"), "the presenter's screen first")
        m.tiles[3].isVideoPaused = true
        XCTAssertEqual(m.mainTile?.pid, "pid-u1", "no video: nothing of theirs to show large")
        m.tiles[3].isVideoPaused = false
        m.screens["pid-u3"] = TerminalGrid(columns: 10, rows: 2)
        XCTAssertEqual(m.mainTile?.pid, "pid-u1", "a shared terminal is drawn as text, not in the tile")
        m.screens = [:]
        m.tiles[2].isPinned = true
        XCTAssertEqual(m.mainTile?.pid, "pid-u2", "the room's pin wins")
        m.tiles[2].isPinned = false
        m.tiles[0].isPresenting = true
        m.tiles[3].isPresenting = false
        XCTAssertEqual(m.mainTile?.pid, "pid-u1", "your own share is not what you need to see large")
    }

    func testBadgesHaveDistinctGlyphsAndColours() {
        var m = model(count: 4)
        m.tiles[1].raisedHandAt = 200
        m.tiles[0].raisedHandAt = 100
        m.tiles[3].isPresenting = true
        m.dominantPID = m.tiles[1].pid
        _ = m.updateLevels(["pid-u1": -10])
        XCTAssertEqual(m.handOrder(of: m.tiles[0]), 1)
        XCTAssertEqual(m.handOrder(of: m.tiles[1]), 2)
        XCTAssertTrue(m.updateQuality(["pid-u3": .poor]))
        let b = CallScreenRenderer.render(m, width: 140, height: 34)
        func style(of text: String) -> CellStyle? {
            for y in 0..<b.height { if let x = b.column(of: text, row: y) { return b[x, y].style } }
            return nil
        }
        let hand = style(of: "▲ hand 1"), speaking = style(of: "♪ speaking"), muted = style(of: "✖ muted"), net = style(of: "▂   net poor")
        XCTAssertEqual(hand?.fg, .magenta)
        XCTAssertEqual(speaking?.fg, .green)
        XCTAssertEqual(muted?.fg, .red)
        XCTAssertEqual(net?.fg, .red, b.text)
        XCTAssertTrue(b.text.contains("▣ sharing"))
        XCTAssertTrue(b.lines[0].contains("▲ you, Ada Lovelace"), "the hand queue in the header, in order: \(b.lines[0])")
    }

    func testDominantIsNeverAMutedParticipant() {
        var m = model(count: 3)
        var grace = participant("u2", "Grace Hopper", muted: true)
        grace.pid = "pid-u2"
        m.apply(.dominantSpeakerChanged(participant: grace), localPID: "pid-you")
        XCTAssertNil(m.dominantPID, "Grace is muted")
        var ada = participant("u1", "Ada Lovelace")
        m.apply(.dominantSpeakerChanged(participant: ada), localPID: "pid-you")
        XCTAssertEqual(m.dominantPID, "pid-u1")
        ada.isAudioMuted = true
        m.apply(.participantAudioMuted(participant: ada), localPID: "pid-you")
        XCTAssertNil(m.dominantPID, "muting ends dominance")
    }

    func testYourCamOffShowsAtOnce() {
        var m = model(count: 2)
        m.apply(.videoPaused, localPID: "pid-you")
        XCTAssertTrue(m.you?.isVideoPaused == true)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 30).text.contains("▨ cam off"))
    }

    func testParticipantListScrollsToTheSelection() {
        var m = Fixture.model(count: 8)
        m.participantListVisible = true
        m.participantSelection = 7
        let b = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertTrue(b.text.contains("› Katherine Johnson"), b.text)
        XCTAssertTrue(b.text.contains("↑ "), "says how many are above")
        XCTAssertTrue(b.text.contains("on Katherine Johnson: m mute"), "the keys say whom they act on")
    }

    func testParticipantListSearchAndSelection() throws {
        var m = model(count: 4)
        m.participantListVisible = true
        m.participantSearch = "ho"
        XCTAssertEqual(m.listedTiles.map(\.name), ["Grace Hopper"])
        XCTAssertEqual(m.selectedTile?.name, "Grace Hopper")
        var b = CallScreenRenderer.render(m, width: 120, height: 30)
        XCTAssertTrue(b.text.contains("Participants (4) · /ho"))
        XCTAssertFalse(b.text.contains("› Alan Turing"))
        let row = try XCTUnwrap(b.lines.firstIndex { $0.contains("› Grace Hopper") })
        let col = try XCTUnwrap(b.column(of: "› Grace Hopper", row: row))
        XCTAssertTrue(b[col, row].style.reverse, "the selected row is highlighted")
        m.participantSearch = "zzz"
        b = CallScreenRenderer.render(m, width: 120, height: 30)
        XCTAssertTrue(b.text.contains("no match"))
        XCTAssertNil(m.selectedTile)
    }

    func testEventsDriveTheModel() {
        var m = model(count: 2)
        var ada = participant("u1", "Ada Lovelace")
        ada.raisedHandTimestamp = 5
        m.apply(.participantHandRaised(participant: ada), localPID: "pid-you")
        XCTAssertEqual(m.tiles[1].raisedHandAt, 5)
        m.apply(.callLayoutChanged(layoutType: .sidebar), localPID: "pid-you")
        XCTAssertEqual(m.layout, .sidebar)
        m.apply(.pictureInPictureLayoutEnabled, localPID: "pid-you")
        XCTAssertTrue(m.pictureInPicture)
        m.apply(.participantListVisible, localPID: "pid-you")
        XCTAssertTrue(m.participantListVisible)
        m.apply(.dominantSpeakerChanged(participant: ada), localPID: "pid-you")
        XCTAssertEqual(m.dominantPID, "pid-u1")
        m.apply(.videoPaused, localPID: "pid-you")
        XCTAssertTrue(m.isVideoPaused)
        m.apply(.error(code: "ERR_NOT_MODERATOR", message: "Only the session's moderators may do that."), localPID: "pid-you")
        XCTAssertEqual(m.toasts.last?.kind, .error)
    }

    func testNoticesWrapAndNoneIsLost() {
        var m = model(count: 2)
        let a = "no playback device alsa:default (No such file or directory): audio is not played"
        let c = "no capture device alsa:default (No such file or directory): sending silence"
        m.apply(.audioNotice(a), localPID: "pid-you")
        m.apply(.audioNotice(c), localPID: "pid-you")
        XCTAssertEqual(m.notices, [a, c], "a later notice does not replace an earlier one")
        let wide = CallScreenRenderer.render(m, width: 80, height: 24).text.replacingOccurrences(of: "\n", with: " ")
        XCTAssertTrue(wide.contains("audio is not   played") || wide.contains("audio is not played"), wide)
        XCTAssertTrue(wide.contains("sending silence"))
        let narrow = CallScreenRenderer.render(m, width: 40, height: 12).text
        XCTAssertTrue(narrow.contains("(+1 in the log)"), narrow)
    }

    func testTheServersRecordingShowsInTheHeaderUnlessHidden() {
        var m = model(count: 2)
        XCTAssertFalse(CallScreenRenderer.render(m, width: 80, height: 24).lines[0].contains("REC"))
        m.apply(.recordingStarted, localPID: nil)
        XCTAssertTrue(m.isRecording)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 80, height: 24).lines[0].contains("REC"), "the server records: the header says so")
        XCTAssertTrue(CallScreenRenderer.render(m, width: 40, height: 12).lines[0].contains("REC"), "at 40x12 too")
        m.settings.hideRecordingStatusIndicator = true
        XCTAssertFalse(CallScreenRenderer.render(m, width: 80, height: 24).lines[0].contains("REC"), "hideRecordingStatusIndicator")
        m.settings.hideRecordingStatusIndicator = false
        m.apply(.recordingStopped, localPID: nil)
        XCTAssertFalse(CallScreenRenderer.render(m, width: 80, height: 24).lines[0].contains("REC"))
    }

    func testToastsShowOverPanels() {
        var m = model(count: 2)
        m.participantListVisible = true
        m.now = Date()
        m.toast("ERR_FEATURE_UNAVAILABLE: Recording is not available on this server.", kind: .error)
        let s = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertTrue(s.lines[22].contains("ERR_FEATURE_UNAVAILABLE"), "just above the bar, over the list:\n\(s.text)")
        m.now = m.now.addingTimeInterval(10)
        XCTAssertTrue(m.expireToasts())
        XCTAssertFalse(CallScreenRenderer.render(m, width: 80, height: 24).text.contains("ERR_FEATURE"))
    }

    func testHelpListsEveryKeyWrappedAndScrollable() {
        var m = model()
        m.overlay = .help
        let lines = OverlayRenderer.helpLines(width: 78, glyphs: .unicode)
        let all = lines.joined(separator: "\n")
        for key in ["m ", "v ", "c ", "h ", "y ", "[ ]", "p ", "t ", "s ", "r ", "w ", "o ", "i ", "l, q", "Ctrl-C", "PgUp PgDn", "Home End",
                    "Enter", "/ ", "f ", "u ", "n ", "x ", "e ", "click", "wheel", "P "] {
            XCTAssertTrue(all.contains("  " + key), "help lists '\(key)'")
        }
        XCTAssertTrue(lines.allSatisfy { DisplayWidth.of($0) <= 78 })
        let s = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertTrue(s.text.contains("Keys · Esc or ? closes"))
        XCTAssertTrue(s.text.contains("PgUp PgDn"), "says it scrolls")
        m.overlayScroll = 30
        XCTAssertNotEqual(CallScreenRenderer.render(m, width: 80, height: 24).text, s.text, "scrolled")
        let wide = CallScreenRenderer.render({ var x = m; x.overlayScroll = 0; return x }(), width: 120, height: 40).text
        XCTAssertFalse(wide.contains("leav\n"), "no line cut mid-word")
    }

    func testWideCharactersAreMeasuredInCells() {
        XCTAssertEqual(DisplayWidth.of("王小明 🎧"), 9)
        XCTAssertEqual(DisplayWidth.of("café"), 4)
        XCTAssertEqual(DisplayWidth.of("e\u{301}"), 1, "a combining accent adds nothing")
        XCTAssertEqual(DisplayWidth.truncate("王小明王小明", to: 7), "王小明…")
        var b = ScreenBuffer(width: 10, height: 1)
        b.put("王小明 🎧 ok", x: 0, y: 0)
        XCTAssertEqual(b.lines[0], "王小明 🎧…", "ellipsis, never a half character")
        XCTAssertEqual(DisplayWidth.of(b.lines[0]), 10)
        var m = Fixture.model(count: 3, names: ["王小明 🎧", "Ada Lovelace", "Grace Hopper"])
        m.apply(.participantJoined(participant: participant("u7", "王小明 🎧 李")), localPID: "pid-you")
        for (w, h) in [(120, 40), (80, 24), (40, 12)] {
            let s = CallScreenRenderer.render(m, width: w, height: h)
            for line in s.lines { XCTAssertEqual(DisplayWidth.of(line), w, "every row is exactly \(w) cells: '\(line)'") }
        }
    }

    /// A name carrying a terminal escape (a participant's own choice) never reaches the terminal
    /// as one: the cell shows a replacement character, in a UTF-8 locale and in LANG=C.
    func testControlCharactersAreNeverWrittenToTheTerminal() {
        for unicode in [true, false] {
            var b = ScreenBuffer(width: 30, height: 1, unicode: unicode)
            b.put("Mal\u{1B}]52;c;cm0gLXJm\u{07}ory é", x: 0, y: 0)
            let line = b.lines[0]
            XCTAssertFalse(line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "no control character: \(line.debugDescription)")
            XCTAssertTrue(line.hasPrefix(unicode ? "Mal\u{FFFD}]52;c;" : "Mal?]52;c;"), line.debugDescription)
        }
        var m = Fixture.model(count: 2, names: ["Ada Lovelace", "Grace Hopper"])
        m.apply(.participantJoined(participant: participant("u9", "Eve\u{1B}[2J\u{1B}[H")), localPID: "pid-you")
        let s = CallScreenRenderer.render(m, width: 80, height: 24)
        XCTAssertFalse(s.lines.joined().unicodeScalars.contains { $0.value == 0x1B }, "the call screen prints no ESC from a name")
    }

    func testWordAwareWrapping() {
        XCTAssertEqual(TextWrap.wrap("12:00:00.000 Media.onAudioMuted", width: 40, indent: 13), ["12:00:00.000 Media.onAudioMuted"])
        let w = TextWrap.wrap("12:00:00.000 ParticipantEvent.onParticipantJoined Hedy Lamarr (u9)", width: 40, indent: 13)
        XCTAssertTrue(w.allSatisfy { DisplayWidth.of($0) <= 40 })
        XCTAssertTrue(w.dropFirst().allSatisfy { $0.hasPrefix("             ") })
        XCTAssertFalse(w.contains { $0.hasSuffix("Cha") }, "no break inside a word part")
        XCTAssertEqual(w.joined().filter { $0 != " " }, "12:00:00.000 ParticipantEvent.onParticipantJoined Hedy Lamarr (u9)".filter { $0 != " " })
        XCTAssertEqual(TextWrap.wrap("hello wonderful world", width: 12), ["hello", "wonderful", "world"])
        // A line's own indentation stays on its first line when it wraps (the call summary's rows).
        XCTAssertEqual(TextWrap.wrap("  events 5: SessionStatus 2, ButtonClick 1", width: 32, indent: 18),
                       ["  events 5: SessionStatus 2,", "                  ButtonClick 1"])
        XCTAssertEqual(TextWrap.wrap("  supercalifragilistic", width: 12), ["supercalifra", "gilistic"], "no room after it: dropped")
        // The ASCII fast path breaks exactly where the general one does.
        var rng = SystemRandomNumberGenerator()
        let words = ["a", "to", "Ada", "Lovelace", "(u9)", "ParticipantEvent.onParticipantListChanged", "12:00:00.000", "onDominantSpeakerChanged",
                     "x", "supercalifragilisticexpialidocious", "SessionStatus.onSessionJoined"]
        for _ in 0..<300 {
            let text = String(repeating: " ", count: Int.random(in: 0...3, using: &rng))
                + (0..<Int.random(in: 1...12, using: &rng)).map { _ in words.randomElement(using: &rng)! }.joined(separator: " ")
            for width in [10, 16, 24, 40, 46] {
                XCTAssertEqual(TextWrap.wrap(text, width: width, indent: 13), TextWrap.wrap(text, width: width, indent: 13, fastPaths: false),
                               "'\(text)' at \(width)")
            }
        }
    }

    /// Golden screens: every layout and panel at 120×40, 80×24, 60×16 and 40×12, the too-small
    /// screen, UTF-8 and ASCII, with wide-character names.
    func testGoldenScreens() throws {
        var cases: [(String, CallViewModel, Int, Int, Bool)] = []
        func base(_ count: Int = 5) -> CallViewModel {
            var m = Fixture.model(count: count, names: ["You", "Ada Lovelace", "王小明 🎧", "Alan Turing", "Grace Hopper", "Claude Shannon"])
            m.tiles[1].raisedHandAt = 1
            m.dominantPID = m.tiles[1].pid
            m.tiles[1].level = -12
            m.tiles[1].levelHistory = (0..<40).map { Float(-60 + ($0 * 7) % 50) }
            if m.tiles.count > 3 { m.tiles[3].quality = .fair }
            let t = Date(timeIntervalSince1970: 3600)
            m.apply(.participantJoined(participant: Fixture.participant("u4", "Grace Hopper")), localPID: "pid-you", at: t)
            m.apply(.dominantSpeakerChanged(participant: Fixture.participant("u1", "Ada Lovelace")), localPID: "pid-you", at: t)
            m.apply(.audioNotice("no capture device alsa:default (No such file or directory): sending silence"), localPID: "pid-you", at: t)
            return m
        }
        let sizes = [(120, 40), (80, 24), (60, 16), (40, 12)]
        for layout in LayoutType.allCases {
            for (w, h) in sizes {
                var m = base()
                m.layout = layout
                cases.append(("\(layout.rawValue)-\(w)x\(h)", m, w, h, true))
            }
        }
        for (w, h) in sizes {
            var people = base(6); people.participantListVisible = true; people.participantSelection = 2
            cases.append(("people-\(w)x\(h)", people, w, h, true))
            var help = base(); help.overlay = .help
            cases.append(("help-\(w)x\(h)", help, w, h, true))
            var ascii = base(); ascii.layout = .tile
            cases.append(("tile-ascii-\(w)x\(h)", ascii, w, h, false))
        }
        for layout in [LayoutType.spotlight, .sidebar] {
            var m = base(); m.layout = layout
            cases.append(("\(layout.rawValue)-ascii-80x24", m, 80, 24, false))
        }
        var asciiPeople = base(6); asciiPeople.participantListVisible = true; asciiPeople.now = Date(timeIntervalSince1970: 3600)
        asciiPeople.toast("Muting Ada Lovelace…")
        cases.append(("people-ascii-80x24", asciiPeople, 80, 24, false))
        var asciiHelp = base(); asciiHelp.overlay = .help
        cases.append(("help-ascii-80x24", asciiHelp, 80, 24, false))
        var chat = base()
        chat.panel = .chat
        chat.apply(.chatMessage(ChatEntry(id: 1, pid: "pid-u1", uid: "u1", name: "Ada Lovelace", text: "café ü — 你好", sentAt: 0)), localPID: "pid-you",
                   at: Date(timeIntervalSince1970: 3600))
        chat.chatDraft = "typing 王"
        cases.append(("chat-80x24", chat, 80, 24, true))
        var stats = base(); stats.overlay = .stats
        stats.receiveStats = ["pid-u1": ReceiveStatistics(packetsReceived: 1000, packetsLost: 50, bytesReceived: 80_000, jitterMs: 4.5, concealed: 3, recovered: 40, late: 1, recentLossPercent: 5)]
        stats.bitrates = ["pid-u1": 32.1]
        stats.roundTripMs = 1.25
        cases.append(("stats-80x24", stats, 80, 24, true))
        var audio = base(); audio.panel = .settings
        audio.audioModes = [.speaker, .headphones]
        audio.captureDevices = ["default — Default ALSA device"]
        audio.playbackDevices = ["default — Default ALSA device", "headphones — Test Headphones"]
        audio.audioInput = "tone:440"; audio.audioOutput = "alsa:default"; audio.settingsSelection = 4
        audio.tiles[0].level = -20
        cases.append(("audio-settings-80x24", audio, 80, 24, true))
        cases.append(("audio-settings-120x40", audio, 120, 40, true))
        var counts = base(); counts.panel = .counts
        cases.append(("counts-80x24", counts, 80, 24, true))
        var leave = base(); leave.pending = .leave
        cases.append(("leave-confirm-80x24", leave, 80, 24, true))
        var pip = base(); pip.pictureInPicture = true
        cases.append(("pip-100x24", pip, 100, 24, true))
        var hidden = base(2)
        hidden.settings = SessionSettingsBuilder().hideToggleVideoButton(true).hideSwitchCameraButton(true).hideRaiseHandButton(true)
            .hideChangeLayoutButton(true).hideSessionTimer(true).build()
        cases.append(("hidden-buttons-80x20", hidden, 80, 20, true))
        var waiting = base(2); waiting.roomLocked = true; waiting.lobby = [.init(id: "w1", name: "Grace"), .init(id: "w2", name: "Linus")]
        cases.append(("lobby-locked-120x40", waiting, 120, 40, true))
        cases.append(("lobby-40x12", waiting, 40, 12, false))
        cases.append(("too-small-20x8", base(), 20, 8, true))
        cases.append(("too-small-ascii-30x8", base(), 30, 8, false))
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
        var names: Set<String> = []
        for (name, m, w, h, unicode) in cases {
            names.insert(name + ".txt")
            let screen = CallScreenRenderer.render(m, width: w, height: h, unicode: unicode).text
            let path = dir.appendingPathComponent("\(name).txt").path
            if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" { try screen.write(toFile: path, atomically: true, encoding: .utf8) }
            let golden = try String(contentsOfFile: path, encoding: .utf8)
            XCTAssertEqual(screen, golden, "\(name) differs from its golden file; rerun with UPDATE_GOLDEN=1 if intended")
        }
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            for f in try FileManager.default.contentsOfDirectory(atPath: dir.path) where !names.contains(f) { try FileManager.default.removeItem(atPath: dir.appendingPathComponent(f).path) }
        }
    }
}

extension CallScreenRendererTests {
    func testCaptionsShowOverTheTilesWhileTheServerTranscribes() {
        var m = model(count: 2)
        m.now = Date()
        let pid = m.tiles[1].pid
        func caption(_ text: String, final: Bool, id: Int = 1) -> CallEvent {
            .captionReceived(Caption(tid: "tr_1", pid: pid, uid: "u", name: "Grace", id: id, text: text, final: final, start: 0, end: 900))
        }
        // Only the tiles' rows: the event log (below them at these widths) lists captions too.
        func overTiles(_ w: Int, _ h: Int) -> String {
            let r = CallScreenRenderer.layout(for: m, width: w, height: h).tiles
            return CallScreenRenderer.render(m, width: w, height: h).lines[r.y..<r.maxY].joined(separator: "\n")
        }
        m.apply(caption("before anyone asked", final: true), localPID: nil)
        XCTAssertFalse(overTiles(80, 24).contains("before anyone"), "no transcription: no captions")
        m.apply(.transcriptionStarted(language: "en-US"), localPID: nil, at: m.now)
        m.apply(caption("the compiler pass", final: false), localPID: nil, at: m.now)
        let s = CallScreenRenderer.render(m, width: 80, height: 24)
        let tiles = CallScreenRenderer.layout(for: m, width: 80, height: 24).tiles
        XCTAssertTrue(s.lines[tiles.maxY - 2].contains("Grace: the compiler pass"), "just above the tiles' bottom border:\n\(s.text)")
        m.apply(caption("the compiler passes every test now", final: true), localPID: nil, at: m.now)
        XCTAssertTrue(overTiles(80, 24).contains("Grace: the compiler passes every test now"))
        XCTAssertFalse(overTiles(80, 24).contains("Grace: the compiler pass "), "the final replaced the partial")
        // A long caption shows its end (what is being said now), in a narrow terminal too; on a
        // tile area too small for both, the people stay visible (the log has the captions).
        m.apply(caption(String(repeating: "word ", count: 30) + "latest", final: false, id: 2), localPID: nil, at: m.now)
        XCTAssertTrue(overTiles(60, 24).contains("latest"))
        XCTAssertFalse(overTiles(40, 12).contains("latest"), "no captions over the tiles at 40x12")
        // The viewer turns them off (CC); a final one fades after a while.
        m.captionsHidden = true
        XCTAssertFalse(overTiles(80, 24).contains("latest"))
        m.captionsHidden = false
        // A guess the final pass did not confirm (its text empty) goes; so does its speaker's line.
        m.apply(caption("a guess", final: false, id: 2), localPID: nil, at: m.now)
        XCTAssertTrue(overTiles(80, 24).contains("Grace: a guess"))
        m.apply(caption("", final: true, id: 2), localPID: nil, at: m.now)
        XCTAssertFalse(overTiles(80, 24).contains("Grace:"), "an empty final leaves the guess on screen")
        m.apply(caption("done", final: true, id: 2), localPID: nil, at: m.now)
        m.now = m.now.addingTimeInterval(CallViewModel.captionSeconds + 1)
        XCTAssertFalse(overTiles(80, 24).contains("Grace:"), "faded")
        m.apply(.transcriptionStopped, localPID: nil)
        XCTAssertTrue(m.captions.isEmpty)
    }

    func testTheCaptionAndTranscriptionButtonsFollowTheirHideSettings() {
        var m = model(count: 2)
        func ids() -> [String] { ControlBar.specs(m, glyphs: .unicode).map(\.item.id) }
        XCTAssertFalse(ids().contains("closedCaptions"), "hidden by default, as documented")
        XCTAssertFalse(ids().contains("transcriptionToggle"))
        m.settings.hideClosedCaptionButton = false
        m.settings.hideTranscriptionButton = false
        XCTAssertTrue(ids().contains("closedCaptions") && ids().contains("transcriptionToggle"))
        XCTAssertEqual(ControlBar.specs(m, glyphs: .unicode).first { $0.item.id == "transcriptionToggle" }?.full, "Transcribe")
        m.apply(.transcriptionStarted(language: "en-US"), localPID: nil)
        XCTAssertEqual(ControlBar.specs(m, glyphs: .unicode).first { $0.item.id == "transcriptionToggle" }?.full, "Stop transcript")
        XCTAssertEqual(ControlBar.specs(m, glyphs: .unicode).first { $0.item.id == "closedCaptions" }?.full, "Captions off")
        // Every width still lays the bar out (buttons drop by priority, Leave and Help stay).
        for w in [40, 80, 120] {
            let b = ControlBar.layout(m, width: w, y: 0, glyphs: .ascii)
            XCTAssertTrue(b.contains { $0.id == "leaveSession" } && b.contains { $0.id == "help" }, "\(w): \(b.map(\.label))")
        }
    }
}

extension CallScreenRendererTests {
    func testTheLiveStreamShowsInTheHeaderAndItsButtonOnlyWhereTheServerStreams() {
        var m = model(count: 2)
        func ids() -> [String] { ControlBar.specs(m, glyphs: .unicode).map(\.item.id) }
        XCTAssertFalse(ids().contains("streamingToggle"), "a server without Icecast offers no live stream: no button")
        m.serverFeatures.insert(.streaming)
        XCTAssertTrue(ids().contains("streamingToggle"), "hideStreamingButton is false by default")
        m.settings.hideStreamingButton = true
        XCTAssertFalse(ids().contains("streamingToggle"))
        m.apply(.streamingStarted, localPID: nil)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 80, height: 24).lines[0].contains("LIVE"))
        m.apply(.streamingReconnecting(reason: "connection reset"), localPID: nil)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).lines[0].contains("LIVE reconnecting"))
        m.settings.hideStreamingStatusIndicator = true
        XCTAssertFalse(CallScreenRenderer.render(m, width: 120, height: 40).lines[0].contains("LIVE"), "hideStreamingStatusIndicator")
        m.settings.hideStreamingStatusIndicator = false
        m.apply(.streamingStopped, localPID: nil)
        XCTAssertFalse(CallScreenRenderer.render(m, width: 80, height: 24).lines[0].contains("LIVE"))
    }
}

extension CallScreenRendererTests {
    /// The terminal-share button: on the bar by default (key d), its label says when you share,
    /// hidden by hideScreenShareButton; the picker lists the choices with digits.
    func testTheShareButtonAndItsPicker() throws {
        var m = model(count: 2)
        func spec() -> ControlBar.Spec? { ControlBar.specs(m, glyphs: .unicode).first { $0.item.id == "screenShareToggle" } }
        XCTAssertNil(spec(), "no tmux, no share button")
        m.canShareTerminal = true
        XCTAssertEqual(spec()?.key, "d")
        XCTAssertEqual(spec()?.full, "Share term")
        m.sharing = "tmux pane %3"
        XCTAssertEqual(spec()?.full, "Stop share")
        m.settings.hideScreenShareButton = true
        XCTAssertNil(spec())
        m.shareChoices = [ShareChoice(target: .newShell, label: "a new shell (new tmux window)"),
                          ShareChoice(target: .pane("%3"), label: "pane %3  window 1:tests  bash  80x24")]
        m.overlay = .sharePicker
        m.shareSelection = 1
        for (w, h) in [(120, 40), (80, 24), (40, 12)] {
            let text = CallScreenRenderer.render(m, width: w, height: h).lines.joined(separator: "\n")
            XCTAssertTrue(text.contains("1  a new shell"), "\(w)x\(h):\n\(text)")
            XCTAssertTrue(text.contains("2  pane %3"), "\(w)x\(h):\n\(text)")
            // A click on a row picks that row (the same geometry the picker is drawn with).
            let lines = CallScreenRenderer.render(m, width: w, height: h).lines
            let l = CallScreenRenderer.layout(for: m, width: w, height: h)
            let y = try XCTUnwrap(lines.firstIndex { $0.contains("2  pane %3") })
            let x = try XCTUnwrap(lines[y].range(of: "2  pane").map { lines[y].distance(from: lines[y].startIndex, to: $0.lowerBound) })
            XCTAssertEqual(OverlayRenderer.sharePickerChoice(m, area: l.tiles.union(l.panel), x: x, y: y), 1, "\(w)x\(h)")
            XCTAssertNil(OverlayRenderer.sharePickerChoice(m, area: l.tiles.union(l.panel), x: x, y: y + 1), "the hint row picks nothing")
        }
    }
}

extension CallScreenRendererTests {
    /// The audio settings panel says which playback period the call uses and how it was chosen.
    func testTheSettingsPanelShowsThePlaybackPeriod() {
        var m = model(count: 2)
        m.panel = .settings
        XCTAssertFalse(CallScreenRenderer.render(m, width: 120, height: 40).text.contains("playback period"), "nothing before playback")
        m.media = MediaReport(xruns: 0, playbackPeriodMs: 5, playbackPeriodIsAutomatic: true)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).text.contains("playback period 5 ms, auto, 0 under-runs"))
        m.media = MediaReport(xruns: 4, playbackPeriodMs: 10, playbackPeriodIsAutomatic: true)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).text.contains("playback period 10 ms, auto, 4 under-runs"))
        m.media = MediaReport(xruns: 1, playbackPeriodMs: 20, playbackPeriodIsAutomatic: false)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).text.contains("playback period 20 ms, fixed, 1 under-run"))
        // And what the network costs: our redundancy, others' frames repaired from copies.
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).text.contains("redundancy none, 0 repaired"))
        m.media = MediaReport(xruns: 0, playbackPeriodMs: 5, repaired: 17, redundancyFrames: 2)
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).text.contains("redundancy 2 frames, 17 repaired"))
    }
}
