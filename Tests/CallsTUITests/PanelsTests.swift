import CometChatCallsSDK
import Foundation
import XCTest
@testable import CallsTUI

/// The side panels as a QA engineer reads them (issue #35): chat scrollback with times, the
/// log's search on what is shown (matches highlighted), the counts per listener and callback
/// (scrolling), the audio panel's honest device list, and the connection-lost banner.
final class PanelsTests: XCTestCase {
    /// Three participants, joined through listener events (so the log and its counts have them).
    func model() -> CallViewModel {
        var m = Fixture.model(count: 3)
        let ps = [Fixture.participant("u1", "Ada Lovelace"), Fixture.participant("u2", "Grace Hopper"), Fixture.participant("u3", "Alan Turing")]
        for p in ps { m.apply(.participantJoined(participant: p), localPID: nil) }
        m.apply(.participantListChanged(participants: ps), localPID: nil)
        m.apply(.participantHandRaised(participant: ps[1]), localPID: nil)
        m.apply(.audioMuted, localPID: nil)
        return m
    }

    func testChatKeepsItsScrollbackWithTimes() {
        var m = model()
        m.panel = .chat
        for i in 1...30 {
            m.apply(.chatMessage(ChatEntry(id: Int64(i), pid: "p1", uid: "u1", name: "Ada", text: "message \(i)", sentAt: Int64(i) * 60_000)),
                    localPID: nil)
        }
        var s = CallScreenRenderer.render(m, width: 120, height: 24).text
        XCTAssertTrue(s.contains("00:30 Ada: message 30"), "the newest, with its time (UTC here):\n\(s)")
        XCTAssertFalse(s.contains("Ada: message 1\n") || s.contains("00:01 Ada: message 1 "), "the oldest scrolled out")
        m.chatScroll = 25
        s = CallScreenRenderer.render(m, width: 120, height: 24).text
        XCTAssertTrue(s.contains("00:01 Ada: message 1 ") || s.contains("00:01 Ada: message 1│"), "scrolled back to the first:\n\(s)")
        XCTAssertTrue(s.contains("newer lines (End)"), "and says there is more below")
        // A message arriving while you read back keeps your place.
        m.apply(.chatMessage(ChatEntry(id: 31, pid: "p1", uid: "u1", name: "Ada", text: "message 31", sentAt: 31 * 60_000)), localPID: nil)
        XCTAssertEqual(m.chatScroll, 26)
    }

    func testLogSearchMatchesWhatIsShownAndHighlightsIt() {
        var m = model()
        m.log.search = "grace"
        let b = CallScreenRenderer.render(m, width: 120, height: 40)
        let visible = m.log.visible
        XCTAssertFalse(visible.isEmpty)
        XCTAssertTrue(visible.allSatisfy { $0.line.lowercased().contains("grace") }, "only entries whose shown line matches")
        guard let row = (0..<b.height).first(where: { y in b.column(of: "Grace", row: y).map { $0 > 70 } ?? false }),
              let x = b.column(of: "Grace", row: row) else { return XCTFail("a match in the log panel:\n\(b.text)") }
        XCTAssertTrue(b[x, row].style.reverse && b[x, row].style.fg == .yellow, "the match is highlighted")
    }

    func testCountsShowListenersAndCallbacksAndScroll() {
        var m = model()
        m.panel = .counts
        let rows = EventLogRenderer.countRows(m)
        XCTAssertTrue(rows.first?.listener == true, "listeners first: \(rows)")
        XCTAssertTrue(rows.contains { !$0.listener && $0.name == "onParticipantListChanged" })
        let tall = CallScreenRenderer.render(m, width: 120, height: 40).text
        XCTAssertTrue(tall.contains("ParticipantEventListener"), tall)
        m.countsScroll = rows.count  // clamped to what fits
        let small = CallScreenRenderer.render(m, width: 80, height: 12).text
        XCTAssertTrue(small.contains(" of \(rows.count) "), "a small panel says which rows it shows:\n\(small)")
    }

    func testAudioPanelListsOneNullAndNoToneWithoutASpeaker() {
        var m = model()
        m.captureDevices = ["null — Discard all samples", "default — Default ALSA Output"]
        m.playbackDevices = ["null — Discard all samples"]
        m.audioInput = "null"
        m.audioOutput = "null"
        let choices = m.audioChoices
        XCTAssertEqual(choices.filter { if case .input(let s, _) = $0 { return s.hasSuffix("null") }; return false }.count, 1, "one null: \(choices)")
        XCTAssertFalse(choices.contains(.testTone), "no test tone without a speaker")
        m.audioOutput = "alsa:default"
        XCTAssertTrue(m.audioChoices.contains(.testTone))
    }

    func testTheConnectionLostBannerCountsTheGracePeriod() {
        var m = model()
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        m.apply(.connectionLost, localPID: nil, at: t0)
        m.reconnectGraceSeconds = 30
        m.now = t0.addingTimeInterval(12.4)
        let s = CallScreenRenderer.render(m, width: 80, height: 24).text
        XCTAssertTrue(s.contains("Connection lost — retrying, 12 s of 30"), s)
        m.apply(.connectionRestored, localPID: nil, at: m.now)
        XCTAssertFalse(CallScreenRenderer.render(m, width: 80, height: 24).text.contains("Connection lost"))
    }
}
