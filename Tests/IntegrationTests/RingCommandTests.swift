import CallRoomTestSupport
import Foundation
import XCTest

/// `callroom call` and `callroom listen`, headless, between two real processes and a real
/// callroomd: every callback is a JSON line, an accepted call runs as a session, and hanging
/// up (end of input) ends it for both.
final class RingCommandTests: XCTestCase {
    func events(_ p: ManagedProcess) -> [String] {
        p.output.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event"] as? String
        }
    }

    func testCallAndListenConnectTalkAndHangUp() throws {
        let tmp = TemporaryDirectory("callroom-ring")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "info"])
        defer { _ = server.stop() }
        let common = ["--server", server.url, "--auth-key", server.authKey, "--output", "null", "--headless"]
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "bob", "--name", "Bob B", "--auto-accept", "--input", "tone:300"] + common)
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "bob", "--uid", "ann", "--name", "Ann A", "--input", "tone:500"] + common)
        XCTAssertNotNil(ann.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, ann.errorOutput + ann.output.joined(separator: "\n"))
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"onParticipantJoined""#) || $0.contains(#""event":"onSessionJoined""#) })
        ann.closeInput()  // hang up
        // A process still running here is stuck: its stacks say where (a rare CI failure did not).
        let annStatus = ann.wait(timeout: 10), annStacks = ann.stackDump()
        let bobStatus = bob.wait(timeout: 10), bobStacks = bob.stackDump()
        XCTAssertEqual(annStatus, 0, "ann: \(ann.errorOutput)\n\(ann.output.suffix(6).joined(separator: "\n"))\n\(annStacks)")
        XCTAssertEqual(bobStatus, 0, "bob: \(bob.errorOutput)\n\(bobStacks)")
        let a = events(ann), b = events(bob)
        XCTAssertEqual(Array(a.prefix(3)), ["login", "initiateCall", "onOutgoingCallAccepted"], "\(a)")
        XCTAssertTrue(a.contains("onSessionLeft"))
        XCTAssertEqual(Array(b.prefix(4)), ["login", "listening", "onIncomingCallReceived", "acceptCall"], "\(b)")
        XCTAssertTrue(b.contains("onCallEndedMessageReceived"), "the caller hanging up ended it for both: \(b)")
        // Hanging up ends the call before leaving it, as the vendor's end button does: the server
        // ends it before ann goes, so bob's own end on seeing her gone can never come first —
        // it once did, and he was not told.
        server.assertCallEndedBefore("ann")
        XCTAssertTrue(b.contains("onSessionLeft"))
        // --name is each one's name in the call, as the other sees it.
        let seen = { (p: ManagedProcess, name: String) in
            p.output.contains { $0.contains(#""listener":"ParticipantEventListener""#) && $0.contains(#""uid":"\#(name.prefix(3).lowercased())""#) && $0.contains(#""name":"\#(name)""#) }
        }
        XCTAssertTrue(seen(bob, "Ann A"), "\(bob.output)")
        XCTAssertTrue(seen(ann, "Bob B"), "\(ann.output)")
    }

    /// The call log says what happened to everyone it rang — not only who joined — and, to each
    /// party, which way it went.
    func testTheCallLogListsEachRungMembersOutcomeAndTheDirection() throws {
        let tmp = TemporaryDirectory("callroom-ring-log")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let common = ["--server", server.url, "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"]
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "lbob", "--busy"] + common)
        defer { bob.signal(SIGTERM) }
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "lbob", "--uid", "lann"] + common)
        XCTAssertEqual(ann.wait(timeout: 15), 4, "busy: did not connect \(ann.output)")
        let sid = try XCTUnwrap(ann.output.compactMap { line -> String? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return (o["call"] as? [String: Any])?["sessionId"] as? String
        }.first)
        func token(_ uid: String) -> String {
            let r = BlockingHTTP.request("POST", server.url + "/v3/sdk/login", headers: ["appId": server.appId, "Content-Type": "application/json"],
                                         body: #"{"uid":"\#(uid)","authKey":"\#(server.authKey)"}"#)
            return ((r.json["data"] as? [String: Any])?["authToken"] as? String) ?? ""
        }
        for (who, headers, direction) in [("apikey", ["apikey": server.apiKey], nil as String?),
                                          ("caller", ["authToken": token("lann"), "appId": server.appId], "outgoing"),
                                          ("callee", ["authToken": token("lbob"), "appId": server.appId], "incoming")] {
            let r = BlockingHTTP.request("GET", server.url + "/v3/calls/\(sid)", headers: headers)
            let data = r.json["data"] as? [String: Any]
            let members = data?["members"] as? [[String: Any]]
            XCTAssertEqual(members?.count, 1, "\(who): \(r.json)")
            XCTAssertEqual(members?.first?["uid"] as? String, "lbob", who)
            XCTAssertEqual(members?.first?["outcome"] as? String, "busy", who)
            XCTAssertEqual(data?["direction"] as? String, direction, who)
            XCTAssertEqual((data?["participants"] as? [Any])?.count, 0, "nobody joined, yet the log says who was rung")
        }
    }

    /// The caller's process dies mid-call: once the server gives up on its connection (the
    /// grace period, 2 s here), the callee is alone in a call between two and ends it.
    func testACallWhoseOtherSideIsGoneEnds() throws {
        let tmp = TemporaryDirectory("callroom-ring-gone")
        defer { tmp.remove() }
        let config = tmp.file("callroomd.json")
        try Data(#"{"resumeGraceSeconds": 2}"#.utf8).write(to: URL(fileURLWithPath: config))
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error", "--config", config])
        defer { _ = server.stop() }
        let common = ["--server", server.url, "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"]
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "bob", "--auto-accept"] + common)
        defer { bob.signal(SIGTERM) }
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "bob", "--uid", "ann"] + common)
        XCTAssertNotNil(ann.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, "\(ann.output)")
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"onParticipantJoined""#) || $0.contains(#""event":"onSessionJoined""#) })
        Thread.sleep(forTimeInterval: 0.5)
        ann.signal(SIGKILL)
        let gone = Date()
        XCTAssertNotNil(bob.waitForLine(timeout: 10) { $0.contains(#""event":"peerGone""#) }, "\(bob.output.suffix(4))")
        XCTAssertGreaterThan(Date().timeIntervalSince(gone), 1.5, "not before the grace period: a blip is not a hang-up")
        XCTAssertEqual(bob.wait(timeout: 10), 0, "auto-accept exits once the call it took is over: \(bob.output.suffix(4))")
        // Told as it was: ann is gone, she did not end the call.
        XCTAssertTrue(bob.output.contains { $0.contains(#""event":"sessionEnding""#) && $0.contains(#""ending":"peerLeft""#) && $0.contains("ann left the call") },
                      "\(bob.output.suffix(3))")
        // The call is over on the server too: ann may ring again at once.
        let calls = BlockingHTTP.request("GET", server.url + "/v3/calls", headers: ["apikey": server.apiKey])
        let first = (calls.json["data"] as? [[String: Any]])?.first
        XCTAssertEqual(first?["status"] as? String, "ended", "\(calls.json)")
    }

    func testListenIsBackOnlineAfterTheServerRestarts() throws {
        let tmp = TemporaryDirectory("callroom-ring-restart")
        defer { tmp.remove() }
        let listen = "127.0.0.1:\(try FreePort.tcp())"
        var server = try CallroomdProcess(dataDir: tmp.file("data"), listen: listen, extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let common = ["--server", server.url, "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"]
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "bob", "--auto-reject"] + common)
        defer { bob.signal(SIGTERM) }
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        // The server dies (kill -9) and comes back on the same address: bob's chat connection
        // says it was lost, tries again, and is back without anyone restarting `listen`.
        let apiKey = server.apiKey  // (printed at the first start only)
        server.process.signal(SIGKILL)
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"disconnected""#) }, "\(bob.output)")
        _ = server.process.wait(timeout: 5)
        server = try CallroomdProcess(dataDir: tmp.file("data"), listen: listen, extra: ["--log-level", "error"])
        XCTAssertNotNil(bob.waitForLine(timeout: 15) { $0.contains(#""event":"connected""#) }, "\(bob.output)")
        // Ringing reaches him again: ann's call is rejected by him, not left unanswered.
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "bob", "--uid", "ann", "--timeout", "10"] + common)
        XCTAssertEqual(ann.wait(timeout: 15), 4, "did not connect: \(ann.output)")
        XCTAssertTrue(ann.output.last?.contains(#""status":"rejected""#) == true, "\(ann.output)")
        XCTAssertTrue(bob.process.isRunning, "listen stayed up throughout")
        // His tokens revoked: the server closes his presence, and the retry's refusal stops the tries.
        XCTAssertEqual(BlockingHTTP.request("DELETE", server.url + "/v3/users/bob/auth_tokens", headers: ["apikey": apiKey]).status, 200)
        let refused = bob.waitForLine(timeout: 10) { $0.contains(#""event":"onConnectionError""#) }
        XCTAssertTrue(refused?.contains("AUTH_ERR") == true, "\(bob.output)")
    }

    func testABusyListenerAndBadUsage() throws {
        let tmp = TemporaryDirectory("callroom-ring")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let common = ["--server", server.url, "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"]
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "bob", "--busy"] + common)
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "bob", "--uid", "ann", "--timeout", "10"] + common)
        XCTAssertEqual(ann.wait(timeout: 15), 4, "did not connect: \(ann.output)")
        XCTAssertTrue(ann.output.last?.contains(#""status":"busy""#) == true, "\(ann.output)")
        XCTAssertTrue(events(bob).contains("rejectCall"))
        bob.signal(SIGTERM)
        XCTAssertEqual(bob.wait(timeout: 5), 0)
        for bad in [["call"], ["call", "bob", "--uid", "x", "--server", server.url, "--auth-key", "k", "--timeout", "1", "--headless"],
                    ["listen", "--auto-accept", "--busy", "--uid", "x", "--server", server.url, "--auth-key", "k", "--headless"],
                    ["listen", "--uid", "x", "--name", " ", "--server", server.url, "--auth-key", "k", "--headless"]] {
            let p = try ManagedProcess(BuiltProducts.path("callroom"), bad)
            XCTAssertEqual(p.wait(timeout: 5), 2, "\(bad): \(p.errorOutput)")
        }
        let me = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "nobody", "--uid", "ann"] + common)
        XCTAssertEqual(me.wait(timeout: 10), 1)
        XCTAssertTrue(me.output.last?.contains("ERR_RECEIVER_NOT_FOUND") == true, "\(me.output)")
    }

    func testAGroupCallFromTheTerminal() throws {
        let tmp = TemporaryDirectory("callroom-ringgroup")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let common = ["--server", server.url, "--auth-key", server.authKey, "--input", "tone:400", "--output", "null", "--headless"]
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "bob", "--auto-accept"] + common)
        let cat = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "cat", "--auto-accept"] + common)
        let dan = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", "dan", "--auto-reject"] + common)
        defer { dan.signal(SIGTERM) }
        for p in [bob, cat, dan] { XCTAssertNotNil(p.waitForLine { $0.contains(#""event":"listening""#) }, p.errorOutput) }
        // (ann exists once she has logged in; the operator makes the group)
        _ = BlockingHTTP.request("POST", server.url + "/v3/sdk/login", headers: ["appId": server.appId],
                                 body: #"{"uid":"ann","authKey":"\#(server.authKey)"}"#)
        let g = BlockingHTTP.request("POST", server.url + "/v3/groups", headers: ["apikey": server.apiKey],
                                     body: #"{"guid":"team","name":"Team","owner":"ann","members":["bob","cat","dan"]}"#)
        XCTAssertEqual(g.status, 200, "\(g.json)")
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "team", "--group", "--uid", "ann"] + common)
        XCTAssertNotNil(ann.waitForLine { $0.contains(#""event":"onOutgoingCallAccepted""#) }, ann.errorOutput + ann.output.joined(separator: "\n"))
        for p in [bob, cat] { XCTAssertNotNil(p.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, p.errorOutput) }
        XCTAssertNotNil(dan.waitForLine { $0.contains(#""event":"rejectCall""#) })
        XCTAssertNotNil(ann.waitForLine { $0.contains(#""event":"onParticipantListChanged""#) && $0.contains(#""uid":"cat""#) && $0.contains(#""uid":"bob""#) },
                        "all three in the call's room")
        ann.closeInput()  // the caller ends it for everyone
        XCTAssertEqual(ann.wait(timeout: 10), 0)
        for p in [bob, cat] {
            XCTAssertEqual(p.wait(timeout: 10), 0, p.errorOutput)
            XCTAssertTrue(events(p).contains("onCallEndedMessageReceived"), "\(events(p))")
        }
    }

    /// `listen` and `call` headless against a server nobody answers on exited 1 without a word;
    /// they say why now, as `join` does.
    func testListenAndCallSayWhyTheyCannotStart() throws {
        for command in [["listen"], ["call", "bob"]] {
            let p = try ManagedProcess(BuiltProducts.path("callroom"), command + ["--server", "http://127.0.0.1:1", "--uid", "ann",
                                                                                  "--auth-key", "k", "--headless"], nullInput: true)
            XCTAssertEqual(p.wait(timeout: 20), 1, "\(command)")
            XCTAssertTrue(p.errorOutput.contains("callroom: ") && p.errorOutput.contains("cannot reach http://127.0.0.1:1"),
                          "\(command): \(p.errorOutput)")
        }
    }

    func testJoinOpensAnInviteLink() throws {
        let tmp = TemporaryDirectory("callroom-invite")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let zed = try ManagedProcess(BuiltProducts.path("callroom"), ["join", server.url + "/call/linkroom", "--uid", "zed", "--auth-key", server.authKey,
                                                                      "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(zed.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, zed.errorOutput)
        XCTAssertTrue(BlockingHTTP.request("GET", server.url + "/call/linkroom").text.contains("One person is in the call now"), "the invite page counts who is in (never names them)")
        zed.closeInput()
        XCTAssertEqual(zed.wait(timeout: 10), 0)
        let noServer = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "callroom://call/linkroom", "--uid", "zed", "--auth-key", "k", "--headless"])
        XCTAssertEqual(noServer.wait(timeout: 5), 2, "callroom:// names the session only: --server is needed")
    }
}
