@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import CallsSecurity
import Foundation
import XCTest

/// Ringing between real clients of a real server: presence over signalling, every device rung,
/// the room of an accepted call recording into the same call, and a `kill -9` mid-ring.
final class RingingTests: XCTestCase {
    static func authToken(url: String, appId: String, authKey: String, uid: String) throws -> String {
        let login = BlockingHTTP.request("POST", url + "/v3/sdk/login", headers: ["appId": appId],
                                         body: #"{"uid":"\#(uid)","authKey":"\#(authKey)","name":"\#(uid.capitalized)"}"#)
        return try XCTUnwrap(login.data["authToken"] as? String, "\(login)")
    }

    /// A device online as `uid`.
    static func online(url: String, appId: String, authKey: String, uid: String) throws -> SignalProbe {
        let p = try SignalProbe(url: url)
        p.send(.hello(authToken: try authToken(url: url, appId: appId, authKey: authKey, uid: uid)))
        XCTAssertNotNil(p.wait { if case .welcome(uid, _) = $0 { return true }; return false }, "\(uid) is online")
        return p
    }

    /// The first `call` message of `kind` (for a session other than `except`).
    func call(_ p: SignalProbe, _ kind: CallEventKind, except: String? = nil, timeout: TimeInterval = 5) -> WireCall? {
        if case .call(_, let c, _)? = p.wait(timeout: timeout, { if case .call(kind, let c, _) = $0 { return c.sessionId != except }; return false }) { return c }
        return nil
    }

    /// Ann and Bob online (Bob on `devices` devices), Ann calling Bob: the call's session id
    /// once Ann is told it rings.
    func annCallsBob(_ h: ServerHarness, devices: Int = 1) throws -> (ann: SignalProbe, bob: [SignalProbe], sid: String) {
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try Self.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try (0..<devices).map { _ in try Self.online(url: url, appId: app, authKey: key, uid: "bob") }
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        return (ann, bob, try XCTUnwrap(call(ann, .initiated)?.sessionId))
    }

    func testAnAcceptedCallRingsEveryDeviceAndItsRoomRecordsIntoTheSameCall() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let url = h.server.url
        let (ann, bobDevices, sid) = try annCallsBob(h, devices: 2)
        let (bobPhone, bobLaptop) = (bobDevices[0], bobDevices[1])
        XCTAssertEqual(call(bobPhone, .incoming)?.initiator.name, "Ann")
        XCTAssertNotNil(call(bobLaptop, .incoming))
        // Ringing is on record before anyone heard of it.
        XCTAssertEqual(h.request("GET", "/v3/calls/\(sid)", headers: h.adminHeaders).data["status"] as? String, "initiated")

        bobLaptop.send(.acceptCall(sessionId: sid))
        XCTAssertEqual(call(ann, .accepted)?.status, .ongoing)
        XCTAssertNotNil(call(bobLaptop, .accepted))
        guard case .call(.cancelled, _, .answeredElsewhere)? = bobPhone.wait({ if case .call(.cancelled, _, _) = $0 { return true }; return false }) else {
            return XCTFail("the phone stops ringing: \(bobPhone.all)")
        }
        bobPhone.send(.acceptCall(sessionId: sid))
        XCTAssertEqual(bobPhone.error(), "ERR_CALL_NOT_RINGING")

        // Both join the call's room: the room records into the ringing call's row.
        let annRoom = try SignalProbe(url: url), bobRoom = try SignalProbe(url: url)
        annRoom.send(.join(.init(callToken: try h.callToken(uid: "ann", session: sid), sessionId: sid)))
        bobRoom.send(.join(.init(callToken: try h.callToken(uid: "bob", session: sid), sessionId: sid)))
        XCTAssertNotNil(annRoom.joined())
        XCTAssertNotNil(bobRoom.joined())
        let during = h.request("GET", "/v3/calls/\(sid)", headers: h.adminHeaders).data
        XCTAssertEqual(during["mode"] as? String, "call")
        XCTAssertEqual(during["status"] as? String, "ongoing")
        XCTAssertEqual((during["participants"] as? [[String: Any]])?.count, 2)
        XCTAssertEqual(h.request("GET", "/v3/calls?sessionId=\(sid)", headers: h.adminHeaders).json["meta"].flatMap {
            (($0 as? [String: Any])?["pagination"] as? [String: Any])?["total"] as? Int }, 1, "one call, not a call and a meeting")

        // Everyone leaves the room: the call is over, and both ends hear it.
        annRoom.send(.leave)
        bobRoom.send(.leave)
        XCTAssertEqual(call(ann, .ended)?.status, .ended)
        XCTAssertNotNil(call(bobLaptop, .ended))
        XCTAssertEqual(h.request("GET", "/v3/calls/\(sid)", headers: h.adminHeaders).data["status"] as? String, "ended")
    }

    /// The attack (#34): anyone of the app who learnt a ringing call's id got a call token for
    /// its room and joined it. Now only its parties get one (REST, the operator's key too), and
    /// the room refuses a token not minted for a party.
    func testARingingCallsRoomAdmitsOnlyItsParties() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let (ann, bobDevices, sid) = try annCallsBob(h)
        let bob = bobDevices[0]
        XCTAssertNotNil(call(bob, .incoming))
        bob.send(.acceptCall(sessionId: sid))
        XCTAssertNotNil(call(ann, .accepted))
        // Eve, logged in, knows the id.
        let eve = try Self.authToken(url: url, appId: app, authKey: key, uid: "eve")
        let asked = h.request("POST", "/v3.0/call_tokens", headers: ["appId": app, "authToken": eve], body: #"{"sessionId":"\#(sid)"}"#)
        XCTAssertEqual(asked.status, 403)
        XCTAssertEqual(asked.errorCode, "ERR_NOT_CALL_PARTY")
        let operatorAsked = h.request("POST", "/v3.0/call_tokens", headers: h.adminHeaders.merging(["appId": app]) { a, _ in a },
                                      body: #"{"sessionId":"\#(sid)","uid":"eve"}"#)
        XCTAssertEqual(operatorAsked.errorCode, "ERR_NOT_CALL_PARTY", "not even the operator puts a stranger into a private call")
        // A validly signed token without the party mark (as every token was before) does not get in.
        let now = Int64(Date().timeIntervalSince1970)
        let signer = CallTokenSigner(secret: Hex.decode(h.server.keys.tokenSecret) ?? [])
        let unmarked = signer.sign(CallTokenClaims(app: app, sub: "eve", sid: sid, iat: now, exp: now + 60, jti: "eve1", aud: CallTokenClaims.audience(appId: app)))
        let intruder = try SignalProbe(url: url)
        intruder.send(.join(.init(callToken: unmarked, sessionId: sid)))
        XCTAssertEqual(intruder.error(), "ERR_NOT_CALL_PARTY")
        XCTAssertTrue(intruder.waitClosed())
        // The parties get in.
        let annRoom = try SignalProbe(url: url), bobRoom = try SignalProbe(url: url)
        annRoom.send(.join(.init(callToken: try h.callToken(uid: "ann", session: sid), sessionId: sid)))
        bobRoom.send(.join(.init(callToken: try h.callToken(uid: "bob", session: sid), sessionId: sid)))
        XCTAssertNotNil(annRoom.joined())
        XCTAssertNotNil(bobRoom.joined())
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="room_access"} 1"#))
    }

    func testRejectBusyAndCancelBetweenRealClients() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try Self.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try Self.online(url: url, appId: app, authKey: key, uid: "bob")
        let cat = try Self.online(url: url, appId: app, authKey: key, uid: "cat")

        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .video, timeoutSeconds: nil))
        let first = try XCTUnwrap(call(bob, .incoming)?.sessionId)
        bob.send(.rejectCall(sessionId: first, status: .rejected))
        XCTAssertEqual(call(ann, .rejected)?.status, .rejected)

        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        let second = try XCTUnwrap(call(bob, .incoming, except: first)?.sessionId)
        ann.send(.rejectCall(sessionId: second, status: .cancelled))
        XCTAssertEqual(call(bob, .cancelled)?.status, .cancelled)

        // Bob calls Cat; Ann calling Bob now finds him busy.
        bob.send(.initiateCall(receiverId: "cat", receiverType: .user, type: .audio, timeoutSeconds: nil))
        XCTAssertNotNil(call(cat, .incoming))
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        XCTAssertEqual(call(ann, .busy)?.status, .busy)

        // Bad input: clear errors, nothing recorded.
        cat.send(.initiateCall(receiverId: "cat", receiverType: .user, type: .audio, timeoutSeconds: nil))
        XCTAssertEqual(cat.error(), "ERR_CALL_SELF")
        let stranger = try SignalProbe(url: url)
        stranger.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        XCTAssertEqual(stranger.error(), "SIGNAL_HELLO_FIRST")
        stranger.send(.hello(authToken: "not-a-token"))
        XCTAssertEqual(stranger.wait { if case .error(.authTokenInvalid, _) = $0 { return true }; return false } != nil, true)
        let statuses = (h.request("GET", "/v3/calls", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []).compactMap { $0["status"] as? String }
        XCTAssertEqual(statuses.sorted(), ["busy", "cancelled", "initiated", "rejected"], "\(statuses)")
        // Bob's call logs: the calls that rang him (never joined), with who called whom.
        let bobAuth = ["authToken": try Self.authToken(url: url, appId: app, authKey: key, uid: "bob")]
        let mine = h.request("GET", "/v3/calls?receiverType=user", headers: bobAuth).json["data"] as? [[String: Any]] ?? []
        XCTAssertEqual(mine.count, 4, "rung, calling, or busy-called: \(mine)")
        let rejected = try XCTUnwrap(mine.first { $0["status"] as? String == "rejected" })
        XCTAssertEqual((rejected["initiator"] as? [String: Any])?["id"] as? String, "ann")
        XCTAssertEqual((rejected["receiver"] as? [String: Any])?["id"] as? String, "bob")
        XCTAssertEqual(rejected["receiverType"] as? String, "user")
        let missed = h.request("GET", "/v3/calls?status=missed", headers: bobAuth).json["data"] as? [[String: Any]] ?? []
        XCTAssertEqual(missed.compactMap { $0["status"] as? String }, ["cancelled"])
    }

    func testUnansweredByTimeoutAndEndedByTheReceiver() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try Self.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try Self.online(url: url, appId: app, authKey: key, uid: "bob")
        let initiated = Date()
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: 5))
        let rang = try XCTUnwrap(call(bob, .incoming)?.sessionId)
        // Not before its 5 s; the window after is wide because a stalled machine (CI once took
        // over 15 s) is not what this checks, and the store's figures say where time went if late.
        let unanswered = call(ann, .unanswered, timeout: 30)
        let waited = Date().timeIntervalSince(initiated)
        XCTAssertEqual(unanswered?.status, .unanswered, "nobody answered in 5 s; after \(waited) s the store says: "
                       + h.request("GET", "/metrics").text.split(separator: "\n").filter { $0.hasPrefix("callroom_store") }.joined(separator: "; "))
        XCTAssertGreaterThan(waited, 4.9, "not before the timeout")
        XCTAssertEqual(call(bob, .unanswered)?.members.first?.outcome, .unanswered)
        bob.send(.acceptCall(sessionId: rang))
        XCTAssertEqual(bob.error(), "ERR_CALL_NOT_FOUND", "too late")
        // The receiver ends an accepted call: both hear it.
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        let second = try XCTUnwrap(call(bob, .incoming, except: rang)?.sessionId)
        bob.send(.acceptCall(sessionId: second))
        XCTAssertNotNil(call(ann, .accepted, except: rang))
        bob.send(.endCall(sessionId: second))
        XCTAssertEqual(call(ann, .ended)?.sessionId, second)
        let cat = try Self.online(url: url, appId: app, authKey: key, uid: "cat")
        cat.send(.endCall(sessionId: second))
        XCTAssertEqual(cat.error(), "ERR_CALL_NOT_FOUND")
        let statuses = Dictionary(uniqueKeysWithValues: [rang, second].map { sid in
            (sid, h.request("GET", "/v3/calls/\(sid)", headers: h.adminHeaders).data["status"] as? String ?? "?") })
        XCTAssertEqual(statuses, [rang: "unanswered", second: "ended"])
    }

    func testAGroupRingsItsMembers() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let devices = try ["ann", "bob", "cat", "dan"].map { try Self.online(url: url, appId: app, authKey: key, uid: $0) }
        let (ann, bob, cat, dan) = (devices[0], devices[1], devices[2], devices[3])
        let annAuth = try Self.authToken(url: url, appId: app, authKey: key, uid: "ann")
        let created = h.request("POST", "/v3/groups", headers: ["authToken": annAuth],
                                body: #"{"guid":"team","name":"The Team","members":["bob","cat","dan"]}"#)
        XCTAssertEqual(created.data["owner"] as? String, "ann", "\(created)")
        XCTAssertEqual((created.data["members"] as? [String])?.count, 4)
        ann.send(.initiateCall(receiverId: "team", receiverType: .group, type: .audio, timeoutSeconds: 30))
        let sid = try XCTUnwrap(call(bob, .incoming)?.sessionId)
        XCTAssertNotNil(call(cat, .incoming))
        XCTAssertNotNil(call(dan, .incoming))
        bob.send(.acceptCall(sessionId: sid))
        cat.send(.acceptCall(sessionId: sid))
        dan.send(.rejectCall(sessionId: sid, status: .rejected))
        XCTAssertNotNil(call(cat, .accepted))
        XCTAssertNotNil(dan.wait { if case .call(.rejected, _, _) = $0 { return true }; return false })
        ann.send(.endCall(sessionId: sid))
        let ended = try XCTUnwrap(call(bob, .ended))
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: ended.members.map { ($0.uid, $0.outcome) }), ["bob": .accepted, "cat": .accepted, "dan": .rejected])
        XCTAssertEqual(h.request("GET", "/v3/calls/\(sid)", headers: h.adminHeaders).data["status"] as? String, "ended")
        let logs = h.request("GET", "/v3/calls?guid=team", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
        XCTAssertEqual(logs.count, 1)
        XCTAssertEqual(logs.first?["receiverType"] as? String, "group")
        XCTAssertEqual((logs.first?["receiver"] as? [String: Any])?["name"] as? String, "The Team")
        // Not a member: refused.
        let eve = try Self.online(url: url, appId: app, authKey: key, uid: "eve")
        eve.send(.initiateCall(receiverId: "team", receiverType: .group, type: .audio, timeoutSeconds: nil))
        XCTAssertEqual(eve.error(), "ERR_NOT_GROUP_MEMBER")
    }

    /// `kill -9` while ringing: after the restart the call still rings (for the rest of its
    /// timeout, on devices that come back), and one past its timeout is `unanswered`.
    func testAServerKilledWhileRingingNeitherLosesTheCallNorRingsForever() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crring-\(UUID().uuidString.prefix(6))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var server = try CallroomdProcess(dataDir: dir, extra: ["--log-level", "error"])
        let (app, key, apiKey) = (server.appId, server.authKey, server.apiKey)  // (keys are printed on the first start only)
        var ann = try Self.online(url: server.url, appId: app, authKey: key, uid: "ann")
        let cat = try Self.online(url: server.url, appId: app, authKey: key, uid: "cat")
        _ = try Self.online(url: server.url, appId: app, authKey: key, uid: "bob")  // (bob exists)
        _ = try Self.online(url: server.url, appId: app, authKey: key, uid: "dan")
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: 5))
        let rings = try XCTUnwrap(call(ann, .initiated)?.sessionId)
        cat.send(.initiateCall(receiverId: "dan", receiverType: .user, type: .audio, timeoutSeconds: 300))
        let longer = try XCTUnwrap(call(cat, .initiated)?.sessionId)
        server.process.signal(SIGKILL)
        _ = server.process.wait()
        Thread.sleep(forTimeInterval: 5.5)  // the first call's timeout passes while the server is down
        server = try CallroomdProcess(dataDir: dir, extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let status = { (sid: String) in
            BlockingHTTP.request("GET", server.url + "/v3/calls/\(sid)", headers: ["apikey": apiKey]).data["status"] as? String
        }
        XCTAssertEqual(status(rings), "unanswered", "past its timeout while down")
        XCTAssertEqual(status(longer), "initiated", "still ringing")
        let dan = try Self.online(url: server.url, appId: app, authKey: key, uid: "dan")
        XCTAssertEqual(call(dan, .incoming)?.sessionId, longer, "rings again on a device that comes back")
        ann = try Self.online(url: server.url, appId: app, authKey: key, uid: "cat")
        dan.send(.acceptCall(sessionId: longer))
        XCTAssertEqual(call(ann, .accepted)?.sessionId, longer)
        XCTAssertEqual(status(longer), "ongoing")

        // Killed again after the accept: the restart ends the call (at its last heartbeat) and
        // nothing rings.
        server.process.signal(SIGKILL)
        _ = server.process.wait()
        server = try CallroomdProcess(dataDir: dir, extra: ["--log-level", "error"])
        XCTAssertEqual(status(longer), "ended")
        let after = BlockingHTTP.request("GET", server.url + "/v3/calls/\(longer)", headers: ["apikey": apiKey]).data
        XCTAssertNotNil(after["endedAt"] as? Int64)
        let danAgain = try Self.online(url: server.url, appId: app, authKey: key, uid: "dan")
        XCTAssertNil(danAgain.wait(timeout: 0.5) { if case .call(.incoming, _, _) = $0 { return true }; return false })
    }
}
