import CallRoomTestSupport
import CallsCore
import CallsSecurity
@testable import CallsServer
@testable import CallsStore
import CallsTransport
import Foundation
import XCTest

/// Webhooks against a real HTTP receiver: signed, in order, retried until acknowledged, and
/// durable across `kill -9`.
final class WebhookTests: XCTestCase {
    let secret = "s3cret-s3cret-s3cret"

    func testTransitionsAreDeliveredSignedInOrderAndRetriedUntilAcknowledged() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        // The first delivery attempt fails (500): it is retried, with the same id and bytes.
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"), statuses: [500])
        defer { receiver.stop() }
        let h = try ServerHarness {
            $0.ringLimits = .unlimited  // (many calls between two users, quickly)
            $0.webhooks = [WebhookConfig(id: "main", url: receiver.url, secret: self.secret)] }
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        guard case .call(_, let call, _)? = bob.wait({ if case .call(.incoming, _, _) = $0 { return true }; return false }) else { return XCTFail() }
        bob.send(.rejectCall(sessionId: call.sessionId, status: .rejected))
        XCTAssertTrue(receiver.waitFor(3), "two events, one of them twice: \(receiver.received.map(\.answered))")
        let got = receiver.received
        XCTAssertEqual(got.map(\.answered), [500, 200, 200])
        XCTAssertEqual(got[0].headers["x-callroom-delivery-id"], got[1].headers["x-callroom-delivery-id"], "a retry keeps its delivery id")
        XCTAssertEqual(got[0].body, got[1].body, "and its bytes")
        XCTAssertEqual(got[1].headers["x-callroom-attempt"], "2")
        var triggers: [String] = []
        for r in got.dropFirst() {
            XCTAssertEqual(r.headers["x-cometchat-signature"], Hex.encode(Crypto.hmacSHA256(key: Array(secret.utf8), message: Array(r.body.utf8))),
                           "HMAC-SHA256 of the raw body")
            let ts = try XCTUnwrap(r.headers["x-callroom-timestamp"])
            XCTAssertEqual(r.headers["x-callroom-signature"],
                           Hex.encode(Crypto.hmacSHA256(key: Array(secret.utf8), message: Array("\(ts).\(r.body)".utf8))))
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any])
            XCTAssertEqual(o["appId"] as? String, app)
            XCTAssertEqual(o["webhook"] as? String, "main")
            XCTAssertEqual(o["type"] as? String, "call")
            let data = try XCTUnwrap(o["data"] as? [String: Any])
            XCTAssertEqual(data["sessionId"] as? String, call.sessionId)
            XCTAssertEqual((data["initiator"] as? [String: Any])?["uid"] as? String, "ann")
            XCTAssertEqual((data["receiver"] as? [String: Any])?["uid"] as? String, "bob")
            triggers.append(o["trigger"] as? String ?? "?")
        }
        XCTAssertEqual(triggers, ["call_initiated", "call_rejected"], "in the order they happened")
        // Listed over REST; counted in /metrics.
        let listed = h.request("GET", "/v3/webhooks/deliveries?status=delivered", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
        XCTAssertEqual(listed.count, 2)
        XCTAssertEqual(listed.last?["attempts"] as? Int, 2)
        XCTAssertTrue(h.server.metricsText().contains("callroom_webhook_deliveries_total 2"))
        XCTAssertTrue(h.server.metricsText().contains("callroom_webhook_failed_attempts_total 1"))
    }

    func testMeetingsAndARingingCallsRoomSendTheirOwnTriggers() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"))
        defer { receiver.stop() }
        let h = try ServerHarness {
            $0.ringLimits = .unlimited  // (many calls between two users, quickly)
            $0.webhooks = [WebhookConfig(id: "main", url: receiver.url, secret: self.secret)] }
        defer { h.stop(); h.removeData() }
        // A meeting: two join, both leave.
        let a = try SignalProbe(url: h.server.url), b = try SignalProbe(url: h.server.url)
        a.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "standup"), displayName: "Ann A.")))
        XCTAssertNotNil(a.joined())
        b.send(.join(.init(callToken: try h.callToken(uid: "bob", session: "standup"))))
        XCTAssertNotNil(b.joined())
        a.send(.leave)
        XCTAssertTrue(a.waitClosed())
        b.send(.leave)
        XCTAssertTrue(b.waitClosed())
        XCTAssertTrue(receiver.waitFor(6), "\(receiver.received.count)")
        let events = receiver.received.compactMap { r -> (String, String?)? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any] else { return nil }
            let p = (o["data"] as? [String: Any])?["participant"] as? [String: Any]
            return (o["trigger"] as? String ?? "?", p?["name"] as? String)
        }
        XCTAssertEqual(events.map(\.0), ["meeting_started", "meeting_participant_joined", "meeting_participant_joined",
                                        "meeting_participant_left", "meeting_participant_left", "meeting_ended"])
        XCTAssertEqual(events[1].1, "Ann A.", "the name the join recorded")
        XCTAssertTrue(receiver.received.allSatisfy { $0.body.contains(#""type":"meet""#) })
        // A ringing call's room: call_participant_* (call_started / call_ended come from the ring registry).
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        guard case .call(_, let call, _)? = bob.wait({ if case .call(.incoming, _, _) = $0 { return true }; return false }) else { return XCTFail() }
        bob.send(.acceptCall(sessionId: call.sessionId))
        XCTAssertNotNil(ann.wait { if case .call(.accepted, _, _) = $0 { return true }; return false }, "ann hears the call accepted")
        let room = try SignalProbe(url: url)
        room.send(.join(.init(callToken: try h.callToken(uid: "ann", session: call.sessionId), sessionId: call.sessionId)))
        XCTAssertNotNil(room.joined())
        room.send(.leave)
        XCTAssertTrue(receiver.waitFor(11), "\(receiver.received.count)")
        let ring = receiver.received.dropFirst(6).compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any])?["trigger"] as? String
        }
        XCTAssertEqual(ring, ["call_initiated", "call_started", "call_participant_joined", "call_participant_left", "call_ended"])
    }

    func testADeadLetterCanBeResentAndTriggersFilter() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"), statuses: [503, 503])
        defer { receiver.stop() }
        let h = try ServerHarness {
            $0.ringLimits = .unlimited  // (many calls between two users, quickly)
            $0.webhooks = [WebhookConfig(id: "busy-only", url: receiver.url, secret: self.secret, triggers: ["call_busy"])]
            $0.webhookMaxAttempts = 2
        }
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        _ = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        guard case .call(_, let call, _)? = ann.wait({ if case .call(.initiated, _, _) = $0 { return true }; return false }) else { return XCTFail() }
        ann.send(.rejectCall(sessionId: call.sessionId, status: .cancelled))
        // Only call_busy is wanted: nothing is queued for this call.
        XCTAssertNotNil(ann.wait { if case .call(.cancelled, _, _) = $0 { return true }; return false }, "ann hears the call cancelled")
        XCTAssertEqual((h.request("GET", "/v3/webhooks/deliveries", headers: h.adminHeaders).json["data"] as? [[String: Any]])?.count, 0)
        // A busy call is: after two failed attempts it is a dead letter, re-sent by the operator.
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        XCTAssertNotNil(ann.wait { if case .call(.initiated, let c, _) = $0 { return c.sessionId != call.sessionId }; return false }, "ann hears the call initiated")
        let cat = try RingingTests.online(url: url, appId: app, authKey: key, uid: "cat")
        cat.send(.initiateCall(receiverId: "ann", receiverType: .user, type: .audio, timeoutSeconds: nil))  // ann is calling: busy
        XCTAssertTrue(receiver.waitFor(2))
        var dead: [[String: Any]] = []
        let end = Date().addingTimeInterval(5)
        repeat {
            dead = h.request("GET", "/v3/webhooks/deliveries?status=dead", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
        } while dead.isEmpty && Date() < end
        let id = try XCTUnwrap(dead.first?["deliveryId"] as? String, "dead-lettered after 2 attempts")
        XCTAssertEqual(h.request("POST", "/v3/webhooks/deliveries/\(id)/retry", headers: h.adminHeaders).data["success"] as? Bool, true)
        XCTAssertTrue(receiver.waitFor(3))
        XCTAssertEqual(receiver.received.last?.answered, 200)
        XCTAssertEqual(receiver.received.last?.headers["x-callroom-delivery-id"], id)
        XCTAssertEqual(h.request("POST", "/v3/webhooks/deliveries/nope/retry", headers: h.adminHeaders).errorCode, "ERR_DELIVERY_NOT_FOUND")
    }

    /// `kill -9` with a backlog (the receiver is down): after the restart every event is delivered.
    func testABacklogSurvivesKill9() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        // A port nobody listens on yet, held until the receiver starts on it (found free and let
        // go, another process could take it while the backlog builds).
        let hold = try TCPPortHold()
        defer { hold.close() }
        let port = hold.port
        let config = tmp.file("config.json")
        try #"{"webhooks": [{"id": "main", "url": "http://127.0.0.1:\#(port)/hook", "secret": "\#(secret)"}]}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        var server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--config", config, "--log-level", "error"])
        let (app, key) = (server.appId, server.authKey)
        let ann = try RingingTests.online(url: server.url, appId: app, authKey: key, uid: "ann")
        let bob = try RingingTests.online(url: server.url, appId: app, authKey: key, uid: "bob")
        var sessions: [String] = []
        for _ in 0..<3 {
            ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
            guard case .call(_, let c, _)? = bob.wait({ if case .call(.incoming, let c, _) = $0 { return !sessions.contains(c.sessionId) }; return false })
            else { return XCTFail("no incoming") }
            sessions.append(c.sessionId)
            ann.send(.rejectCall(sessionId: c.sessionId, status: .cancelled))
            XCTAssertNotNil(ann.wait { if case .call(.cancelled, let x, _) = $0 { return x.sessionId == c.sessionId }; return false }, "ann hears the call cancelled")
        }
        server.process.signal(SIGKILL)
        _ = server.process.wait()
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"), port: port)
        defer { receiver.stop() }
        hold.close()
        server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--config", config, "--log-level", "error"])
        defer { _ = server.stop() }
        XCTAssertTrue(receiver.waitFor(6, timeout: 20), "3 calls × (initiated, cancelled): \(receiver.received.count)")
        let ids = Set(receiver.received.compactMap { $0.headers["x-callroom-delivery-id"] })
        XCTAssertEqual(ids.count, 6, "every delivery id, none lost")
        for sid in sessions {
            let triggers = receiver.received.filter { $0.body.contains(sid) }.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any])?["trigger"] as? String
            }
            XCTAssertEqual(Array(triggers.prefix(2)), ["call_initiated", "call_cancelled"], "per-session order")
        }
    }

    /// Rings Bob and cancels it, `n` times: two events (initiated, cancelled) each.
    private func ringAndCancel(_ ann: SignalProbe, _ bob: SignalProbe, times n: Int) -> [String] {
        var sessions: [String] = []
        for _ in 0..<n {
            ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
            guard case .call(_, let c, _)? = bob.wait({ if case .call(.incoming, let c, _) = $0 { return !sessions.contains(c.sessionId) }; return false })
            else { XCTFail("no incoming"); return sessions }
            sessions.append(c.sessionId)
            ann.send(.rejectCall(sessionId: c.sessionId, status: .cancelled))
            XCTAssertNotNil(ann.wait { if case .call(.cancelled, let x, _) = $0 { return x.sessionId == c.sessionId }; return false }, "ann hears the call cancelled")
        }
        return sessions
    }

    private func trigger(_ body: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["trigger"] as? String
    }

    /// The operator adds, changes and removes webhooks over REST, without a restart; the config
    /// file's stay as they are.
    func testWebhooksAreManagedOverRESTWithoutARestart() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        let fixed = try WebhookReceiver(log: tmp.file("fixed.jsonl"))
        defer { fixed.stop() }
        let ops = try WebhookReceiver(log: tmp.file("ops.jsonl"))
        defer { ops.stop() }
        let dir = tmp.file("data")
        var h = try ServerHarness(dataDir: dir) { $0.webhooks = [WebhookConfig(id: "fixed", url: fixed.url, secret: self.secret, triggers: ["call_ended"])] }
        let admin = h.adminHeaders
        let listed = h.request("GET", "/v3/webhooks", headers: admin)
        XCTAssertEqual((listed.json["data"] as? [[String: Any]])?.map { $0["source"] as? String }, ["config"])
        XCTAssertFalse(listed.text.contains(secret), "secrets are never shown")
        for (body, code) in [(#"{"url":"ftp://x","secret":"0123456789abcdef"}"#, "ERR_WEBHOOK_INVALID"),
                             (#"{"url":"http://x","secret":"short"}"#, "ERR_WEBHOOK_INVALID"),
                             (#"{"url":"http://x","secret":"0123456789abcdef","triggers":["call_exploded"]}"#, "ERR_WEBHOOK_INVALID"),
                             (#"{"id":"bad id","url":"http://x","secret":"0123456789abcdef"}"#, "ERR_WEBHOOK_INVALID"),
                             (#"{"id":"fixed","url":"http://x","secret":"0123456789abcdef"}"#, "ERR_WEBHOOK_IN_CONFIG")] {
            XCTAssertEqual(h.request("POST", "/v3/webhooks", headers: admin, body: body).errorCode, code, body)
        }
        XCTAssertEqual(h.request("POST", "/v3/webhooks", body: #"{"url":"http://x","secret":"0123456789abcdef"}"#).errorCode, "AUTH_ERR_EMPTY_APIKEY")
        let added = h.request("POST", "/v3/webhooks", headers: admin, body: #"{"id":"ops","url":"\#(ops.url)","secret":"ops-secret-0123456789"}"#)
        XCTAssertEqual(added.data["source"] as? String, "api", "\(added)")
        XCTAssertEqual(h.request("POST", "/v3/webhooks", headers: admin, body: #"{"id":"ops","url":"\#(ops.url)","secret":"ops-secret-0123456789"}"#).errorCode,
                       "ERR_WEBHOOK_ALREADY_EXISTS")
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        var ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        var bob = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        _ = ringAndCancel(ann, bob, times: 1)
        XCTAssertTrue(ops.waitFor(2))
        XCTAssertEqual(ops.received.map { trigger($0.body) }, ["call_initiated", "call_cancelled"])
        XCTAssertEqual(ops.received[0].headers["x-cometchat-signature"],
                       Hex.encode(Crypto.hmacSHA256(key: Array("ops-secret-0123456789".utf8), message: Array(ops.received[0].body.utf8))))
        // Replaced whole: new secret, one trigger.
        XCTAssertEqual(h.request("PUT", "/v3/webhooks/ops", headers: admin,
                                 body: #"{"url":"\#(ops.url)","secret":"new-secret-0123456789","triggers":["call_initiated"]}"#).status, 200)
        XCTAssertEqual(h.request("PUT", "/v3/webhooks/nope", headers: admin, body: #"{"url":"http://x","secret":"0123456789abcdef"}"#).errorCode,
                       "ERR_WEBHOOK_NOT_FOUND")
        _ = ringAndCancel(ann, bob, times: 1)
        XCTAssertTrue(ops.waitFor(3))
        XCTAssertTrue(holds(for: 0.3) { ops.received.count == 3 }, "call_cancelled is no longer wanted")
        XCTAssertEqual(ops.received[2].headers["x-cometchat-signature"],
                       Hex.encode(Crypto.hmacSHA256(key: Array("new-secret-0123456789".utf8), message: Array(ops.received[2].body.utf8))))
        // Kept across a restart.
        h.stop()
        h = try ServerHarness(dataDir: dir) { $0.webhooks = [WebhookConfig(id: "fixed", url: fixed.url, secret: self.secret, triggers: ["call_ended"])] }
        defer { h.stop(); h.removeData() }
        let after = (h.request("GET", "/v3/webhooks", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? [])
        XCTAssertEqual(after.map { $0["id"] as? String }, ["fixed", "ops"])
        XCTAssertEqual(after.last?["triggers"] as? [String], ["call_initiated"])
        // Removed: nothing more; the config file's cannot be removed here.
        XCTAssertEqual(h.request("DELETE", "/v3/webhooks/fixed", headers: h.adminHeaders).errorCode, "ERR_WEBHOOK_IN_CONFIG")
        XCTAssertEqual(h.request("DELETE", "/v3/webhooks/ops", headers: h.adminHeaders).status, 200)
        XCTAssertEqual(h.request("DELETE", "/v3/webhooks/ops", headers: h.adminHeaders).errorCode, "ERR_WEBHOOK_NOT_FOUND")
        ann = try RingingTests.online(url: h.server.url, appId: app, authKey: key, uid: "ann")
        bob = try RingingTests.online(url: h.server.url, appId: app, authKey: key, uid: "bob")
        _ = ringAndCancel(ann, bob, times: 1)
        XCTAssertTrue(holds(for: 0.5) { ops.received.count == 3 && fixed.received.isEmpty }, "a deleted webhook hears nothing")
        XCTAssertEqual(ops.received.count, 3)
        XCTAssertEqual(fixed.received.count, 0, "the fixed one wants only call_ended")
    }

    /// An app holds at most 100 webhooks added over REST: each event is a delivery row to every
    /// one, so a loop of `POST /v3/webhooks` (100 a second within the REST limit) made every call
    /// write without end. The 101st is 429 `ERR_LIMIT_REACHED` and not added; removing one makes
    /// room; replacing one is no addition.
    func testAnAppHoldsAtMostAHundredWebhooks() throws {
        let h = try ServerHarness { $0.restRequestsPerSecond = 10_000 }
        defer { h.stop(); h.removeData() }
        for i in 0..<100 {
            XCTAssertEqual(h.request("POST", "/v3/webhooks", headers: h.adminHeaders,
                                     body: #"{"id":"w\#(i)","url":"http://127.0.0.1:9/\#(i)","secret":"0123456789abcdef"}"#).status, 200, "\(i)")
        }
        let over = h.request("POST", "/v3/webhooks", headers: h.adminHeaders, body: #"{"id":"w100","url":"http://127.0.0.1:9/x","secret":"0123456789abcdef"}"#)
        XCTAssertEqual(over.status, 429)
        XCTAssertEqual(over.errorCode, "ERR_LIMIT_REACHED")
        XCTAssertEqual(h.request("POST", "/v3/webhooks", headers: h.adminHeaders, body: #"{"id":"w5","url":"http://127.0.0.1:9/x","secret":"0123456789abcdef"}"#).errorCode,
                       "ERR_WEBHOOK_ALREADY_EXISTS", "one that exists is said so, full or not")
        XCTAssertEqual(h.request("PUT", "/v3/webhooks/w7", headers: h.adminHeaders, body: #"{"url":"http://127.0.0.1:9/y","secret":"0123456789abcdef"}"#).status, 200)
        XCTAssertEqual((h.request("GET", "/v3/webhooks", headers: h.adminHeaders).json["data"] as? [Any])?.count, 100)
        XCTAssertEqual(h.request("DELETE", "/v3/webhooks/w0", headers: h.adminHeaders).status, 200)
        XCTAssertEqual(h.request("POST", "/v3/webhooks", headers: h.adminHeaders, body: #"{"id":"w100","url":"http://127.0.0.1:9/x","secret":"0123456789abcdef"}"#).status, 200)
    }

    /// A webhook is a request the server makes wherever it is told: never to the cloud's
    /// metadata service (169.254.169.254 and its kin) or another link-local, multicast or
    /// unspecified address — refused when it is written as one, and on the address connected to
    /// when a name resolves to one (nothing sent; the delivery is dead at once, its error says why).
    func testAWebhookNeverGoesToALinkLocalOrMetadataAddress() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        for url in ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:8080/x", "http://0.0.0.0:9/x", "https://[::ffff:169.254.169.254]/x",
                    "http://[fd00:ec2::254]/x", "http://224.0.0.1/x"] {
            let r = h.request("POST", "/v3/webhooks", headers: h.adminHeaders, body: #"{"url":"\#(url)","secret":"0123456789abcdef"}"#)
            XCTAssertEqual(r.errorCode, "ERR_WEBHOOK_INVALID", url)
            XCTAssertTrue(r.text.contains("link-local"), r.text)
        }
        XCTAssertThrowsError(try ServerConfigFile.parse(Data(#"{"webhooks":[{"url":"http://169.254.169.254/x","secret":"0123456789abcdef"}]}"#.utf8)))
        for url in ["http://127.0.0.1:9/x", "http://10.1.2.3/x", "http://192.168.1.5/x", "https://hooks.example.com/x"] {
            XCTAssertEqual(h.request("POST", "/v3/webhooks", headers: h.adminHeaders, body: #"{"url":"\#(url)","secret":"0123456789abcdef"}"#).status, 200,
                           "\(url): loopback, private networks and names are the operator's to choose")
        }
        // Checked again on the address libcurl connected to: here the refused block is loopback,
        // so a real receiver on 127.0.0.1 stands for a name that resolves to a metadata address.
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"))
        defer { receiver.stop() }
        let client = try CurlClient()
        client.refusedDestinations = [try XCTUnwrap(IPNetwork("127.0.0.0/8"))]
        let refused = client.post(receiver.url.replacingOccurrences(of: "127.0.0.1", with: "localhost"), headers: [], body: Array("{}".utf8), timeoutMs: 2000)
        guard case .failure(let e) = refused else { return XCTFail("sent: \(refused)") }
        XCTAssertTrue(e.isRefusedDestination, e.description)
        XCTAssertTrue(e.message.contains("127.0.0.1"), e.message)
        client.refusedDestinations = IPNetwork.neverDialled
        XCTAssertEqual(try client.post(receiver.url, headers: [], body: Array("{}".utf8), timeoutMs: 2000).get().status, 200)
        XCTAssertEqual(receiver.received.count, 1, "the refused request never reached the receiver")
        for (address, never) in [("169.254.169.254", true), ("::ffff:169.254.169.254", true), ("fe80::1", true), ("fd00:ec2::254", true),
                                 ("100.100.100.200", true), ("127.0.0.1", false), ("10.0.0.1", false), ("fd00::1", false), ("203.0.113.7", false)] {
            let a = try XCTUnwrap(IPAddress(address))
            XCTAssertEqual(IPNetwork.neverDialled.contains { $0.contains(a) }, never, address)
        }
    }

    /// A dead receiver never grows the queue past its bound: the oldest are dropped, counted, listed.
    func testTheQueuePerWebhookIsBoundedByDroppingTheOldest() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        // A port held and never listened on: every delivery is refused for the test's length.
        let hold = try TCPPortHold()
        defer { hold.close() }
        let port = hold.port
        let h = try ServerHarness {
            $0.ringLimits = .unlimited  // (many calls between two users, quickly)
            $0.webhooks = [WebhookConfig(id: "down", url: "http://127.0.0.1:\(port)/hook", secret: self.secret)]
            $0.webhookQueueLimit = 10
            $0.webhookMaxAttempts = 100
        }
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        let sessions = ringAndCancel(ann, bob, times: 8)
        XCTAssertEqual(sessions.count, 8)
        var dropped: [[String: Any]] = []
        eventually(5, poll: 0.1) {
            dropped = h.request("GET", "/v3/webhooks/deliveries?status=dropped&perPage=100", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
            return dropped.count >= 6
        }
        XCTAssertEqual(dropped.count, 6, "16 events, a bound of 10")
        let pending = h.request("GET", "/v3/webhooks/deliveries?status=pending&perPage=100", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
        XCTAssertEqual(pending.count, 10)
        let oldestKept = pending.compactMap { $0["id"] as? Int }.min() ?? 0
        XCTAssertTrue(dropped.allSatisfy { ($0["id"] as? Int ?? .max) < oldestKept }, "the oldest went")
        XCTAssertTrue(h.server.metricsText().contains("callroom_webhook_dropped_total 6"))
    }

    /// A failing receiver is paused as a whole: a backlog does not turn into one failed request
    /// per delivery per retry, and all of it goes once the receiver answers.
    func testAFailingReceiverIsPausedNotHammered() throws {
        let tmp = TemporaryDirectory("callroom-hooks")
        defer { tmp.remove() }
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"), downSeconds: 3)
        defer { receiver.stop() }
        let h = try ServerHarness {
            $0.ringLimits = .unlimited  // (many calls between two users, quickly)
            $0.webhooks = [WebhookConfig(id: "flaky", url: receiver.url, secret: self.secret)]
            $0.webhookMaxAttempts = 100
        }
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        XCTAssertEqual(ringAndCancel(ann, bob, times: 10).count, 10)
        eventually(15, poll: 0.05) { receiver.received.filter({ $0.answered == 200 }).count >= 20 }
        let got = receiver.received
        let refused = got.filter { $0.answered == 503 }.count
        XCTAssertEqual(got.filter { $0.answered == 200 }.count, 20, "every event delivered once it answered")
        XCTAssertGreaterThan(refused, 0)
        XCTAssertLessThanOrEqual(refused, 6, "about one probe per pause over 3 s, not one per delivery (20 queued)")
        let delivered = got.filter { $0.answered == 200 }.compactMap { trigger($0.body) }
        XCTAssertEqual(delivered.filter { $0 == "call_initiated" }.count, 10)
    }
}
