import CallRoomTestSupport
import CallsServer
import Foundation
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `callroomd` as an operator runs it: a config file, JSON logs without secrets, and data that
/// survives `kill -9`.
final class ServerOperationsTests: XCTestCase {
    var tmp: TemporaryDirectory!
    override func setUp() { tmp = TemporaryDirectory("callroom-ops") }
    override func tearDown() { tmp.remove() }

    func startServer(_ args: [String]) throws -> (ManagedProcess, url: String, appId: String) {
        let p = try ManagedProcess(BuiltProducts.path("callroomd"), args)
        let line = try XCTUnwrap(p.waitForLine { $0.hasPrefix("callroomd listening on") }, p.errorOutput)
        let w = line.split(separator: " ").map(String.init)
        return (p, w[3], w.last ?? "")
    }

    func get(_ url: String, headers: [String: String] = [:]) -> [String: Any] {
        BlockingHTTP.request("GET", url, headers: headers).json
    }

    func keys() throws -> [String: String] {
        let d = try XCTUnwrap(FileManager.default.contents(atPath: tmp.file("data/keys.json")))
        return try XCTUnwrap(JSONSerialization.jsonObject(with: d) as? [String: String])
    }

    func testConfigFileJSONLogsAndNoSecretsInLogs() throws {
        let config = tmp.file("callroomd.json")
        try #"{"listen":"127.0.0.1:1","dataDir":"\#(tmp.file("data"))","logFormat":"json","logLevel":"debug"}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        // --listen on the command line wins over the file's unusable port 1.
        let (server, url, _) = try startServer(["--config", config, "--listen", "127.0.0.1:0"])
        let k = try keys()
        let authKey = try XCTUnwrap(k["authKey"])
        let client = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "logs", "--server", url, "--uid", "lee", "--auth-key", authKey,
                                                                         "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(client.waitForLine { $0.contains("onSessionJoined") }, client.errorOutput)
        client.send("leave")
        XCTAssertEqual(client.wait(), 0)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let logs = server.errorOutput
        let lines = logs.split(separator: "\n")
        XCTAssertGreaterThan(lines.count, 2)
        for l in lines {
            let obj = try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any]
            XCTAssertNotNil(obj?["msg"], "every log line is a JSON object: \(l)")
            XCTAssertNotNil(obj?["ts"])
        }
        XCTAssertTrue(logs.contains("participant joined"))
        for secret in [k["apiKey"], k["authKey"], k["tokenSecret"]].compactMap({ $0 }) {
            XCTAssertFalse(logs.contains(secret), "a secret leaked into the logs")
        }
        // A bad config file is refused with a clear message and status 2.
        try #"{"lsten":"x"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let bad = try ManagedProcess(BuiltProducts.path("callroomd"), ["--config", config])
        XCTAssertEqual(bad.wait(), 2)
        XCTAssertTrue(bad.errorOutput.contains("unknown key 'lsten'"), bad.errorOutput)
    }

    func testCallLogsSurviveKillNine() throws {
        let config = tmp.file("callroomd.json")
        try #"{"dataDir":"\#(tmp.file("data"))","storeHeartbeatSeconds":1}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let (server, url, _) = try startServer(["--config", config, "--listen", "127.0.0.1:0"])
        let authKey = try XCTUnwrap(try keys()["authKey"])
        var clients: [ManagedProcess] = []
        for uid in ["kim", "lou"] {
            let c = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "crash", "--server", url, "--uid", uid, "--auth-key", authKey,
                                                                        "--input", "tone:300", "--output", "null", "--headless"])
            XCTAssertNotNil(c.waitForLine { $0.contains("onSessionJoined") }, c.errorOutput)
            clients.append(c)
        }
        let joinedBy = Int64(Date().timeIntervalSince1970 * 1000)
        Thread.sleep(forTimeInterval: 2.5)
        let killedAt = Int64(Date().timeIntervalSince1970 * 1000)
        server.signal(SIGKILL)
        XCTAssertNotNil(server.wait())
        for c in clients {
            XCTAssertNotNil(c.waitForLine { $0.contains("onConnectionLost") }, "the client notices the server is gone and retries")
        }

        // Restarted on the same address: the held participants died with the old process, so
        // the resumes are refused and the clients join again with fresh call tokens, by
        // themselves, within 2 s of the server being back — into the same call.
        let port = url.split(separator: ":").last.map(String.init) ?? "0"
        let (again, url2, _) = try startServer(["--config", config, "--listen", "127.0.0.1:\(port)"])
        let back = Date()
        defer { again.signal(SIGTERM); _ = again.wait() }
        for c in clients {
            XCTAssertNotNil(c.waitForLine(timeout: 10) { $0.contains("onSessionRejoined") }, c.errorOutput)
            let took = Date().timeIntervalSince(back)
            XCTAssertLessThan(took, 2.0, "rejoined \(String(format: "%.2f", took)) s after the server was back")
            XCTAssertTrue(c.output.contains { $0.contains("onConnectionRestored") }, "restored, with the rejoin flag (onSessionRejoined)")
            XCTAssertFalse(c.output.contains { $0.contains("onConnectionClosed") })
        }
        XCTAssertTrue(again.errorOutput.contains("closed calls left open by an unclean shutdown"))
        let apiKey = try XCTUnwrap(try keys()["apiKey"])
        let calls = try XCTUnwrap(get(url2 + "/v3/calls?sessionId=crash", headers: ["apikey": apiKey])["data"] as? [[String: Any]])
        XCTAssertEqual(calls.count, 1, "one call in the log, not two: \(calls)")
        let call = try XCTUnwrap(get(url2 + "/v3/calls/crash", headers: ["apikey": apiKey])["data"] as? [String: Any])
        XCTAssertEqual(call["status"] as? String, "ongoing", "the call goes on")
        XCTAssertNil(call["endedAt"] as? Int64)
        let ps = try XCTUnwrap(call["participants"] as? [[String: Any]])
        XCTAssertEqual(ps.compactMap { $0["uid"] as? String }.sorted(), ["kim", "kim", "lou", "lou"], "each before and after the restart")
        // Before the crash: left at the last heartbeat, not later than the crash.
        let cut = ps.compactMap { $0["leftAt"] as? Int64 }
        XCTAssertEqual(cut.count, 2, "\(ps)")
        for ended in cut {
            XCTAssertGreaterThanOrEqual(ended, joinedBy + 1000, "ended at a heartbeat after the join")
            XCTAssertLessThanOrEqual(ended, killedAt + 100, "not later than the crash")
        }
        // Media flows again (the new process counts from zero), then both leave and the call ends.
        Thread.sleep(forTimeInterval: 1)
        let metrics = BlockingHTTP.request("GET", url2 + "/metrics").text
        let forwarded = metrics.split(separator: "\n").first { $0.hasPrefix("callroom_relay_packets_forwarded_total ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        XCTAssertGreaterThan(forwarded, 50, "the rejoined clients' media goes through the restarted relay")
        for c in clients { c.signal(SIGTERM); XCTAssertEqual(c.wait(), 0, c.errorOutput) }
        let done = try XCTUnwrap(get(url2 + "/v3/calls/crash", headers: ["apikey": apiKey])["data"] as? [String: Any])
        XCTAssertEqual(done["status"] as? String, "ended")
        // Users created before the crash are still there.
        XCTAssertEqual((get(url2 + "/v3/users/kim", headers: ["apikey": apiKey])["data"] as? [String: Any])?["uid"] as? String, "kim")
    }
}
