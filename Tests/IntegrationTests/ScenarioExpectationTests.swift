import CallRoomTestSupport
import CometChatCallsSDK
import Foundation
import XCTest
@testable import CallroomKit

/// Scenario assertions: `expect` lines parsed with clear errors, judged on a virtual clock (no
/// sockets, no sleeps), and a demo run as a CI test — the bundled QA scenario passes, a
/// deliberately failing one exits 7 with a readable message and a JUnit/TAP report.
final class ScenarioExpectationTests: XCTestCase {
    func participant(_ uid: String, hand: Bool = false, muted: Bool = false) -> Participant {
        var p = Participant()
        p.uid = uid
        p.name = uid
        p.pid = "p-" + uid
        p.raisedHandTimestamp = hand ? 1 : 0
        p.isAudioMuted = muted
        return p
    }

    func testParsingSaysWhatIsWrongAndWhere() throws {
        let good = try Scenario.parse("""
            duration 20
            at 1 2 raise-hand
            expect 0.5..3 onParticipantHandRaised from 2
            expect 1..4 onChatMessage from 1 text=Hello there
            expect at 3.5 2 hand-up
            """, name: "t")
        XCTAssertEqual(good.duration, 20)
        XCTAssertEqual(good.expectations.count, 3)
        XCTAssertEqual(good.expectations[1].kind, .event(callback: "onChatMessage", from: 1, to: 4, who: "bot-1", field: "text", value: "Hello there"))
        for (text, message) in [("expect 3..1 onSessionJoined", "t:1: a window is FROM..TO"),
                                ("expect 0..2 onHandWaved", "t:1: unknown event 'onHandWaved'"),
                                ("expect at 2 9 dancing", "t:1: unknown state 'dancing'"),
                                ("expect at 2 zed hand-up", "t:1: a participant is a bot number"),
                                ("duration -1", "t:1: duration takes")] {
            XCTAssertThrowsError(try Scenario.parse(text, name: "t"), text) { e in
                XCTAssertTrue("\(e)".hasPrefix(message), "\(text): \(e)")
            }
        }
    }

    /// The checker on a virtual clock: events inside and outside their window, a field, the
    /// participant, a state at its time, and the reasons failures give.
    func testTheCheckerJudgesOnAVirtualClock() throws {
        let s = try Scenario.parse("""
            expect 1..3 onParticipantHandRaised from 2
            expect 1..3 onChatMessage text=hi
            expect at 4 2 hand-up
            expect at 4 1 muted
            expect 5..6 onParticipantLeft from 1
            expect at 9 3 present
            """, name: "v")
        var c = ExpectationChecker(s.expectations)
        c.observe(.participantListChanged(participants: [participant("bot-1"), participant("bot-2")]), at: 0)
        c.observe(.participantHandRaised(participant: participant("bot-1", hand: true)), at: 1.5)  // the wrong bot
        c.observe(.participantHandRaised(participant: participant("bot-2", hand: true)), at: 2.0)
        c.observe(.chatMessage(ChatEntry(id: 1, pid: "p-bot-1", uid: "bot-1", name: "bot-1", text: "oh hi there", sentAt: 0)), at: 3.5)  // too late
        c.advance(to: 4)
        let outcomes = c.finish(at: 8)
        XCTAssertEqual(outcomes.map(\.passed), [true, false, true, false, false, false])
        XCTAssertEqual(outcomes[1].detail, "not seen between 1 s and 3 s (seen only at 3.5 s)")
        XCTAssertEqual(outcomes[3].detail, "at 4 s bot 1 was unmuted")
        XCTAssertEqual(outcomes[4].detail, "not seen between 5 s and 6 s (never seen)")
        XCTAssertEqual(outcomes[5].detail, "the run ended at 8 s, before its time")
        let tap = ExpectationReport.tap(outcomes, scenario: "v")
        XCTAssertTrue(tap.hasPrefix("TAP version 13\n1..6\nok 1 - v:1 1..3 onParticipantHandRaised from 2\nnot ok 2 - v:2"), tap)
        let xml = ExpectationReport.junit(outcomes, scenario: "v", seconds: 8)
        XCTAssertTrue(xml.contains(#"<testsuite name="v" tests="6" failures="4" time="8.0">"#), xml)
        XCTAssertTrue(xml.contains(#"<failure message="at 4 s bot 1 was unmuted"/>"#), xml)
    }

    /// The bundled QA scenario, headless, as CI runs it — stdin /dev/null (its end no longer
    /// ends a run with a duration: all 10 failed at 0.2 s) — exit 0 and a JUnit report of 10 passes.
    func testTheBundledQAScenarioPasses() throws {
        let tmp = TemporaryDirectory("callroom-expect")
        defer { tmp.remove() }
        let demo = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--headless", "--bots", "3", "--scenario", "qa-smoke",
                                                                       "--input", "null", "--output", "null", "--report", tmp.file("qa.xml"),
                                                                       "--event-log", tmp.file("events.jsonl")], nullInput: true)
        XCTAssertEqual(demo.wait(timeout: 40), 0, demo.errorOutput)
        XCTAssertTrue(demo.errorOutput.contains("expectations: 10 passed, 0 failed"), demo.errorOutput)
        let xml = try String(contentsOfFile: tmp.file("qa.xml"), encoding: .utf8)
        XCTAssertTrue(xml.contains(#"tests="10" failures="0""#), xml)
        // --event-log works headless too: the same callbacks as stdout, one per line.
        let log = try String(contentsOfFile: tmp.file("events.jsonl"), encoding: .utf8).split(separator: "\n")
        XCTAssertTrue(log.contains { $0.contains(#""event":"onChatMessage""#) }, "\(log.count) lines")
        XCTAssertTrue(log.contains { $0.contains(#""event":"onAudioNotice""#) } || !demo.errorOutput.contains("null"),
                      "audio notices are events in the log")
    }

    /// A deliberately failing scenario: exit 7, the failing line and what was seen instead on
    /// stderr, and a TAP report.
    func testAFailingExpectationFailsTheRunReadably() throws {
        let tmp = TemporaryDirectory("callroom-expect-fail")
        defer { tmp.remove() }
        try """
            duration 4
            at 1 1 raise-hand
            expect 0.5..2 onParticipantHandRaised from 1
            expect 0.5..2 onParticipantHandRaised from 2
            expect at 3 1 hand-down
            """.write(toFile: tmp.file("bad.scn"), atomically: true, encoding: .utf8)
        let demo = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--headless", "--bots", "2", "--scenario", tmp.file("bad.scn"),
                                                                       "--input", "null", "--output", "null", "--report", tmp.file("r.tap")])
        XCTAssertEqual(demo.wait(timeout: 30), 7, demo.errorOutput)
        let err = demo.errorOutput
        XCTAssertTrue(err.contains("FAILED bad:4 expect 0.5..2 onParticipantHandRaised from 2 — not seen between 0.5 s and 2 s (never seen)"), err)
        XCTAssertTrue(err.contains("FAILED bad:5 expect at 3 1 hand-down — at 3 s bot 1 was hand up"), err)
        XCTAssertTrue(err.contains("expectations: 1 passed, 2 failed"), err)
        let tap = try String(contentsOfFile: tmp.file("r.tap"), encoding: .utf8)
        XCTAssertTrue(tap.contains("ok 1 - bad:3") && tap.contains("not ok 2 - bad:4") && tap.contains("not ok 3 - bad:5"), tap)
    }
}
