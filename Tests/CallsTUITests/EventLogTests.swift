@testable import CallsTUI
import CometChatCallsSDK
import Foundation
import XCTest

final class EventLogTests: XCTestCase {
    func joined(_ name: String, _ uid: String) -> CallEvent { .participantJoined(participant: Fixture.participant(uid, name)) }

    func testScrolledViewStaysPutAsEventsArriveWithANewMarker() {
        var m = Fixture.model(count: 2)
        for i in 0..<30 { m.apply(joined("P\(i)", "u\(i)"), localPID: "pid-you") }
        m.log.scroll(by: -10)
        let anchored = m.log.selected?.seq
        XCTAssertEqual(anchored, 20)
        let screen1 = CallScreenRenderer.render(m, width: 120, height: 30).lines.dropFirst(2).dropLast().map { String($0.suffix(48)) }
        for i in 30..<35 { m.apply(joined("P\(i)", "u\(i)"), localPID: "pid-you") }
        XCTAssertEqual(m.log.selected?.seq, anchored, "the anchor does not move")
        XCTAssertEqual(m.log.newBelow, 15)
        let s = CallScreenRenderer.render(m, width: 120, height: 30)
        XCTAssertTrue(s.text.contains("15 new ↓"), s.text)
        let screen2 = s.lines.dropFirst(2).dropLast().map { String($0.suffix(48)) }
        XCTAssertEqual(Array(screen1.dropLast(2)), Array(screen2.dropLast(2)), "the entries on screen stay where they were")
        m.log.scrollToNewest()
        XCTAssertEqual(m.log.newBelow, 0)
        XCTAssertFalse(CallScreenRenderer.render(m, width: 120, height: 30).text.contains("new ↓"))
    }

    func testHomeEndAndPaging() {
        var log = EventLog()
        for i in 0..<50 { log.append(.audioMuted, at: Date(timeIntervalSince1970: Double(i))) }
        log.scrollToOldest(rows: 10)
        XCTAssertEqual(log.selected?.seq, 10)
        log.scroll(by: -100)
        XCTAssertEqual(log.selected?.seq, 1)
        log.scroll(by: 20)
        XCTAssertEqual(log.selected?.seq, 21)
        log.scroll(by: 100)
        XCTAssertNil(log.anchor, "reaching the newest follows it again")
        XCTAssertEqual(log.selected?.seq, 50)
    }

    func testFiltersSearchAndCounts() {
        var m = Fixture.model(count: 3)
        m.apply(joined("Hedy Lamarr", "u9"), localPID: "pid-you")
        m.apply(.audioMuted, localPID: "pid-you")
        m.apply(.participantHandRaised(participant: Fixture.participant("u1", "Ada Lovelace")), localPID: "pid-you")
        m.apply(.participantHandLowered(participant: Fixture.participant("u1", "Ada Lovelace")), localPID: "pid-you")
        m.log.listenerFilter = "MediaEventsListener"
        XCTAssertEqual(m.log.visible.map(\.event), ["onAudioMuted"])
        m.log.listenerFilter = nil
        m.log.participantFilter = "u1"
        XCTAssertEqual(m.log.visible.map(\.event), ["onParticipantHandRaised", "onParticipantHandLowered"])
        m.log.participantFilter = nil
        m.log.search = "hedy"
        XCTAssertEqual(m.log.visible.map(\.event), ["onParticipantJoined"])
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 30).text.contains("Event log · /hedy · 1/4"))
        m.log.search = ""
        XCTAssertEqual(m.log.counts["onParticipantHandRaised"], 1)
        XCTAssertEqual(m.log.countsByListener["ParticipantEventListener"], 3)
        m.panel = .counts
        let s = CallScreenRenderer.render(m, width: 120, height: 30).text
        XCTAssertTrue(s.contains("Event counts · 4 events"))
        XCTAssertTrue(s.contains("onParticipantHandLowered"))
    }

    func testPayloadIsTheEventLogJSON() throws {
        var m = Fixture.model(count: 2)
        m.apply(joined("Hedy Lamarr", "u9"), localPID: "pid-you", at: Date(timeIntervalSince1970: 0))
        let e = try XCTUnwrap(m.log.selected)
        XCTAssertEqual(e.json, CallEvent.participantJoined(participant: Fixture.participant("u9", "Hedy Lamarr")).jsonLine(at: Date(timeIntervalSince1970: 0)))
        m.overlay = .payload(seq: e.seq)
        let s = CallScreenRenderer.render(m, width: 80, height: 24).text
        XCTAssertTrue(s.contains("ParticipantEvent.onParticipantJoined · Esc closes"))
        XCTAssertTrue(s.contains("\"name\" : \"Hedy Lamarr\""), s)
        XCTAssertTrue(s.contains("\"pid\" : \"pid-u9\""))
    }

    func testSummaryCountsTheCall() {
        var m = Fixture.model(count: 3)
        m.joinedAt = Date(timeIntervalSince1970: 0)
        m.apply(.connectionLost, localPID: "pid-you", at: Date(timeIntervalSince1970: 10))
        m.apply(.connectionRestored, localPID: "pid-you", at: Date(timeIntervalSince1970: 11))
        m.media = MediaReport(framesCaptured: 100, packetsSent: 95, packetsReceived: 180, impairedDrops: 0, played: 170, recovered: 5, concealed: 2,
                              late: 1, overflowDropped: 0, lost: 20, xruns: 0, deviceFailures: 0)
        m.media?.delayed = 2
        // Everyone heard counts, a sender who left and the call's end (an empty last reading) too.
        m.heardStats = ["pid-u1": ReceiveStatistics(jitterMs: 2), "pid-u2": ReceiveStatistics(jitterMs: 6)]
        m.receiveStats = [:]
        m.apply(.sessionLeft, localPID: "pid-you", at: Date(timeIntervalSince1970: 125))
        let lines = CallSummary(m).lines.joined(separator: "\n")
        XCTAssertTrue(lines.contains("duration        0:02:05"), lines)
        XCTAssertTrue(lines.contains("participants    3: Ada Lovelace, Grace Hopper, You"))
        XCTAssertTrue(lines.contains("SessionStatus 3"))
        XCTAssertTrue(lines.contains("sent 95, received 180"))
        XCTAssertTrue(lines.contains("loss            10.0 %"))
        XCTAssertTrue(lines.contains("held up         2 of those: packets delayed on their way"), lines)
        XCTAssertTrue(lines.contains("reconnects      1"))
        XCTAssertTrue(lines.contains("jitter          4.0 ms mean, 6.0 ms worst (2 senders)"), lines)
        m.overlay = .summary
        XCTAssertTrue(CallScreenRenderer.render(m, width: 80, height: 24).text.contains("Press any key to exit."))
        // The summary's box says how the call ended, whoever ended it.
        for (ending, said) in [(SessionEnding.left, "You left"), (.endedBy("ann"), "ann ended the call"), (.removed(by: "Grace"), "You were removed by Grace")] {
            m.ending = ending
            let top = CallScreenRenderer.render(m, width: 80, height: 24).text.split(separator: "\n").first.map(String.init) ?? ""
            XCTAssertTrue(top.contains(said), top)
            if said != "You left" { XCTAssertFalse(top.contains("You left"), top) }
        }
    }
}

/// The controller's keys on an in-memory terminal (no session joined: actions that need one
/// report SESSION_NOT_ACTIVE through the error event, as the SDK documents).
final class CallScreenControllerInputTests: XCTestCase {
    @MainActor static func controller(_ width: Int = 100, _ height: Int = 30) -> (CallScreenController, MemoryTerminal) {
        let term = MemoryTerminal(width: width, height: height)
        let c = CallScreenController(driver: term, title: "QA")
        c.model = Fixture.model(count: 4)
        return (c, term)
    }

    func testLeaveAsksForASecondKeyAndAnyOtherKeyCancels() {
        MainActor.assumeIsolated {
            let (c, _) = Self.controller()
            var finished: Int32?
            c.summarySeconds = 0
            c.onFinished = { finished = $0 }
            c.handle(.char("l"))
            XCTAssertEqual(c.model.pending, .leave)
            XCTAssertTrue(CallScreenRenderer.render(c.model, width: 100, height: 30).text.contains("Leave?"))
            c.handle(.char("m"))
            XCTAssertNil(c.model.pending, "another key cancels")
            XCTAssertNil(finished)
            XCTAssertEqual(c.model.toasts.last?.text, "Still in the call")
            c.handle(.char("q"))
            c.handle(.char("q"))
            XCTAssertEqual(finished, 0, "the second press leaves")
        }
    }

    func testCtrlCLeavesAtOnce() {
        MainActor.assumeIsolated {
            let (c, _) = Self.controller()
            var finished: Int32?
            c.summarySeconds = 0
            c.onFinished = { finished = $0 }
            c.handle(.interrupt)
            XCTAssertEqual(finished, 0)
        }
    }

    func testClickOnLeaveTwice() throws {
        try MainActor.assumeIsolated { () throws -> Void in
            let (c, _) = Self.controller()
            var finished: Int32?
            c.summarySeconds = 0
            c.onFinished = { finished = $0 }
            let leave = try XCTUnwrap(CallScreenRenderer.layout(for: c.model, width: 100, height: 30).buttons.first { $0.id == "leaveSession" })
            c.handle(.click(x: leave.rect.x + 1, y: leave.rect.y))
            XCTAssertEqual(c.model.pending, .leave)
            XCTAssertNil(finished)
            let confirm = try XCTUnwrap(CallScreenRenderer.layout(for: c.model, width: 100, height: 30).buttons.first { $0.id == "leaveSession" })
            XCTAssertTrue(confirm.label.hasSuffix("Leave?"), "the button asks")
            c.handle(.click(x: confirm.rect.x + 1, y: confirm.rect.y))
            XCTAssertEqual(finished, 0)
        }
    }

    func testHelpButtonAndEscape() throws {
        try MainActor.assumeIsolated { () throws -> Void in
            let (c, _) = Self.controller()
            let help = try XCTUnwrap(CallScreenRenderer.layout(for: c.model, width: 100, height: 30).buttons.first { $0.id == "help" })
            c.handle(.click(x: help.rect.x, y: help.rect.y))
            XCTAssertEqual(c.model.overlay, .help)
            c.handle(.pageDown)
            XCTAssertGreaterThan(c.model.overlayScroll, 0, "help scrolls")
            c.handle(.escape)
            XCTAssertNil(c.model.overlay)
        }
    }

    func testListKeysActOnTheSelectedParticipantAndSaySo() {
        MainActor.assumeIsolated {
            let (c, _) = Self.controller()
            c.model.participantListVisible = true
            c.handle(.down)
            c.handle(.char("m"))
            XCTAssertEqual(c.model.toasts.last?.text, "Muting Ada Lovelace…", "lower-case m mutes the selection, not you")
            c.handle(.enter)
            XCTAssertEqual(c.model.localPinPID, "pid-u1", "Enter pins in your own view (no moderator needed)")
            c.handle(.char("x"))
            XCTAssertEqual(c.model.pending, .remove(pid: "pid-u1"))
            c.handle(.char("n"))
            XCTAssertNil(c.model.pending)
            XCTAssertEqual(c.model.toasts.last?.text, "Ada Lovelace stays")
        }
    }

    func testUnknownAndHiddenKeysSaySo() {
        MainActor.assumeIsolated {
            let (c, _) = Self.controller()
            c.handle(.char("r"))
            XCTAssertTrue(c.model.toasts.last?.text.contains("hidden by the session settings") == true, "\(c.model.toasts)")
            c.handle(.char("z"))
            XCTAssertEqual(c.model.toasts.last?.text, "No key 'z': ? lists every key")
        }
    }

    func testSearchFilterAndExport() throws {
        try MainActor.assumeIsolated { () throws -> Void in
            let (c, _) = Self.controller()
            c.model.apply(.participantJoined(participant: Fixture.participant("u9", "Hedy Lamarr")), localPID: "pid-you")
            c.model.apply(.audioMuted, localPID: "pid-you")
            c.handle(.char("/"))
            for s in "hedy".unicodeScalars { c.handle(.char(s)) }
            c.handle(.enter)
            XCTAssertEqual(c.model.log.visible.count, 1)
            c.handle(.enter)
            XCTAssertEqual(c.model.overlay, .payload(seq: 1))
            c.handle(.escape)
            c.handle(.char("f"))
            XCTAssertEqual(c.model.log.listenerFilter, "SessionStatusListener")
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(getpid())").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            c.exportDirectory = dir
            c.handle(.char("x"))
            let files = try FileManager.default.contentsOfDirectory(atPath: dir)
            XCTAssertEqual(files.count, 1)
            let text = try String(contentsOfFile: dir + "/" + files[0], encoding: .utf8)
            XCTAssertEqual(text.split(separator: "\n").count, 2, "the whole log, not the filtered view")
            XCTAssertTrue(text.contains("\"event\":\"onParticipantJoined\""))
            XCTAssertTrue(c.model.toasts.last?.text.contains(dir) == true, "the toast shows the path")
        }
    }

    func testPickingTheCurrentAudioModeDoesNothing() {
        MainActor.assumeIsolated {
            let (c, _) = Self.controller()
            c.handle(.char("o"))
            XCTAssertEqual(c.model.panel, .settings)
            c.handle(.char("1"))
            XCTAssertEqual(c.model.toasts.last?.text, "SPEAKER is already the audio mode")
        }
    }

    func testAudioSettingsRowsPickDevicesAndTheTestTone() {
        MainActor.assumeIsolated {
            let (c, _) = Self.controller()
            c.handle(.char("o"))
            c.model.captureDevices = ["default — Default ALSA device"]
            c.model.audioInput = "null"
            XCTAssertEqual(c.model.audioChoices.first, .mode(.speaker))
            c.handle(.down)
            c.handle(.enter)
            XCTAssertEqual(c.model.toasts.last?.text, "null (send silence) is already your microphone")
            c.model.captureDevices = ["default — Default ALSA device"]
            c.model.audioInput = "null"
            c.handle(.down)
            c.handle(.enter)
            XCTAssertEqual(c.model.toasts.last?.text, "Microphone: default — Default ALSA device")
            c.model.settingsSelection = c.model.audioChoices.count - 1
            c.handle(.enter)
            XCTAssertEqual(c.model.toasts.last?.text, "Playing a test tone (440 Hz, 1 s)")
        }
    }

    func testMouseReportsActOnceOnRelease() {
        MainActor.assumeIsolated {
            XCTAssertNil(NcursesTerminal.mouseInput(state: NcursesTerminal.MouseMask.pressed, x: 3, y: 4), "a press does nothing")
            XCTAssertEqual(NcursesTerminal.mouseInput(state: NcursesTerminal.MouseMask.released, x: 3, y: 4), .click(x: 3, y: 4))
            XCTAssertEqual(NcursesTerminal.mouseInput(state: NcursesTerminal.MouseMask.clicked, x: 3, y: 4), .click(x: 3, y: 4))
        }
    }
}
