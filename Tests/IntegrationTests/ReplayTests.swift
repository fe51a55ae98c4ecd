import CallRoomTestSupport
import CometChatCallsSDK
import Foundation
import XCTest

/// `callroom replay`: a recorded event log read back exactly (every kind of argument), and
/// re-driven on the call screen in tmux at its recorded pace, paused, stepped and sped up.
final class ReplayTests: XCTestCase {
    func participant(_ uid: String, _ name: String, hand: Bool = false) -> Participant {
        var p = Participant(uid: uid, name: name)
        p.pid = "p-" + uid
        p.isAudioMuted = false
        p.raisedHandTimestamp = hand ? 1_796_000_000_000 : nil
        p.joinedAt = 1_796_000_000_000
        return p
    }

    func testEveryArgumentKindReadsBackAsItWasWritten() {
        let ada = participant("ada", "Ada Lovelace"), grace = participant("grace", "Grace Hopper", hand: true)
        let events: [CallEvent] = [
            .sessionJoined, .participantListChanged(participants: [ada, grace]), .participantHandRaised(participant: grace),
            .audioModeChanged(audioMode: .speaker), .audioModesChanged(audioModes: [.speaker, .headphones]),
            .callLayoutChanged(layoutType: .spotlight), .cameraFacingChanged(cameraFacing: .REAR),
            .error(code: "ERR_X", message: "no \"quotes\" lost"), .chatMessage(ChatEntry(id: 7, pid: "p-ada", uid: "ada", name: "Ada Lovelace", text: "hi\nthere", sentAt: 1_796_000_001_000)),
            .audioNotice("no sound card: null"), .connectionQualityChanged(participant: ada, quality: .fair),
            .mediaTransportChanged(transport: .signalling), .transcriptionStarted(language: "en-US"),
            .captionReceived(Caption(tid: "t1", pid: "p-ada", uid: "ada", name: "Ada Lovelace", id: 3, text: "hello", final: true, start: 10, end: 900)),
            .roomLockChanged(locked: true), .lobbyRequestResolved(participant: ada, admitted: false), .sessionLeft,
        ]
        for e in events {
            let back = CallEvent.recorded(e.jsonLine())
            XCTAssertEqual(back?.event, e, e.jsonLine())
            XCTAssertNotNil(back?.at)
        }
        XCTAssertNil(CallEvent.recorded(#"{"event":"onHandWaved"}"#))
        XCTAssertNil(CallEvent.recorded(#"{"event":"onParticipantJoined","participant":"not an object"}"#))
        XCTAssertNil(CallEvent.recorded("not json"))
    }

    func testAReplayPlaysPausesStepsAndQuits() throws {
        let tmux = Tmux(session: "replay-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        let tmp = TemporaryDirectory("callroom-replay")
        defer { tmp.remove() }
        let ada = participant("ada", "Ada Lovelace"), grace = participant("grace", "Grace Hopper")
        let t0 = Date()
        let lines = [(CallEvent.sessionJoined, 0.0), (.participantListChanged(participants: [ada, grace]), 0.1),
                     (.participantHandRaised(participant: participant("grace", "Grace Hopper", hand: true)), 0.5),
                     (.chatMessage(ChatEntry(id: 1, pid: "p-ada", uid: "ada", name: "Ada Lovelace", text: "replayed hello", sentAt: 0)), 0.7)]
            .map { $0.0.jsonLine(at: t0.addingTimeInterval($0.1)) }
        try ("# a recorded call\n" + lines.joined(separator: "\n") + "\n").write(toFile: tmp.file("call.jsonl"), atomically: true, encoding: .utf8)
        XCTAssertTrue(tmux.start("LANG=C.UTF-8 \(BuiltProducts.path("callroom")) replay \(tmp.file("call.jsonl")) --paused; echo EXIT=$?; sleep 30",
                                 width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("REPLAY 0/4 paused"), tmux.screen())
        tmux.keys(".")
        XCTAssertTrue(tmux.waitFor("REPLAY 1/4"), "one step: \(tmux.screen())")
        tmux.keys("+")
        tmux.keys("Space")
        XCTAssertTrue(tmux.waitFor("REPLAY 4/4 over"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("Grace Hopper"), "the recorded participants on their tiles: \(tmux.screen())")
        XCTAssertTrue(tmux.screen().contains("onChatMessage") || tmux.screen().contains("replayed hello"), tmux.screen())
        tmux.keys("q")
        XCTAssertTrue(tmux.waitFor("EXIT=0"), tmux.screen())
        // A file with no events is a clear error.
        try "hello\n".write(toFile: tmp.file("none.jsonl"), atomically: true, encoding: .utf8)
        let p = try ManagedProcess(BuiltProducts.path("callroom"), ["replay", tmp.file("none.jsonl")])
        XCTAssertEqual(p.wait(timeout: 5), 1)
        XCTAssertTrue(p.errorOutput.contains("no call events in"), p.errorOutput)
    }
}
