import CallRoomTestSupport
import CallsServer
import Foundation
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
import CallsDatabase
#endif

/// The walking skeleton end to end: a real `callroomd` process on loopback and two headless
/// `callroom join` processes in one session, with real Opus over the real relay.
final class TwoClientCallTests: XCTestCase {
    var tmp: TemporaryDirectory!
    var server: ManagedProcess!
    var url = ""
    var appId = ""
    var authKey = ""
    var apiKey = ""

    override func setUpWithError() throws {
        tmp = TemporaryDirectory("callroom-it")
        server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data")])
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on http://") }, "server started: \(server.errorOutput)")
        let words = line.split(separator: " ").map(String.init)
        url = words[3]
        XCTAssertTrue(words[5].hasPrefix("udp://127.0.0.1:"), "names the UDP media port: \(line)")
        appId = words.last ?? ""
        authKey = server.output.first { $0.contains("authKey") }?.split(separator: " ").last.map(String.init) ?? ""
        apiKey = server.output.first { $0.contains("apiKey") }?.split(separator: " ").last.map(String.init) ?? ""
        XCTAssertEqual(authKey.count, 40, "keys printed once on first start")
    }

    override func tearDown() {
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0, "SIGTERM shuts callroomd down cleanly")
        tmp.remove()
    }

    func client(_ uid: String, input: String, output: String) throws -> ManagedProcess {
        try ManagedProcess(BuiltProducts.path("callroom"), ["join", "room1", "--server", url, "--uid", uid, "--name", uid.capitalized,
                                                            "--auth-key", authKey, "--input", input, "--output", output, "--headless"])
    }

    func event(_ p: ManagedProcess, _ name: String, containing: String = "", timeout: TimeInterval = 10) -> [String: Any]? {
        let line = p.waitForLine(timeout: timeout) { $0.contains("\"event\":\"\(name)\"") && (containing.isEmpty || $0.contains(containing)) }
        return line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func testTwoTerminalsInOneRoomHearEachOther() throws {
        let wav = tmp.file("bob-heard.wav")
        let bob = try client("bob", input: "null", output: "file:\(wav)")
        let bobJoined = try XCTUnwrap(event(bob, "onSessionJoined"), "bob joined: \(bob.errorOutput) \(bob.output) running=\(bob.process.isRunning)")
        XCTAssertEqual(bobJoined["listener"] as? String, "SessionStatusListener")
        XCTAssertNotNil(bobJoined["ts"])

        let alice = try client("alice", input: "tone:440", output: "null")
        XCTAssertNotNil(event(alice, "onSessionJoined"), "alice joined: \(alice.errorOutput)")
        let roster = try XCTUnwrap(event(alice, "onParticipantListChanged", containing: "\"bob\""))
        let uids = (roster["participants"] as? [[String: Any]])?.compactMap { $0["uid"] as? String }
        XCTAssertEqual(uids, ["bob", "alice"])
        let joined = try XCTUnwrap(event(bob, "onParticipantJoined", containing: "alice"))
        XCTAssertEqual(joined["listener"] as? String, "ParticipantEventListener")
        let p = try XCTUnwrap(joined["participant"] as? [String: Any])
        XCTAssertEqual(p["name"] as? String, "Alice")
        XCTAssertEqual(p["isAudioMuted"] as? Bool, false)
        XCTAssertNotNil(p["pid"])

        Thread.sleep(forTimeInterval: 2.0)
        alice.send("mute")
        XCTAssertNotNil(event(alice, "onAudioMuted"))
        let muted = try XCTUnwrap(event(bob, "onParticipantAudioMuted", containing: "alice"))
        XCTAssertEqual((muted["participant"] as? [String: Any])?["isAudioMuted"] as? Bool, true)
        Thread.sleep(forTimeInterval: 2.0)
        alice.send("unmute")
        XCTAssertNotNil(event(alice, "onAudioUnMuted"))
        XCTAssertNotNil(event(bob, "onParticipantAudioUnmuted", containing: "alice"))
        Thread.sleep(forTimeInterval: 1.5)

        alice.send("dance")
        XCTAssertNotNil(alice.waitForLine { $0.contains("UNKNOWN_COMMAND") }, "a bad command gets a JSON error line")
        alice.send("leave")
        XCTAssertNotNil(event(alice, "onSessionLeft"))
        XCTAssertEqual(alice.wait(), 0, "clean leave exits 0")
        XCTAssertNotNil(event(bob, "onParticipantLeft", containing: "alice"))
        bob.closeInput()  // end of input leaves too
        XCTAssertNotNil(event(bob, "onSessionLeft"))
        XCTAssertEqual(bob.wait(), 0)

        try assertToneThenSilenceThenTone(wav)
        try assertCallIsLogged()
    }

    /// Bob's recording: alice's 440 Hz tone well above the noise floor, then at least a second
    /// of silence while she was muted, then the tone again.
    func assertToneThenSilenceThenTone(_ path: String) throws {
        let (rate, samples) = try XCTUnwrap(SignalAnalysis.readWAV(path), "bob wrote a WAV")
        XCTAssertEqual(rate, 48_000)
        let windows = SignalAnalysis.windows(samples, size: 2400)  // 50 ms
        enum Kind { case tone, silence, other }
        let kinds: [Kind] = windows.map { w in
            let db = SignalAnalysis.rmsDBFS(w)
            if db < -60 { return .silence }
            if db > -30 && SignalAnalysis.toneDominanceDB(w, frequency: 440, others: [220, 330, 550, 660, 880, 1000]) > 20 { return .tone }
            return .other
        }
        let toneWindows = kinds.filter { $0 == .tone }.count
        XCTAssertGreaterThan(toneWindows, 40, "at least 2 s of clean 440 Hz tone (got \(toneWindows) windows of 50 ms)")
        guard let firstTone = kinds.firstIndex(of: .tone) else { return XCTFail("no tone heard") }
        // Longest run of silence after the tone started.
        var best = (start: 0, length: 0), run = 0
        for i in firstTone..<kinds.count {
            run = kinds[i] == .silence ? run + 1 : 0
            if run > best.length { best = (i - run + 1, run) }
        }
        XCTAssertGreaterThanOrEqual(best.length, 20, "a second or more of silence while alice was muted")
        XCTAssertLessThanOrEqual(best.length, 60, "the silence is the mute, not the end of the stream")
        let after = kinds[(best.start + best.length)...]
        XCTAssertGreaterThan(after.filter { $0 == .tone }.count, 10, "the tone comes back after unmute")
        // Overall signal-to-noise of the tone windows.
        let toneSamples = zip(windows, kinds).filter { $0.1 == .tone }.flatMap { $0.0 }
        XCTAssertGreaterThan(SignalAnalysis.toneDominanceDB(toneSamples[...], frequency: 440, others: [300, 500, 700, 1000, 2000]), 30)
    }

    func assertCallIsLogged() throws {
        // Through the REST API …
        let body = BlockingHTTP.request("GET", url + "/v3/calls/room1", headers: ["apikey": apiKey]).json
        let call = try XCTUnwrap(body["data"] as? [String: Any])
        XCTAssertEqual(call["status"] as? String, "ended")
        // … and in the SQLite file itself.
        let db = try SQLiteDatabase(path: tmp.file("data/callroom.sqlite"), readOnly: true)
        let calls = try db.query("SELECT session_id, started_at, ended_at FROM calls")
        XCTAssertEqual(calls.count, 1)
        XCTAssertEqual(calls[0][0].text, "room1")
        let started = try XCTUnwrap(calls[0][1].int), ended = try XCTUnwrap(calls[0][2].int)
        XCTAssertGreaterThan(ended - started, 5000, "the call lasted the test's ~6 s")
        let rows = try db.query("SELECT uid, joined_at, left_at FROM call_participants ORDER BY id")
        XCTAssertEqual(rows.compactMap { $0[0].text }, ["bob", "alice"])
        let bobJoin = rows[0][1].int ?? 0, bobLeft = rows[0][2].int ?? 0
        let aliceJoin = rows[1][1].int ?? 0, aliceLeft = rows[1][2].int ?? 0
        XCTAssertLessThan(bobJoin, aliceJoin)
        XCTAssertLessThan(aliceJoin, aliceLeft)
        XCTAssertLessThan(aliceLeft, bobLeft, "alice left first")
        XCTAssertEqual(bobJoin, started)
        XCTAssertEqual(bobLeft, ended)
    }
}
