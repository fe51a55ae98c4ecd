import CallRoomTestSupport
import CallsCore
import CallsSecurity
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// VoIP push (APNs) and FCM against the stand-ins (`scripts/push-standin.py`: HTTP/2 over TLS
/// with a test CA, checking JWTs, headers and payloads as the real services do).
final class PushTests: XCTestCase {
    static let voipToken = String(repeating: "ab", count: 32)
    static let otherVoipToken = String(repeating: "cd", count: 32)
    static let fcmToken = "fcm-token:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    private func harness(_ standIn: PushStandIn, fcm: Bool = true) throws -> ServerHarness {
        try ServerHarness {
            $0.apns = APNsConfig(keyFile: standIn.apnsKeyFile, keyId: standIn.keyId, teamId: standIn.teamId, endpoint: standIn.endpoint,
                                 caFile: standIn.caFile)
            if fcm { $0.fcm = FCMConfig(serviceAccountFile: standIn.serviceAccountFile, endpoint: standIn.endpoint, caFile: standIn.caFile) }
        }
    }

    private func register(_ h: ServerHarness, auth: String, uid: String, _ token: String, _ platform: String,
                          bundle: String? = "com.example.callroom") -> BlockingHTTP.Reply {
        var body = #"{"token":"\#(token)","platform":"\#(platform)""#
        if let bundle { body += #","appBundleId":"\#(bundle)""# }
        return h.request("POST", "/v3/users/\(uid)/push_tokens", headers: ["authToken": auth], body: body + "}")
    }

    private func call(_ p: SignalProbe, _ kind: CallEventKind) -> WireCall? {
        if case .call(_, let c, _)? = p.wait({ if case .call(kind, _, _) = $0 { return true }; return false }) { return c }
        return nil
    }

    private func json(_ s: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any]) ?? [:]
    }

    func testAnIncomingCallPushesTheReceiversPhonesAndItsEndStopsThem() throws {
        let tmp = TemporaryDirectory("callroom-push")
        defer { tmp.remove() }
        let standIn = try PushStandIn(dir: tmp.path)
        defer { standIn.stop() }
        let h = try harness(standIn)
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        _ = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        let bobAuth = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "bob")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.voipToken.uppercased(), "apns_voip").data["token"] as? String, Self.voipToken,
                       "stored lower-case")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.fcmToken, "fcm", bundle: nil).status, 200)
        // A regular (alert) APNs token is kept for chat push; calls do not ring it.
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.otherVoipToken, "apns").status, 200)

        let before = Date().timeIntervalSince1970
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .video, timeoutSeconds: nil))
        let sid = try XCTUnwrap(call(ann, .initiated)?.sessionId)
        standIn.waitFor(1, service: "apns")
        standIn.waitFor(1, service: "fcm")
        var apns = standIn.requests.filter { $0.service == "apns" }
        XCTAssertEqual(apns.count, 1, "one VoIP push; the alert token is not rung")
        let ring = try XCTUnwrap(apns.first)
        XCTAssertEqual(ring.status, 200, "the stand-in verified the ES256 provider token: \(ring.reason ?? "")")
        XCTAssertEqual(ring.path, "/3/device/\(Self.voipToken)")
        XCTAssertEqual(ring.headers["apns-topic"], "com.example.callroom.voip")
        XCTAssertEqual(ring.headers["apns-push-type"], "voip")
        XCTAssertEqual(ring.headers["apns-priority"], "10")
        let expiration = try XCTUnwrap(ring.headers["apns-expiration"].flatMap(Double.init))
        XCTAssertEqual(expiration, before + 30, accuracy: 3, "expires 30 s after the call rang")
        XCTAssertNotNil(UUID(uuidString: ring.headers["apns-id"] ?? ""), "apns-id is a UUID")
        let payload = json(ring.body)
        XCTAssertEqual(payload["callAction"] as? String, "initiated")
        XCTAssertEqual(payload["sessionId"] as? String, sid)
        XCTAssertEqual(payload["callerUid"] as? String, "ann")
        XCTAssertEqual(payload["callerName"] as? String, "Ann")
        XCTAssertEqual(payload["callType"] as? String, "video")
        XCTAssertNotNil(payload["aps"])
        let fcm = try XCTUnwrap(standIn.requests.first { $0.service == "fcm" })
        XCTAssertEqual(fcm.status, 200, fcm.reason ?? "")
        XCTAssertEqual(fcm.path, "/v1/projects/callroom-test/messages:send")
        let message = try XCTUnwrap(json(fcm.body)["message"] as? [String: Any])
        XCTAssertEqual(message["token"] as? String, Self.fcmToken)
        XCTAssertEqual((message["android"] as? [String: Any])?["priority"] as? String, "high")
        XCTAssertEqual((message["android"] as? [String: Any])?["ttl"] as? String, "30s")
        XCTAssertEqual((message["data"] as? [String: String])?["sessionId"], sid)
        XCTAssertEqual(standIn.requests.filter { $0.service == "oauth" }.map(\.status), [200], "one OAuth exchange (RS256 assertion verified)")

        // The caller cancels: both phones get the matching end push.
        ann.send(.rejectCall(sessionId: sid, status: .cancelled))
        apns = standIn.waitFor(2, service: "apns")
        let fcms = standIn.waitFor(2, service: "fcm")
        XCTAssertEqual(apns.map(\.status), [200, 200])
        XCTAssertEqual(json(apns[1].body)["callAction"] as? String, "ended")
        XCTAssertEqual(json(apns[1].body)["reason"] as? String, "cancelled")
        XCTAssertEqual(((json(fcms[1].body)["message"] as? [String: Any])?["data"] as? [String: String])?["reason"], "cancelled")
        XCTAssertEqual(apns[0].headers["authorization"], apns[1].headers["authorization"], "the provider token is reused")
        XCTAssertEqual(standIn.requests.filter { $0.service == "oauth" }.count, 1, "and so is the access token")

        // Listed over REST with the services' ids; counted in /metrics.
        var listed: [[String: Any]] = []
        eventually(5, poll: 0.05) {
            listed = h.request("GET", "/v3/push/deliveries?sessionId=\(sid)", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
            return listed.filter({ $0["status"] as? String == "sent" }).count >= 4
        }
        XCTAssertEqual(listed.map { $0["status"] as? String }, ["sent", "sent", "sent", "sent"])
        XCTAssertTrue(listed.allSatisfy { ($0["providerId"] as? String)?.isEmpty == false })
        let metrics = h.server.metricsText()
        XCTAssertTrue(metrics.contains(#"callroom_push_sent_total{service="apns"} 2"#), metrics)
        XCTAssertTrue(metrics.contains(#"callroom_push_sent_total{service="fcm"} 2"#))
    }

    func testAGroupCallPushesEveryMemberAndAnswerElsewhereStopsThatUsersPhone() throws {
        let tmp = TemporaryDirectory("callroom-push")
        defer { tmp.remove() }
        let standIn = try PushStandIn(dir: tmp.path)
        defer { standIn.stop() }
        let h = try harness(standIn, fcm: false)
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        let bob = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        _ = try RingingTests.online(url: url, appId: app, authKey: key, uid: "cat")
        let annAuth = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "ann")
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: ["authToken": annAuth],
                                 body: #"{"guid":"team","name":"Team","members":["bob","cat"]}"#).status, 200)
        // The operator registers tokens too (apikey), and a bundle id may be given as the VoIP topic.
        XCTAssertEqual(h.request("POST", "/v3/users/bob/push_tokens", headers: h.adminHeaders,
                                 body: #"{"token":"\#(Self.voipToken)","platform":"apns_voip","appBundleId":"com.example.callroom.voip"}"#).status, 200)
        XCTAssertEqual(h.request("POST", "/v3/users/cat/push_tokens", headers: h.adminHeaders,
                                 body: #"{"token":"\#(Self.otherVoipToken)","platform":"apns_voip","appBundleId":"com.example.callroom"}"#).status, 200)
        ann.send(.initiateCall(receiverId: "team", receiverType: .group, type: .audio, timeoutSeconds: nil))
        let sid = try XCTUnwrap(call(bob, .incoming)?.sessionId)
        let rings = standIn.waitFor(2, service: "apns")
        XCTAssertEqual(Set(rings.map(\.path)), ["/3/device/\(Self.voipToken)", "/3/device/\(Self.otherVoipToken)"])
        XCTAssertTrue(rings.allSatisfy { $0.status == 200 && json($0.body)["guid"] as? String == "team" })
        // Bob answers on his laptop: his phone stops ringing; Cat's keeps ringing.
        bob.send(.acceptCall(sessionId: sid))
        let all = standIn.waitFor(3, service: "apns")
        XCTAssertEqual(all.count, 3)
        XCTAssertEqual(all[2].path, "/3/device/\(Self.voipToken)")
        XCTAssertEqual(json(all[2].body)["reason"] as? String, "answered")
        XCTAssertTrue(holds(for: 0.3) { standIn.requests.filter { $0.service == "apns" }.count == 3 }, "nothing for Cat, still ringing")
        _ = sid
    }

    func testDeadTokensArePurgedExpiredProviderTokensRenewedOnceAndThrottlingRetried() throws {
        let tmp = TemporaryDirectory("callroom-push")
        defer { tmp.remove() }
        let deadFCM = "fcm-dead:APA91b"
        let standIn = try PushStandIn(dir: tmp.path, options: ["--unregistered", Self.otherVoipToken, "--unregistered", deadFCM,
                                                               "--expire-first-provider-token", "--revoke-first-access-token", "--throttle", "1"])
        defer { standIn.stop() }
        let h = try harness(standIn)
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        _ = try RingingTests.online(url: url, appId: app, authKey: key, uid: "bob")
        let bobAuth = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "bob")
        for (t, p) in [(Self.voipToken, "apns_voip"), (Self.otherVoipToken, "apns_voip"), (Self.fcmToken, "fcm"), (deadFCM, "fcm")] {
            XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", t, p).status, 200)
        }
        ann.send(.initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil))
        XCTAssertNotNil(call(ann, .initiated))
        // Settled: every push either sent or failed, none pending.
        var listed: [[String: Any]] = []
        eventually(10, poll: 0.1) {
            listed = h.request("GET", "/v3/push/deliveries", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? []
            return listed.count >= 4 && !listed.contains { $0["status"] as? String == "pending" }
        }
        let byToken = Dictionary(uniqueKeysWithValues: listed.map { ($0["token"] as? String ?? "", $0) })
        XCTAssertEqual(byToken[Self.voipToken]?["status"] as? String, "sent")
        XCTAssertEqual(byToken[Self.fcmToken]?["status"] as? String, "sent")
        XCTAssertEqual(byToken[Self.otherVoipToken]?["status"] as? String, "failed")
        XCTAssertEqual(byToken[Self.otherVoipToken]?["lastReason"] as? String, "Unregistered")
        XCTAssertEqual(byToken[deadFCM]?["lastReason"] as? String, "UNREGISTERED")
        let apns = standIn.requests.filter { $0.service == "apns" }
        XCTAssertEqual(apns.first?.reason, "ExpiredProviderToken", "the stand-in refused the first provider token")
        XCTAssertNotEqual(apns[0].headers["authorization"], apns[1].headers["authorization"], "a new one was signed at once")
        XCTAssertFalse(apns.contains { $0.reason == "TooManyProviderTokenUpdates" })
        XCTAssertEqual(Set(apns.dropFirst().compactMap { $0.headers["authorization"] }).count, 1, "and only once")
        XCTAssertTrue(standIn.requests.contains { $0.reason == "TooManyRequests" || $0.reason == "QUOTA_EXCEEDED" }, "one push was throttled (429) …")
        XCTAssertTrue(standIn.requests.contains { $0.service == "fcm" && $0.status == 401 }, "the revoked access token answered 401 …")
        XCTAssertEqual(standIn.requests.filter { $0.service == "oauth" }.count, 2, "… and a new one was fetched")
        // The dead tokens are gone; the live ones stay.
        let tokens = (h.request("GET", "/v3/users/bob/push_tokens", headers: ["authToken": bobAuth]).json["data"] as? [[String: Any]] ?? [])
            .compactMap { $0["token"] as? String }
        XCTAssertEqual(Set(tokens), [Self.voipToken, Self.fcmToken])
        XCTAssertTrue(h.server.metricsText().contains("callroom_push_tokens_purged_total 2"))
    }

    func testTokenRegistrationValidatesAndOnlyTheOwnerOrOperatorManagesTokens() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let bobAuth = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "bob")
        let annAuth = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "ann")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.voipToken, "pushkit").errorCode, "ERR_PUSH_TOKEN_INVALID")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", "xyz", "apns_voip").errorCode, "ERR_PUSH_TOKEN_INVALID")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.voipToken, "apns_voip", bundle: nil).errorCode, "ERR_PUSH_TOKEN_INVALID",
                       "no bundle id and none configured")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", "bad token with spaces", "fcm").errorCode, "ERR_PUSH_TOKEN_INVALID")
        XCTAssertEqual(register(h, auth: annAuth, uid: "bob", Self.voipToken, "apns_voip").errorCode, "ERR_FORBIDDEN")
        XCTAssertEqual(register(h, auth: "nope", uid: "bob", Self.voipToken, "apns_voip").errorCode, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
        XCTAssertEqual(h.request("POST", "/v3/users/bob/push_tokens", headers: ["authToken": bobAuth], body: "{").errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.voipToken, "apns_voip").status, 200)
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.fcmToken, "fcm").status, 200)
        // The same device token registered again by another user moves to them.
        XCTAssertEqual(register(h, auth: annAuth, uid: "ann", Self.fcmToken, "fcm").status, 200)
        let bobs = h.request("GET", "/v3/users/bob/push_tokens", headers: ["authToken": bobAuth]).json["data"] as? [[String: Any]] ?? []
        XCTAssertEqual(bobs.map { $0["platform"] as? String }, ["apns_voip"])
        XCTAssertEqual(bobs.first?["appBundleId"] as? String, "com.example.callroom")
        XCTAssertEqual(h.request("GET", "/v3/users/bob/push_tokens", headers: ["authToken": annAuth]).errorCode, "ERR_FORBIDDEN")
        // Removal: one token (path, any case), an unknown one, all of them; deleting the user removes theirs.
        XCTAssertEqual(h.request("DELETE", "/v3/users/bob/push_tokens/\(Self.voipToken.uppercased())", headers: ["authToken": bobAuth]).data["deleted"] as? Int, 1)
        XCTAssertEqual(h.request("DELETE", "/v3/users/bob/push_tokens/\(Self.voipToken)", headers: ["authToken": bobAuth]).errorCode, "ERR_PUSH_TOKEN_NOT_FOUND")
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.voipToken, "apns_voip").status, 200)
        XCTAssertEqual(h.request("DELETE", "/v3/users/bob/push_tokens", headers: ["authToken": bobAuth],
                                 body: #"{"token":"\#(Self.voipToken)"}"#).data["deleted"] as? Int, 1)
        XCTAssertEqual(h.request("DELETE", "/v3/users/ann/push_tokens", headers: ["authToken": annAuth]).data["deleted"] as? Int, 1)
        XCTAssertEqual(register(h, auth: bobAuth, uid: "bob", Self.voipToken, "apns_voip").status, 200)
        XCTAssertEqual(h.request("DELETE", "/v3/users/bob", headers: h.adminHeaders).status, 200)
        XCTAssertEqual(h.request("GET", "/v3/users/bob/push_tokens", headers: h.adminHeaders).errorCode, "ERR_UID_NOT_FOUND")
        _ = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "bob")
        XCTAssertEqual((h.request("GET", "/v3/users/bob/push_tokens", headers: h.adminHeaders).json["data"] as? [Any])?.count, 0,
                       "a new bob does not inherit the old one's phones")
        // A user keeps at most maxPushTokensPerUser tokens: the oldest go.
        for i in 0..<(maxPushTokensPerUser + 3) {
            XCTAssertEqual(register(h, auth: annAuth, uid: "ann", "fcm-\(i)", "fcm").status, 200)
        }
        let anns = (h.request("GET", "/v3/users/ann/push_tokens", headers: h.adminHeaders).json["data"] as? [[String: Any]] ?? [])
            .compactMap { $0["token"] as? String }
        XCTAssertEqual(anns.count, maxPushTokensPerUser)
        XCTAssertFalse(anns.contains("fcm-0"))
        XCTAssertTrue(anns.contains("fcm-\(maxPushTokensPerUser + 2)"))
        // The outbox listing validates its filter.
        XCTAssertEqual(h.request("GET", "/v3/push/deliveries?status=lost", headers: h.adminHeaders).errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("GET", "/v3/push/deliveries").errorCode, "AUTH_ERR_EMPTY_APIKEY")
    }

    func testTheServerRefusesAKeyFileOthersCanRead() throws {
        let tmp = TemporaryDirectory("callroom-push")
        defer { tmp.remove() }
        let standIn = try PushStandIn(dir: tmp.path)
        standIn.stop()
        chmod(standIn.apnsKeyFile, 0o644)
        var c = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: tmp.file("data"))
        c.apns = APNsConfig(keyFile: standIn.apnsKeyFile, keyId: standIn.keyId, teamId: standIn.teamId)
        let server = CallServer(configuration: c)
        XCTAssertThrowsError(try server.start()) { e in
            let message = "\(e)"
            XCTAssertTrue(message.contains("chmod 600 \(standIn.apnsKeyFile)"), message)
            XCTAssertTrue(message.contains("644"), message)
        }
        chmod(standIn.apnsKeyFile, 0o600)
        // A file that is not a P-256 key: named, its content never printed.
        try "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXNlY3JldA==\n-----END PRIVATE KEY-----\n".write(toFile: tmp.file("bad.p8"), atomically: true, encoding: .utf8)
        chmod(tmp.file("bad.p8"), 0o600)
        c.apns?.keyFile = tmp.file("bad.p8")
        XCTAssertThrowsError(try CallServer(configuration: c).start()) { e in
            XCTAssertTrue("\(e)".contains("bad.p8"))
            XCTAssertFalse("\(e)".contains("c2VjcmV0"))
        }
        c.apns = nil
        c.fcm = FCMConfig(serviceAccountFile: standIn.serviceAccountFile)
        chmod(standIn.serviceAccountFile, 0o640)
        XCTAssertThrowsError(try CallServer(configuration: c).start()) { e in XCTAssertTrue("\(e)".contains("readable by others")) }
    }

    /// The provider token on a virtual clock: kept for 50 minutes, then signed anew.
    func testTheProviderTokenIsCachedFiftyMinutes() throws {
        let tmp = TemporaryDirectory("callroom-push")
        defer { tmp.remove() }
        let standIn = try PushStandIn(dir: tmp.path)
        standIn.stop()
        let signer = try APNsProvider.signer(APNsConfig(keyFile: standIn.apnsKeyFile, keyId: "KEY1234567", teamId: "TEAM123456"))
        var token = APNsProviderToken(keyId: "KEY1234567", teamId: "TEAM123456")
        let t0: Int64 = 1_800_000_000
        let first = try token.current(now: t0, signer: signer)
        XCTAssertEqual(try token.current(now: t0 + 49 * 60, signer: signer), first)
        let second = try token.current(now: t0 + 50 * 60, signer: signer)
        XCTAssertNotEqual(second, first)
        let parts = second.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        let header = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(Base64URL.decode(parts[0]) ?? [])) as? [String: String])
        XCTAssertEqual(header["alg"], "ES256")
        XCTAssertEqual(header["kid"], "KEY1234567")
        let claims = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(Base64URL.decode(parts[1]) ?? [])) as? [String: Any])
        XCTAssertEqual(claims["iss"] as? String, "TEAM123456")
        XCTAssertEqual(claims["iat"] as? Int, Int(t0 + 50 * 60))
        XCTAssertEqual(Base64URL.decode(parts[2])?.count, 64, "JOSE r‖s, not DER")
        XCTAssertThrowsError(try JWTSigner(pem: (try? String(contentsOfFile: standIn.apnsKeyFile, encoding: .utf8)) ?? "", algorithm: .rs256))
    }

    /// Anything over 4 KB is refused before it is sent (and logged), never cut by the service.
    func testAPayloadOverFourKilobytesIsNotSent() throws {
        let tmp = TemporaryDirectory("callroom-push")
        defer { tmp.remove() }
        let standIn = try PushStandIn(dir: tmp.path)
        defer { standIn.stop() }
        let config = APNsConfig(keyFile: standIn.apnsKeyFile, keyId: standIn.keyId, teamId: standIn.teamId, endpoint: standIn.endpoint,
                                caFile: standIn.caFile)
        let provider = try APNsProvider(config: config, signer: APNsProvider.signer(config), log: ServerLog(format: .text, level: .error))
        let now = epochMilliseconds()
        var push = StoredPush(id: 1, pushId: UUID().uuidString.lowercased(), sessionId: "call_x", uid: "bob", platform: .apnsVoip,
                              token: Self.voipToken, topic: "com.example.callroom.voip", action: "initiated",
                              body: #"{"aps":{},"pad":"\#(String(repeating: "x", count: 4100))"}"#, createdAt: now, expiresAt: now + 30_000,
                              attempts: 0, nextAttemptAt: now, status: .pending)
        guard case .failed(nil, let reason, false) = provider.send(push, now: now) else { return XCTFail("sent a 4 KB+ payload") }
        XCTAssertTrue(reason.hasPrefix("PayloadTooLarge"), reason)
        XCTAssertEqual(standIn.requests.count, 0, "nothing reached the service")
        push.body = #"{"aps":{},"sessionId":"call_x"}"#
        XCTAssertEqual(provider.send(push, now: now), .sent(status: 200, providerId: push.pushId))
    }
}
