@testable import CallsTUI
import CometChatCallsSDK
import Foundation
import XCTest

final class CallScreenRendererTests: XCTestCase {
    func participant(_ uid: String, _ name: String, muted: Bool = false) -> Participant {
        var p = Participant(uid: uid, name: name)
        p.pid = "pid-" + uid
        p.isAudioMuted = muted
        return p
    }

    /// A model as the listener events build it.
    func model(count: Int = 3, you: String = "you") -> CallViewModel {
        var m = CallViewModel(title: "Standup")
        let names = ["You", "Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov"]
        let ps = (0..<count).map { participant($0 == 0 ? you : "u\($0)", names[$0 % names.count], muted: $0 == 2) }
        let t0 = Date(timeIntervalSince1970: 0)
        m.apply(.sessionJoined, localPID: "pid-" + you, at: t0)
        m.apply(.participantListChanged(participants: ps), localPID: "pid-" + you, at: t0)
        m.joinedAt = nil
        m.log = []
        return m
    }

    func testTilesControlBarAndHeader() {
        var m = model()
        _ = m.updateLevels(["pid-u1": -10, "pid-you": -80])
        let s = CallScreenRenderer.render(m, width: 120, height: 30).text
        XCTAssertTrue(s.contains("Standup"))
        XCTAssertTrue(s.contains("3 participants"))
        XCTAssertTrue(s.contains("You (you)"))
        XCTAssertTrue(s.contains("Ada Lovelace"))
        XCTAssertTrue(s.contains("Grace Hopper"))
        XCTAssertTrue(s.contains("MUTED"), "Grace is muted")
        XCTAssertTrue(s.contains("speaking"), "Ada is loud")
        XCTAssertTrue(s.contains("████████··"), "Ada's meter at -10 dBFS fills 8 of 10 cells")
        XCTAssertTrue(s.contains("[m] Mute"))
        XCTAssertTrue(s.contains("[l] Leave"))
        XCTAssertTrue(s.contains("Event log"))
        XCTAssertTrue(s.contains("┌ AL "), "tile titled with initials")
    }

    func testEventLogShowsEveryCallbackWithTime() {
        var m = model()
        let t = Date()
        m.apply(.participantJoined(participant: participant("u9", "Hedy Lamarr")), localPID: "pid-you", at: t)
        m.apply(.audioMuted, localPID: "pid-you", at: t)
        let s = CallScreenRenderer.render(m, width: 120, height: 30).text
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss"
        XCTAssertTrue(s.contains("\(f.string(from: t)) ParticipantEvent.onParticipantJoined"))
        XCTAssertTrue(s.contains("Hedy Lamarr (u9)"), "long entries wrap instead of being cut")
        XCTAssertTrue(s.contains("MediaEvents.onAudioMuted"))
        XCTAssertTrue(s.contains("[m] Unmute"), "the button reflects the state")
        XCTAssertTrue(s.contains("YOU ARE MUTED"))
    }

    func testNarrowTerminalPutsTheLogBelowTheTiles() {
        let m = model()
        let l = CallScreenRenderer.layout(for: m, width: 80, height: 24)
        XCTAssertEqual(l.log.width, 80)
        XCTAssertGreaterThan(l.log.y, l.tiles.y)
        let wide = CallScreenRenderer.layout(for: m, width: 120, height: 24)
        XCTAssertGreaterThan(wide.log.x, 0)
        XCTAssertEqual(wide.log.y, wide.tiles.y)
    }

    func testHiddenButtonsAndPanels() {
        var m = model()
        m.hideToggleAudioButton = true
        var s = CallScreenRenderer.render(m, width: 100, height: 30).text
        XCTAssertFalse(s.contains("[m]"))
        XCTAssertTrue(s.contains("[l] Leave"))
        m.hideControlPanel = true
        m.hideHeaderPanel = true
        s = CallScreenRenderer.render(m, width: 100, height: 30).text
        XCTAssertFalse(s.contains("[l] Leave"))
        XCTAssertFalse(s.contains("Standup"))
        XCTAssertTrue(CallScreenRenderer.layout(for: m, width: 100, height: 30).buttons.isEmpty)
    }

    func testButtonsAreClickableRegions() {
        let m = model()
        let l = CallScreenRenderer.layout(for: m, width: 100, height: 30)
        XCTAssertEqual(l.buttons.map(\.id), ["toggleAudio", "toggleVideo", "switchCamera", "raiseHand", "changeLayout",
                                              "participantList", "leaveSession"], "a video session's default bar")
        for b in l.buttons {
            XCTAssertEqual(b.rect.y, 29)
            let s = CallScreenRenderer.render(m, width: 100, height: 30)
            let text = s.lines[b.rect.y]
            let start = text.index(text.startIndex, offsetBy: b.rect.x)
            XCTAssertTrue(text[start...].hasPrefix("[\(b.key)] \(b.label)"))
        }
    }

    func testASCIIFallback() {
        let s = CallScreenRenderer.render(model(), width: 100, height: 30, unicode: false).text
        XCTAssertFalse(s.unicodeScalars.contains { !$0.isASCII }, "only ASCII without a UTF-8 locale")
        XCTAssertTrue(s.contains("+ AL "))
    }

    func testTinyTerminalsDoNotCrash() {
        for (w, h) in [(0, 0), (1, 1), (10, 3), (40, 12), (20, 40)] {
            let b = CallScreenRenderer.render(model(count: 6), width: w, height: h)
            XCTAssertEqual(b.lines.count, max(0, h))
        }
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
        XCTAssertLessThan(n, 5, "a meter change rewrites only the meter cells that changed")
    }

    func testWrapping() {
        XCTAssertEqual(CallScreenRenderer.wrap("12:00:00 Media.onAudioMuted", width: 40, indent: 9), ["12:00:00 Media.onAudioMuted"])
        let w = CallScreenRenderer.wrap("12:00:00 ParticipantEvent.onParticipantJoined Hedy Lamarr (u9)", width: 30, indent: 9)
        XCTAssertGreaterThan(w.count, 1)
        XCTAssertTrue(w.allSatisfy { $0.count <= 30 })
        XCTAssertTrue(w.dropFirst().allSatisfy { $0.hasPrefix("         ") })
        XCTAssertEqual(w.joined().filter { $0 != " " }, "12:00:00 ParticipantEvent.onParticipantJoined Hedy Lamarr (u9)".filter { $0 != " " },
                       "no character is lost")
    }

    func testEveryButtonFollowsItsHideSetting() {
        var m = model()
        m.settings = SessionSettingsBuilder().setSessionType(.voice).hideRecordingButton(false).hideChatButton(false)
            .hideShareInviteButton(false).hideRaiseHandButton(true).build()
        XCTAssertEqual(m.buttons.map(\.0), [.toggleAudio, .changeLayout, .participantList, .chat, .shareInvite, .recordingToggle, .leaveSession],
                       "voice: no video controls; hidden raise-hand; shown chat, invite and record")
        m.chatUnread = 3
        XCTAssertTrue(CallScreenRenderer.render(m, width: 130, height: 20).text.contains("[t] Chat (3)"), "the unread badge")
        // A narrow terminal drops the buttons that do not fit instead of overflowing.
        let narrow = CallScreenRenderer.layout(for: m, width: 40, height: 12)
        XCTAssertTrue(narrow.buttons.allSatisfy { $0.rect.maxX <= 40 })
        XCTAssertLessThan(narrow.buttons.count, m.buttons.count)
    }

    func testSpotlightSidebarAndPictureInPicture() {
        var m = model(count: 4)
        m.tiles[2].isPinned = true
        m.layout = .spotlight
        let spot = CallScreenRenderer.render(m, width: 100, height: 30)
        // The pinned participant gets the big tile (its box spans most of the width).
        let big = spot.lines.first { $0.contains("Grace Hopper") } ?? ""
        XCTAssertTrue(spot.text.contains("pinned"))
        XCTAssertTrue(spot.lines[1].hasPrefix("┌ GH ─"), "the main tile is first: \(spot.lines[1])")
        XCTAssertFalse(big.isEmpty)
        m.layout = .sidebar
        let side = CallScreenRenderer.render(m, width: 100, height: 30)
        XCTAssertTrue(side.lines[1].hasPrefix("┌ GH ─"))
        XCTAssertTrue(side.text.contains("Ada Lovelace"), "others in the side column")
        m.pictureInPicture = true
        let pip = CallScreenRenderer.render(m, width: 100, height: 30)
        XCTAssertTrue(pip.text.contains("PiP · Standup"))
        XCTAssertTrue(pip.text.contains("4 in call"))
        XCTAssertFalse(pip.text.contains("Event log"), "compact: nothing else")
    }

    func testBadgesHandOrderAndParticipantList() {
        var m = model(count: 3)
        m.tiles[1].raisedHandAt = 200
        m.tiles[0].raisedHandAt = 100
        m.tiles[2].isPresenting = true
        m.dominantPID = m.tiles[1].pid
        XCTAssertEqual(m.handOrder(of: m.tiles[0]), 1)
        XCTAssertEqual(m.handOrder(of: m.tiles[1]), 2)
        XCTAssertNil(m.handOrder(of: m.tiles[2]))
        let s = CallScreenRenderer.render(m, width: 120, height: 30).text
        XCTAssertTrue(s.contains("hand #1"))
        XCTAssertTrue(s.contains("hand #2 · dominant"))
        XCTAssertTrue(s.contains("sharing"))
        XCTAssertTrue(m.updateQuality(["pid-u2": .poor]))
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 30).text.contains("net poor"), "connection quality on the tile")
        m.participantListVisible = true
        let list = CallScreenRenderer.render(m, width: 120, height: 30).text
        XCTAssertTrue(list.contains("Participants (3)"))
        XCTAssertTrue(list.contains("Grace Hopper — muted · sharing"))
        XCTAssertFalse(list.contains("Event log"), "the list takes the log's place")
    }

    func testParticipantListSearchAndSelection() {
        var m = model(count: 4)
        m.participantListVisible = true
        m.participantSearch = "ho"
        XCTAssertEqual(m.listedTiles.map(\.name), ["Grace Hopper"])
        XCTAssertEqual(m.selectedTile?.name, "Grace Hopper")
        var b = CallScreenRenderer.render(m, width: 120, height: 30)
        XCTAssertTrue(b.text.contains("Participants (4) · /ho"))
        XCTAssertFalse(b.text.contains("Alan Turing — "))
        let row = try! XCTUnwrap(b.lines.firstIndex { $0.contains("Grace Hopper — ") })
        let col = b.lines[row].distance(from: b.lines[row].startIndex, to: try! XCTUnwrap(b.lines[row].range(of: "Grace Hopper — ")).lowerBound)
        XCTAssertTrue(b[col, row].style.reverse, "the selected row is highlighted")
        m.participantSearch = "zzz"
        b = CallScreenRenderer.render(m, width: 120, height: 30)
        XCTAssertTrue(b.text.contains("no match"))
        XCTAssertNil(m.selectedTile)
    }

    func testEventsDriveTheModel() {
        var m = model(count: 2)
        var ada = participant("u1", "Ada Lovelace")
        ada.pid = "pid-u1"
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
    }

    /// Golden screens: every layout at several sizes (down to 40×12), and the bar with buttons hidden.
    func testGoldenScreensForEveryLayoutAndSize() throws {
        var cases: [(String, CallViewModel, Int, Int)] = []
        for layout in LayoutType.allCases {
            for (w, h) in [(100, 24), (60, 16), (40, 12)] {
                var m = model(count: 4)
                m.layout = layout
                m.tiles[1].raisedHandAt = 1
                m.dominantPID = m.tiles[1].pid
                cases.append(("\(layout.rawValue)-\(w)x\(h)", m, w, h))
            }
        }
        var pip = model(count: 4)
        pip.pictureInPicture = true
        cases.append(("pip-100x24", pip, 100, 24))
        var hidden = model(count: 2)
        hidden.settings = SessionSettingsBuilder().hideToggleVideoButton(true).hideSwitchCameraButton(true).hideRaiseHandButton(true)
            .hideChangeLayoutButton(true).hideSessionTimer(true).build()
        cases.append(("hidden-buttons-80x20", hidden, 80, 20))
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
        for (name, m, w, h) in cases {
            let screen = CallScreenRenderer.render(m, width: w, height: h).text
            let path = dir.appendingPathComponent("\(name).txt").path
            if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" { try screen.write(toFile: path, atomically: true, encoding: .utf8) }
            let golden = try String(contentsOfFile: path, encoding: .utf8)
            XCTAssertEqual(screen, golden, "\(name) differs from its golden file; rerun with UPDATE_GOLDEN=1 if intended")
        }
    }

    func testGoldenScreen() throws {
        let screen = CallScreenRenderer.render(model(count: 4), width: 100, height: 24).text
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/tile-4-100x24.txt").path
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try screen.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(screen, golden, "rendered screen differs from \(path); rerun with UPDATE_GOLDEN=1 if intended")
    }
}
