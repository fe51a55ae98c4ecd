import CallRoomTestSupport
import Foundation
import XCTest

/// Scenarios drive synthetic participants deterministically: a scenario run in headless demo
/// mode produces every expected event, in order.
final class ScenarioTests: XCTestCase {
    func testScenarioRunsInOrderInHeadlessDemo() throws {
        let tmp = TemporaryDirectory("callroom-scn")
        defer { tmp.remove() }
        let file = tmp.file("qa.scn")
        try """
        # QA: one of everything, in a fixed order
        at 0.5 1 raise-hand
        at 1.0 2 mute
        at 1.5 1 chat hello from a bot
        at 2.0 2 pause-video
        at 2.5 1 share-start
        at 3.0 2 leave
        at 3.5 2 join
        at 4.0 1 lower-hand
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let demo = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--headless", "--bots", "2", "--scenario", file,
                                                                       "--input", "null", "--output", "null"])
        let expected: [(String, String)] = [
            ("onParticipantHandRaised", "bot-1"), ("onParticipantAudioMuted", "bot-2"), ("onChatMessage", "hello from a bot"),
            ("onParticipantVideoPaused", "bot-2"), ("onParticipantStartedScreenShare", "bot-1"), ("onParticipantLeft", "bot-2"),
            ("onParticipantJoined", "bot-2"), ("onParticipantHandLowered", "bot-1"),
        ]
        XCTAssertNotNil(demo.waitForLine(timeout: 15) { $0.contains("onParticipantHandLowered") }, demo.errorOutput)
        let lines = demo.output
        var last = -1
        for (event, detail) in expected {
            let i = lines.firstIndex { $0.contains("\"event\":\"\(event)\"") && $0.contains(detail) }
            XCTAssertNotNil(i, "\(event) \(detail) missing")
            if let i { XCTAssertGreaterThan(i, last, "\(event) in order"); last = i }
        }
        demo.send("leave")
        XCTAssertEqual(demo.wait(), 0)
    }

    /// `demo --ring`: Ada calls you (answered at once, headless), the bots join the call's room
    /// and the scenario runs there, ringing actions included: bot 2 calls you while you are in the
    /// call (busy) and, later, hangs up its own call attempt.
    func testTheRingDemoCallsYouAndRunsTheScenarioInTheCall() throws {
        let tmp = TemporaryDirectory("callroom-ringdemo")
        defer { tmp.remove() }
        let file = tmp.file("ring.scn")
        try """
        at 0.5 1 raise-hand
        at 1.0 2 call you
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let demo = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--ring", "--headless", "--bots", "2", "--scenario", file,
                                                                       "--input", "null", "--output", "null"])
        XCTAssertNotNil(demo.waitForLine(timeout: 15) { $0.contains(#""event":"onIncomingCallReceived""#) && $0.contains("Ada Lovelace") },
                        demo.errorOutput + demo.output.joined(separator: "\n"))
        XCTAssertNotNil(demo.waitForLine(timeout: 15) { $0.contains(#""event":"onParticipantHandRaised""#) && $0.contains("bot-1") },
                        "the scenario runs in the call: \(demo.output.suffix(5))")
        XCTAssertTrue(demo.output.contains { $0.contains(#""event":"acceptCall""#) })
        // Bot 2 rings you while you are in the call: you are busy, so nothing rings here.
        XCTAssertTrue(holds(for: 1, poll: 0.05) { demo.output.filter { $0.contains(#""event":"onIncomingCallReceived""#) }.count == 1 },
                      "busy in the call: nothing more rings")
        demo.send("leave")
        XCTAssertEqual(demo.wait(timeout: 10), 0, demo.errorOutput)
    }

    func testBadScenarioIsRefusedWithItsLineNumber() throws {
        let tmp = TemporaryDirectory("callroom-scn")
        defer { tmp.remove() }
        let file = tmp.file("bad.scn")
        try "at 1 1 mute\nat 2 1 dance\n".write(toFile: file, atomically: true, encoding: .utf8)
        let p = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--headless", "--scenario", file])
        XCTAssertEqual(p.wait(), 2)
        XCTAssertTrue(p.errorOutput.contains("bad.scn:2: unknown action 'dance'"), p.errorOutput)
        let missing = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--headless", "--scenario", "no-such"])
        XCTAssertEqual(missing.wait(), 2)
        XCTAssertTrue(missing.errorOutput.contains("no scenario 'no-such'"))
        try "at 1 2 call\n".write(toFile: file, atomically: true, encoding: .utf8)
        let noUser = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--headless", "--scenario", file])
        XCTAssertEqual(noUser.wait(), 2)
        XCTAssertTrue(noUser.errorOutput.contains("bad.scn:1: call needs one USER"), noUser.errorOutput)
    }

    func testBotsCommandPopulatesARoomOnARunningServer() throws {
        let tmp = TemporaryDirectory("callroom-bots")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        let server = callroomd.process, url = callroomd.url, key = callroomd.authKey
        let bots = try ManagedProcess(BuiltProducts.path("callroom"), ["bots", "--server", url, "--session", "crowd", "--auth-key", key,
                                                                       "--count", "3", "--scenario", "quiet", "--duration", "3"])
        XCTAssertNotNil(bots.waitForLine { $0.contains("3 synthetic participants in crowd") }, bots.errorOutput)
        let me = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "crowd", "--server", url, "--uid", "watcher", "--auth-key", key,
                                                                     "--input", "null", "--output", "null", "--headless"])
        let roster = try XCTUnwrap(me.waitForLine { $0.contains("onParticipantListChanged") })
        for name in ["Ada Lovelace", "Grace Hopper", "Alan Turing"] { XCTAssertTrue(roster.contains(name), "\(name) in \(roster)") }
        XCTAssertEqual(bots.wait(timeout: 10), 0, "leaves cleanly after --duration")
        XCTAssertNotNil(me.waitForLine { $0.contains("onParticipantLeft") })
        me.send("leave")
        XCTAssertEqual(me.wait(), 0)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }
}

/// The load generator against a live server at a small size: its counts match the server's.
final class LoadGeneratorTests: XCTestCase {
    func testLoadCountsMatchTheServersMetrics() throws {
        let tmp = TemporaryDirectory("callroom-load")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path, extra: ["--log-level", "error"])
        let server = callroomd.process, url = callroomd.url, key = callroomd.authKey
        let load = try ManagedProcess(BuiltProducts.path("callroom"), ["bots", "--server", url, "--auth-key", key, "--rooms", "2",
                                                                       "--per-room", "3", "--duration", "2",
                                                                       "--server-pid", "\(server.process.processIdentifier)"])
        XCTAssertEqual(load.wait(timeout: 60), 0, load.errorOutput)
        let out = load.output
        let last = try XCTUnwrap(out.last)
        XCTAssertTrue(last.hasPrefix("delivered="), last)
        func value(_ key: String) -> Double? {
            last.split(separator: " ").first { $0.hasPrefix(key + "=") }.flatMap { Double($0.split(separator: "=")[1]) }
        }
        let delivered = try XCTUnwrap(value("delivered"))
        let forwardedLine = try XCTUnwrap(out.first { $0.hasPrefix("server forwarded") })
        let forwarded = try XCTUnwrap(Double(forwardedLine.split(separator: " ")[2]))
        XCTAssertGreaterThan(delivered, 500, "6 bots × 2 others × 50 packets/s × 2 s ≈ 1,200")
        XCTAssertEqual(delivered, forwarded, accuracy: forwarded * 0.01, "what the bots received is what the relay forwarded")
        XCTAssertLessThan(try XCTUnwrap(value("loss_pct")), 1)
        XCTAssertTrue(out.contains { $0.hasPrefix("server_cpu_us_per_packet=") })
        XCTAssertTrue(out.contains { $0.hasPrefix("generator CPU ") && $0.contains("server + generator") }, out.joined(separator: "\n"))
        // Memory per participant comes from the server's VmRSS before and during the run.
        let memory = try XCTUnwrap(out.first { $0.hasPrefix("server memory ") }, out.joined(separator: "\n"))
        XCTAssertTrue(memory.contains("KiB per participant"), memory)
        // The bots left: the server shows no rooms.
        let metrics = BlockingHTTP.request("GET", url + "/metrics")
        XCTAssertEqual(metrics.status, 200)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }
}
