import CallRoomTestSupport
import Foundation
import XCTest

/// Usage errors and help of both executables: clear messages and documented exit codes.
final class CommandLineTests: XCTestCase {
    func run(_ tool: String, _ args: [String], timeout: TimeInterval = 10) throws -> (Int32?, [String], String) {
        let p = try ManagedProcess(BuiltProducts.path(tool), args)
        let status = p.wait(timeout: timeout)
        return (status, p.output, p.errorOutput)
    }

    func testCallroomdUsage() throws {
        let (ok, out, _) = try run("callroomd", ["--help"])
        XCTAssertEqual(ok, 0)
        XCTAssertTrue(out.joined(separator: "\n").contains("--listen HOST:PORT"))
        let (bad, _, err) = try run("callroomd", ["--bogus"])
        XCTAssertEqual(bad, 2)
        XCTAssertTrue(err.contains("unknown option --bogus"))
        let (badListen, _, err2) = try run("callroomd", ["--listen", "nowhere"])
        XCTAssertEqual(badListen, 2)
        XCTAssertTrue(err2.contains("is not HOST:PORT"))
        let (badKeys, _, err3) = try run("callroomd", ["--listen", "127.0.0.1:0", "--data-dir", "/proc/nope"])
        XCTAssertEqual(badKeys, 1)
        XCTAssertTrue(err3.contains("cannot create data directory /proc/nope: /proc/nope: "), err3)
        // Why, said: a file in the way, or a file where a parent directory should be.
        let file = NSTemporaryDirectory() + "callroom-not-a-dir-\(getpid())"
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: file) }
        for (dir, why) in [(file, "a file that is not a directory is in the way"), (file + "/data", "\(file) is a file, not a directory")] {
            let (status, _, err) = try run("callroomd", ["--listen", "127.0.0.1:0", "--data-dir", dir])
            XCTAssertEqual(status, 1)
            XCTAssertTrue(err.contains("cannot create data directory \(dir): \(why)"), err)
        }
        let (badThreads, _, err4) = try run("callroomd", ["--relay-threads", "0"])
        XCTAssertEqual(badThreads, 2)
        XCTAssertTrue(err4.contains("relay threads must be 1…64"), err4)
        // IPv6 is said to be unsupported (it was "refusing plain HTTP on [::1]", or a UDP bind error).
        for listen in ["[::1]:0", "::1:0"] {
            let (v6, _, err5) = try run("callroomd", ["--listen", listen])
            XCTAssertEqual(v6, 2, listen)
            XCTAssertTrue(err5.contains("IPv4 only"), err5)
        }
    }

    func testCallroomUsage() throws {
        let (ok, out, _) = try run("callroom", ["join", "--help"])
        XCTAssertEqual(ok, 0)
        let help = out.joined(separator: "\n")
        for flag in ["--server", "--settings", "--uid", "--auth-key", "--auth-token", "--input", "--output", "--headless"] {
            XCTAssertTrue(help.contains(flag), "join --help lists \(flag)")
        }
        let (noSession, _, e1) = try run("callroom", ["join", "--server", "http://127.0.0.1:1", "--uid", "a", "--auth-key", "k"])
        XCTAssertEqual(noSession, 2)
        XCTAssertTrue(e1.contains("SESSION_ID"))
        let (both, _, e2) = try run("callroom", ["join", "s", "--uid", "a", "--auth-key", "k"])
        XCTAssertEqual(both, 2)
        XCTAssertTrue(e2.contains("--server and --settings"))
        let (unknown, _, e3) = try run("callroom", ["fly"])
        XCTAssertEqual(unknown, 2)
        XCTAssertTrue(e3.contains("unknown command 'fly'"))
        let (frame, _, e4) = try run("callroom", ["join", "s", "--server", "x", "--uid", "a", "--auth-key", "k", "--frame-ms", "7"])
        XCTAssertEqual(frame, 2)
        XCTAssertTrue(e4.contains("--frame-ms"))
    }

    /// A second `callroomd` on a data directory in use took the first's live call for one an
    /// unclean shutdown had left open and ended it in the store (the call log said it was over
    /// while people talked). It is refused now, naming the holder; once that one is gone (kill
    /// -9 too) the directory is free again.
    func testADataDirectoryOrAPortInUseIsRefusedWithTheReason() throws {
        let tmp = TemporaryDirectory("callroomd-twice")
        defer { tmp.remove() }
        let first = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        XCTAssertEqual(BlockingHTTP.request("POST", first.url + "/v3/users", headers: ["apikey": first.apiKey], body: #"{"uid":"ann"}"#).status, 200)
        let call = BlockingHTTP.request("POST", first.url + "/v3.0/call_tokens", headers: ["appId": first.appId, "apikey": first.apiKey],
                                        body: #"{"sessionId":"live","uid":"ann"}"#)
        let token = try XCTUnwrap(call.data["token"] as? String, "\(call.json)")
        let ann = try SignalProbe(url: first.url)
        ann.send(.join(.init(callToken: token, sessionId: "live")))
        XCTAssertNotNil(ann.joined())
        let (status, _, err) = try run("callroomd", ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data")])
        XCTAssertEqual(status, 1)
        let pid = first.process.process.processIdentifier
        XCTAssertTrue(err.contains("the data directory \(tmp.file("data")) is in use by another callroomd (process \(pid))"), err)
        let log = BlockingHTTP.request("GET", first.url + "/v3/calls/live", headers: ["apikey": first.apiKey]).data
        XCTAssertNil(log["endedAt"], "the live call is not ended by the refused start: \(log)")
        first.process.signal(SIGKILL)
        _ = first.process.wait()
        let next = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        // A port in use is said as the system says it (libwebsockets said "Failed to create
        // default vhost", twice, and the server "cannot listen").
        let taken = try XCTUnwrap(next.url.split(separator: ":").last.map(String.init))
        let (busy, _, busyErr) = try run("callroomd", ["--listen", "127.0.0.1:\(taken)", "--data-dir", tmp.file("other")])
        XCTAssertEqual(busy, 1)
        XCTAssertTrue(busyErr.contains("callroomd: cannot listen on 127.0.0.1:\(taken): Address already in use"), busyErr)
        XCTAssertFalse(busyErr.contains("vhost"), busyErr)
        let media = try XCTUnwrap(next.output.first { $0.hasPrefix("callroomd listening on") }?.split(separator: " ")
            .first { $0.hasPrefix("udp://") }?.split(separator: ":").last.map(String.init))
        let (udpBusy, _, udpErr) = try run("callroomd", ["--listen", "127.0.0.1:0", "--media-port", media, "--data-dir", tmp.file("other")])
        XCTAssertEqual(udpBusy, 1)
        XCTAssertTrue(udpErr.contains("cannot bind the UDP media port: 127.0.0.1:\(media): bind: Address already in use"), udpErr)
        XCTAssertEqual(next.stop(), 0, "after the holder died (kill -9) the directory is free")
    }

    /// Benchmarks are not in the shipped `callroom`: `callroom bench` runs `callroom-bench` beside
    /// it, and without one says how to build it (a failure, status 1 — not a usage error).
    func testBenchRunsTheBenchExecutableBesideOrSaysHowToGetIt() throws {
        let (ok, out, _) = try run("callroom", ["bench", "--help"])
        XCTAssertEqual(ok, 0)
        XCTAssertTrue(out.joined(separator: "\n").contains("callroom bench latency"), "\(out)")
        let (wrong, wrongOut, wrongErr) = try run("callroom", ["bench", "latnecy"])
        XCTAssertEqual(wrong, 2)
        XCTAssertTrue(wrongErr.contains("unknown benchmark 'latnecy'") && wrongErr.contains("callroom bench latency"), wrongErr)
        XCTAssertTrue(wrongOut.isEmpty, "a usage error is on stderr: \(wrongOut)")
        let alone = TemporaryDirectory("callroom-alone")
        defer { alone.remove() }
        try FileManager.default.copyItem(atPath: BuiltProducts.path("callroom"), toPath: alone.file("callroom"))
        let p = try ManagedProcess(alone.file("callroom"), ["bench", "latency"])
        XCTAssertEqual(p.wait(timeout: 10), 1)
        XCTAssertTrue(p.errorOutput.contains("callroom-bench is not installed"), p.errorOutput)
    }

    func testUnreachableServerFailsWithExitOne() throws {
        let (status, _, err) = try run("callroom", ["join", "s", "--server", "http://127.0.0.1:9", "--app-id", "a", "--uid", "u",
                                                    "--auth-key", "k", "--headless", "--input", "null", "--output", "null"])
        XCTAssertEqual(status, 1)
        XCTAssertTrue(err.contains("NETWORK_ERROR"), err)
    }

    func testBadAudioEndpointFailsTheJoinClearly() throws {
        let tmp = TemporaryDirectory()
        defer { tmp.remove() }
        let server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.path])
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on") })
        let url = String(line.split(separator: " ")[3])
        let key = server.output.first { $0.contains("authKey") }?.split(separator: " ").last.map(String.init) ?? ""
        let (status, _, err) = try run("callroom", ["join", "s", "--server", url, "--uid", "u", "--auth-key", key, "--headless",
                                                    "--input", "file:/nonexistent.wav", "--output", "null"])
        XCTAssertEqual(status, 1)
        XCTAssertTrue(err.contains("AUDIO_ERROR"), err)
        server.signal(SIGINT)
        XCTAssertEqual(server.wait(), 0)
    }

    /// Bad endpoints and surface flags are refused before anything is drawn or joined (exit 2).
    func testBadEndpointsAndSurfaceFlagsAreUsageErrors() throws {
        for (args, needle) in [(["--input", "bogus:1"], "--input 'bogus:1' is not an audio endpoint"),
                               (["--output", "tone:440"], "a tone is an input only"),
                               (["--show", "chat,teleport"], "unknown item 'teleport'")] {
            let (status, out, err) = try run("callroom", ["join", "s", "--server", "http://127.0.0.1:9", "--uid", "u", "--auth-key", "k"] + args)
            XCTAssertEqual(status, 2, "\(args): \(err)")
            XCTAssertTrue(err.contains(needle), err)
            XCTAssertTrue(out.isEmpty, "nothing drawn: \(out)")
            let (demo, _, derr) = try run("callroom", ["demo"] + args)
            XCTAssertEqual(demo, 2, "demo \(args)")
            XCTAssertTrue(derr.contains(needle), derr)
        }
        let (ok, out, _) = try run("callroom", ["join", "--help"])
        XCTAssertEqual(ok, 0)
        XCTAssertTrue(out.joined(separator: "\n").contains("--show LIST"))
    }

    /// `--duration` is headless only and a positive number of seconds (exit 2 before joining).
    func testBadDurationsAreUsageErrors() throws {
        for (args, needle) in [(["--duration", "5"], "--duration goes with --headless"),
                               (["--duration", "-1", "--headless"], "--duration must be a positive number"),
                               (["--duration", "soon", "--headless"], "--duration must be a positive number")] {
            let (status, _, err) = try run("callroom", ["join", "s", "--server", "http://127.0.0.1:9", "--uid", "u", "--auth-key", "k"] + args)
            XCTAssertEqual(status, 2, "\(args): \(err)")
            XCTAssertTrue(err.contains(needle), err)
        }
    }

    /// A server that is no http(s) URL is bad usage (exit 2), said before anything connects —
    /// not a resolver's "Couldn't resolve host name" for `ftp://h` or a `ws://` pasted in.
    func testAServerThatIsNoHTTPURLIsAUsageError() throws {
        for (command, server) in [(["join", "s"], "ftp://h"), (["join", "s"], "http://"), (["call", "bob"], "ws://127.0.0.1:9"),
                                  (["listen"], "mailto:x@y")] {
            let (status, out, err) = try run("callroom", command + ["--server", server, "--uid", "u", "--auth-key", "k", "--headless"])
            XCTAssertEqual(status, 2, "\(command) \(server): \(err)")
            XCTAssertTrue(err.contains("--server \(server) is not a server URL (http://HOST:PORT or https://HOST[:PORT])"), err)
            XCTAssertTrue(out.isEmpty, "nothing joined: \(out)")
        }
    }

    /// A session id the server would refuse is said to be one (exit 2), before the command looks
    /// for a terminal or a server — typed, from an invite link, or with a terminal escape in it
    /// (shown escaped, not sent to the terminal).
    func testASessionIDTheServerWouldRefuseIsAUsageError() throws {
        for (command, shown) in [(["join", "a b"], #""a b""#), (["join", "x\u{1B}[2Jy"], #""x\u{1B}[2Jy""#),
                                 (["join", String(repeating: "s", count: 129)], "\"" + String(repeating: "s", count: 129) + "\""),
                                 (["join", "http://127.0.0.1:9/call/a%20b"], #""a b""#), (["share", "a/b"], #""a/b""#)] {
            let (status, out, err) = try run("callroom", command + ["--server", "http://127.0.0.1:9", "--uid", "u", "--auth-key", "k"])
            XCTAssertEqual(status, 2, "\(command): \(err)")
            XCTAssertTrue(err.contains("\(shown) is not a session id: 1–128 characters of letters, digits, '_', '-', '.', '@', ':'"), err)
            XCTAssertFalse(err.contains("\u{1B}"), "no escape reaches the terminal")
            XCTAssertTrue(out.isEmpty, "nothing drawn: \(out)")
        }
    }

    func testBadCodecSettingsAreUsageErrors() throws {
        for (args, needle) in [(["--complexity", "11"], "--complexity must be 0…10"), (["--complexity", "low"], "--complexity must be 0…10"),
                               (["--bitrate", "5"], "--bitrate must be 6000…510000")] {
            let (status, out, err) = try run("callroom", ["join", "s", "--server", "http://127.0.0.1:9", "--uid", "u", "--auth-key", "k"] + args)
            XCTAssertEqual(status, 2, "\(args): \(err)")
            XCTAssertTrue(err.contains(needle), err)
            XCTAssertTrue(out.isEmpty, "nothing drawn: \(out)")
        }
    }

    /// SIGTERM and SIGINT make a headless client leave cleanly: its peer sees it leave at once
    /// (not a ghost for the 30 s grace period) and it exits 0.
    func testHeadlessLeavesOnSIGTERMAndSIGINT() throws {
        let tmp = TemporaryDirectory()
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        func client(_ uid: String) throws -> ManagedProcess {
            let p = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "sig", "--server", callroomd.url, "--uid", uid, "--auth-key",
                                                                        callroomd.authKey, "--input", "null", "--output", "null", "--headless"])
            XCTAssertNotNil(p.waitForLine { $0.contains("onSessionJoined") }, p.errorOutput)
            return p
        }
        let watcher = try client("watcher")
        for (uid, sig) in [("termed", SIGTERM), ("inted", SIGINT)] {
            let p = try client(uid)
            XCTAssertNotNil(watcher.waitForLine { $0.contains("onParticipantJoined") && $0.contains(uid) })
            p.signal(sig)
            XCTAssertNotNil(p.waitForLine(timeout: 5) { $0.contains("onSessionLeft") }, "\(uid) leaves on signal \(sig)")
            XCTAssertEqual(p.wait(timeout: 5), 0)
            XCTAssertNotNil(watcher.waitForLine(timeout: 3) { $0.contains("onParticipantLeft") && $0.contains(uid) }, "seen leaving at once")
        }
        watcher.send("leave")
        XCTAssertEqual(watcher.wait(), 0)
    }
}
