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

    /// `kill -9` of `server`, then a new one on the same port with `config`; its URL.
    func killAndRestart(_ server: ManagedProcess, config: String, url: String) throws -> (ManagedProcess, url: String) {
        server.signal(SIGKILL)
        XCTAssertNotNil(server.wait())
        let port = url.split(separator: ":").last.map(String.init) ?? "0"
        let (again, url2, _) = try startServer(["--config", config, "--listen", "127.0.0.1:\(port)"])
        return (again, url2)
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
        XCTAssertEqual(client.wait(), 0, "a clean leave exits 0 (a signal's number means it crashed): \(client.errorOutput.suffix(2000))")
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

    /// A supervisor may stop the server the moment it says it is listening: SIGTERM then is a
    /// clean stop, every time. (The handlers used to be set up after that line: a signal in
    /// between was lost and the server never stopped — 12 of 40 tries on the old binary.)
    /// A full disk: REST answers `500 ERR_STORAGE` (what failed is not stored), the log says so
    /// once with the database's reason — not once a request — and once when it answers again,
    /// and the server goes on as before with everything it did store. A start on a full disk
    /// says that the disk is full.
    func testAFullDiskIsAnsweredLoggedOnceAndOutlived() throws {
        let disk = try SmallDisk(size: "4m")
        defer { disk.remove() }
        let mnt = disk.path
        let (server, url, _) = try startServer(["--data-dir", mnt + "/data", "--listen", "127.0.0.1:0"])
        let keys = try XCTUnwrap(FileManager.default.contents(atPath: mnt + "/data/keys.json")
            .flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: String] })
        let admin = ["apikey": try XCTUnwrap(keys["apiKey"]), "content-type": "application/json"]
        func create(_ uid: String) -> BlockingHTTP.Reply {
            BlockingHTTP.request("POST", url + "/v3/users", headers: admin, body: #"{"uid":"\#(uid)","name":"\#(String(repeating: "n", count: 90))"}"#)
        }
        XCTAssertEqual(create("before").status, 200)
        try disk.fill()
        var stored = ["before"], refused = 0
        for i in 0..<40 where refused < 5 {
            let r = create("full\(i)")
            if r.status == 200 { stored.append("full\(i)"); continue }
            XCTAssertEqual(r.status, 500, "\(r.json)")
            XCTAssertEqual((r.json["error"] as? [String: Any])?["code"] as? String, "ERR_STORAGE")
            XCTAssertEqual((r.json["error"] as? [String: Any])?["message"] as? String,
                           "The server's disk is full: nothing was stored. Try again once there is room.", "said as a full disk, not a broken database")
            refused += 1
            // Reads still work on a full disk; they do not end the outage the writes are in.
            XCTAssertEqual(BlockingHTTP.request("GET", url + "/v3/users", headers: admin).status, 200)
        }
        XCTAssertEqual(refused, 5, "a full disk refuses writes")
        let failed = server.errorOutput.split(separator: "\n").filter { $0.contains("REST: the database failed") }
        XCTAssertEqual(failed.count, 1, "one line for the outage: \(server.errorOutput.suffix(2000))")
        XCTAssertTrue(failed.first?.contains("disk is full") == true && failed.first?.contains("POST /v3/users") == true, "\(failed)")
        try disk.makeRoom()
        XCTAssertEqual(create("after").status, 200, "room again: the server writes again")
        stored.append("after")
        XCTAssertTrue(eventually(5) { server.errorOutput.contains("REST: the database answers again failed_operations=5") }, server.errorOutput)
        let listed = (BlockingHTTP.request("GET", url + "/v3/users?perPage=100", headers: admin).json["data"] as? [[String: Any]])?
            .compactMap { $0["uid"] as? String } ?? []
        XCTAssertEqual(Set(listed), Set(stored), "what was stored, and only it")

        // A start on the full disk is told it is full — not that the database cannot be read
        // (whose remedy, a backup, would throw the data away) — and the data is there after.
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        try disk.fill()
        let full = try ManagedProcess(BuiltProducts.path("callroomd"), ["--data-dir", mnt + "/data", "--listen", "127.0.0.1:0"])
        XCTAssertEqual(full.wait(timeout: 20), 1)
        XCTAssertTrue(full.errorOutput.contains("the disk that holds the data directory \(mnt)/data is full") && !full.errorOutput.contains("backup"),
                      full.errorOutput)
        try disk.makeRoom()
        let (again, url2, _) = try startServer(["--data-dir", mnt + "/data", "--listen", "127.0.0.1:0"])
        defer { again.signal(SIGKILL); _ = again.wait() }
        let kept = (BlockingHTTP.request("GET", url2 + "/v3/users?perPage=100", headers: admin).json["data"] as? [[String: Any]])?
            .compactMap { $0["uid"] as? String } ?? []
        XCTAssertEqual(Set(kept), Set(stored))
    }

    func testSIGTERMRightAfterListeningStopsTheServer() throws {
        var hung = 0, failed = 0
        for i in 0..<20 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: BuiltProducts.path("callroomd"))
            p.arguments = ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data-\(i)"), "--log-level", "error"]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            // The signal goes the moment the line is read (a blocking read: no polling delay).
            var seen = ""
            while !seen.contains("callroomd listening on") {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen += String(decoding: chunk, as: UTF8.self)
            }
            XCTAssertTrue(seen.contains("callroomd listening on"), "try \(i) did not start")
            kill(p.processIdentifier, SIGTERM)
            eventually(5, poll: 0.01) { !p.isRunning }
            if p.isRunning { hung += 1; kill(p.processIdentifier, SIGKILL); p.waitUntilExit(); continue }
            if p.terminationReason != .exit || p.terminationStatus != 0 { failed += 1 }
        }
        XCTAssertEqual(hung, 0, "servers that never stopped")
        XCTAssertEqual(failed, 0, "servers killed by the signal instead of stopping cleanly")
    }

    /// Whoever reads callroomd's standard output may go (`callroomd | head -1`, a supervisor's
    /// pipe closed): the lines it would print are lost and the server goes on. It printed them
    /// with `FileHandle.write`, which traps on a broken pipe — the server died with SIGILL before
    /// it said it was listening.
    func testAServerWhoseOutputIsClosedKeepsServing() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: BuiltProducts.path("callroomd"))
        p.arguments = ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data-closed-out")]
        let out = Pipe()
        p.standardOutput = out
        let errPath = tmp.file("closed-out.err")
        XCTAssertTrue(FileManager.default.createFile(atPath: errPath, contents: nil))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        try out.fileHandleForReading.close()  // nobody reads: every write to it is EPIPE
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() } }
        let url = eventuallyValue(10, poll: 0.05) { () -> String? in
            let log = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            return log.range(of: #"http=http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression).map { String(log[$0].dropFirst("http=".count)) }
        }
        let base = try XCTUnwrap(url, "never listening: \((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")")
        XCTAssertTrue(eventually(5, poll: 0.05) { BlockingHTTP.request("GET", base + "/healthz").status == 200 }, "serving")
        XCTAssertTrue(holds(for: 1, poll: 0.1) { p.isRunning }, "alive after the lines it could not print: \((try? String(contentsOfFile: errPath, encoding: .utf8))?.suffix(600) ?? "")")
        kill(p.processIdentifier, SIGTERM)
        XCTAssertTrue(eventually(5, poll: 0.02) { !p.isRunning })
        XCTAssertEqual(p.terminationReason, .exit)
        XCTAssertEqual(p.terminationStatus, 0)
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

    /// A recording cut by `kill -9`: its files hold everything up to their last flushed second,
    /// and the restarted server finalises them (end-of-stream marked, the row finished) before
    /// anyone asks.
    func testARecordingCutByKillNineIsFinalisedAtRestart() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/opusinfo"), "needs opus-tools (scripts/install-deps.sh)")
        let config = tmp.file("callroomd.json")
        try #"{"dataDir":"\#(tmp.file("data"))","storeHeartbeatSeconds":1}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let (server, url, _) = try startServer(["--config", config, "--listen", "127.0.0.1:0"])
        let authKey = try XCTUnwrap(try keys()["authKey"])
        var clients: [ManagedProcess] = []
        for (uid, tone) in [("kim", 300), ("lou", 500)] {
            // (Kim sends video too: her track becomes a WebM at the restart.)
            let c = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "taped", "--server", url, "--uid", uid, "--auth-key", authKey,
                                                                        "--input", "tone:\(tone)", "--output", "null", "--headless"]
                                                                        + (uid == "kim" ? ["--video", "pattern"] : []))
            XCTAssertNotNil(c.waitForLine { $0.contains("onSessionJoined") }, c.errorOutput)
            clients.append(c)
        }
        defer { for c in clients { c.signal(SIGKILL); _ = c.wait() } }
        clients[0].send("start-recording")  // kim joined first: the moderator
        XCTAssertNotNil(clients[1].waitForLine { $0.contains("onRecordingStarted") }, clients[1].output.suffix(3).joined())
        Thread.sleep(forTimeInterval: 3)
        let (again, url2) = try killAndRestart(server, config: config, url: url)
        defer { again.signal(SIGTERM); _ = again.wait() }
        let apiKey = try XCTUnwrap(try keys()["apiKey"])
        XCTAssertTrue(again.errorOutput.contains("finalised a recording an unclean shutdown cut"), again.errorOutput)
        let call = try XCTUnwrap(get(url2 + "/v3/calls/taped", headers: ["apikey": apiKey])["data"] as? [String: Any])
        XCTAssertEqual(call["hasRecording"] as? Bool, true)
        let rec = try XCTUnwrap((call["recordings"] as? [[String: Any]])?.first, "\(call)")
        XCTAssertNotNil(rec["endTime"] as? NSNumber, "finished at restart")
        var files = try XCTUnwrap(rec["files"] as? [[String: Any]])
        // Kim's video and audio in one WebM, made from her track and its start mark at the restart.
        let webm = try XCTUnwrap(files.first { $0["video"] as? Bool == true }, "a WebM: \(files)")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(webm["duration"] as? Double), 1.5, "\(webm)")
        let video = tmp.file("kim.webm")
        try BlockingHTTP.request("GET", try XCTUnwrap(webm["url"] as? String), headers: ["apikey": apiKey]).body.write(to: URL(fileURLWithPath: video))
        let probe = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", video])
        XCTAssertEqual(probe.wait(timeout: 20), 0, probe.errorOutput)
        XCTAssertEqual(Set(probe.output), ["vp8", "opus"], probe.output.joined(separator: " "))
        files.removeAll { $0["video"] as? Bool == true }
        XCTAssertEqual(files.count, 3, "the mixed room and both participants: \(files)")
        for f in files {
            let seconds = try XCTUnwrap(f["duration"] as? Double)
            XCTAssertGreaterThanOrEqual(seconds, 1.5, "up to its last flushed second of the ~3 s: \(f)")
            let body = BlockingHTTP.request("GET", try XCTUnwrap(f["url"] as? String), headers: ["apikey": apiKey]).body
            let path = tmp.file("got-\(f["name"] as? String ?? "x")")
            try body.write(to: URL(fileURLWithPath: path))
            let info = try ManagedProcess("/usr/bin/opusinfo", [path])
            XCTAssertEqual(info.wait(timeout: 20), 0, info.output.joined(separator: "\n"))
            XCTAssertFalse(info.output.joined().lowercased().contains("warning"), info.output.joined(separator: "\n"))
        }
    }

    /// A transcription cut by `kill -9`: every caption up to the last is in the WebVTT file and
    /// its lines, and the restarted server writes the JSON and finishes the row.
    func testATranscriptCutByKillNineIsFinalisedAtRestart() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin"), "needs pocketsphinx-en-us")
        let config = tmp.file("callroomd.json")
        try #"{"dataDir":"\#(tmp.file("data"))","storeHeartbeatSeconds":1}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let (server, url, _) = try startServer(["--config", config, "--listen", "127.0.0.1:0"])
        let authKey = try XCTUnwrap(try keys()["authKey"])
        let c = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "minutes", "--server", url, "--uid", "ada", "--auth-key", authKey,
                                                                    "--input", "file:" + BuiltProducts.packageRoot + "/Resources/clips/ada.wav",
                                                                    "--output", "null", "--headless"])
        defer { c.signal(SIGKILL); _ = c.wait() }
        XCTAssertNotNil(c.waitForLine { $0.contains("onSessionJoined") }, c.errorOutput)
        c.send("start-transcription")
        XCTAssertNotNil(c.waitForLine(timeout: 30) { $0.contains("onCaptionReceived") && $0.contains(#""final":true"#) && !$0.contains(#""text":"""#) },
                        c.output.suffix(3).joined())
        let (again, url2) = try killAndRestart(server, config: config, url: url)
        defer { again.signal(SIGTERM); _ = again.wait() }
        let apiKey = try XCTUnwrap(try keys()["apiKey"])
        XCTAssertTrue(again.errorOutput.contains("finalised a transcript an unclean shutdown cut"), again.errorOutput)
        let list = try XCTUnwrap(get(url2 + "/v3/calls/minutes/transcriptions", headers: ["apikey": apiKey])["data"] as? [[String: Any]])
        let t = try XCTUnwrap(list.first, "\(list)")
        XCTAssertGreaterThan((t["endTime"] as? NSNumber)?.int64Value ?? 0, 0, "finished at restart")
        let link = try XCTUnwrap(t["url"] as? String)
        XCTAssertTrue(link.hasPrefix(url2), link)
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: BlockingHTTP.request("GET", link, headers: ["apikey": apiKey]).body) as? [String: Any])
        let segments = try XCTUnwrap(doc["segments"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(segments.count, 1, "\(doc)")
        XCTAssertEqual((segments.first?["speaker"] as? [String: Any])?["uid"] as? String, "ada")
        let vtt = String(decoding: BlockingHTTP.request("GET", link + ".vtt", headers: ["apikey": apiKey]).body, as: UTF8.self)
        XCTAssertTrue(vtt.hasPrefix("WEBVTT") && vtt.contains(segments.first?["text"] as? String ?? "?"), vtt)
    }
}

