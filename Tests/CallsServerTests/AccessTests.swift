import CallRoomTestSupport
import CallsCore
import CallsSecurity
import CallsTransport
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// Issue #15's access findings, each reproduced as the attack and refused: the shared auth key
/// logging in as anyone, keys on the command line, names that carry terminal escapes.
final class AccessTests: XCTestCase {
    func testWithAuthKeyLoginOffOnlyBackendIssuedTokensLogIn() throws {
        let h = try ServerHarness { $0.authKeyLogin = false; $0.autoCreateUsers = false }
        defer { h.stop(); h.removeData() }
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"ann","name":"Ann"}"#).status, 200)
        // The attack: anyone holding the app's auth key logs in as an existing user.
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"ann","authKey":"\#(h.server.keys.authKey)"}"#)
        XCTAssertEqual(login.status, 403)
        XCTAssertEqual(login.errorCode, "AUTH_ERR_AUTH_KEY_DISABLED")
        // What still works: the backend issues an auth token, the client uses it.
        let token = try XCTUnwrap(h.request("POST", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String)
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": token]).data["uid"] as? String, "ann")
        XCTAssertNotNil(h.request("POST", "/v3.0/call_tokens", headers: ["appId": h.server.keys.appId, "authToken": token],
                                  body: #"{"sessionId":"s"}"#).data["token"])
    }

    /// `--production` turns auth-key login off; keys come from a file or the environment, never
    /// from the command line (`/proc/PID/cmdline` is world-readable).
    func testProductionAndKeysOffTheCommandLine() throws {
        let tmp = TemporaryDirectory("callroom-access")
        defer { tmp.remove() }
        try "file-api-key-0123456789\n".write(toFile: tmp.file("api.key"), atomically: true, encoding: .utf8)
        let p = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data"), "--production",
                                                                     "--api-key-file", tmp.file("api.key"), "--log-level", "error"],
                                   environment: ["CALLROOM_AUTH_KEY": "env-auth-key-0123456789"])
        defer { p.signal(SIGTERM); _ = p.wait() }
        let line = try XCTUnwrap(p.waitForLine { $0.hasPrefix("callroomd listening on") }, p.errorOutput)
        let url = String(line.split(separator: " ")[3])
        let app = String(line.split(separator: " ").last ?? "")
        XCTAssertEqual(BlockingHTTP.request("POST", url + "/v3/users", headers: ["apikey": "file-api-key-0123456789"],
                                            body: #"{"uid":"ann"}"#).status, 200, "the key from the file")
        XCTAssertEqual(BlockingHTTP.request("POST", url + "/v3/sdk/login", headers: ["appId": app],
                                            body: #"{"uid":"ann","authKey":"env-auth-key-0123456789"}"#).errorCode, "AUTH_ERR_AUTH_KEY_DISABLED")
        let cmdline = String(decoding: FileManager.default.contents(atPath: "/proc/\(p.pid)/cmdline") ?? Data(), as: UTF8.self)
        XCTAssertFalse(cmdline.contains("file-api-key") || cmdline.contains("env-auth-key"), "no key in the process's command line")
        XCTAssertFalse(cmdline.isEmpty)
    }

    /// The attack: the auth key ships in every app, and login creates the users it does not know
    /// — one uid after another from a script, a row each, for ever. Now an address makes
    /// `autoCreateUsersPerHour` users (then that many an hour), and the app stops making them
    /// by login at `autoCreateUsersMax`; users who exist log in as before, and the backend's
    /// `apikey` makes users past both.
    func testLoginCreatesABoundedNumberOfUsersPerAddressAndInAll() throws {
        let h = try ServerHarness {
            $0.autoCreateUsersPerHour = 3
            $0.autoCreateUsersMax = 6
            $0.addressLimitsExemptLoopback = false
        }
        defer { h.stop(); h.removeData() }
        func login(_ uid: String, from address: String) -> (status: Int, text: String) {
            let body = #"{"uid":"\#(uid)","authKey":"\#(h.server.keys.authKey)"}"#
            let request = "POST /v3/sdk/login HTTP/1.1\r\nHost: x\r\nappId: \(h.server.keys.appId)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
            let text = RawHTTP.exchange(port: h.server.port, Array(request.utf8), from: address).text
            return (Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0, text)
        }
        for uid in ["m1", "m2", "m3"] { XCTAssertEqual(login(uid, from: "127.0.0.7").status, 200, uid) }
        let fourth = login("m4", from: "127.0.0.7")
        XCTAssertEqual(fourth.status, 429)
        XCTAssertTrue(fourth.text.contains("ERR_RATE_LIMITED") && fourth.text.contains("3 an hour"), fourth.text)
        XCTAssertEqual(h.request("GET", "/v3/users/m4", headers: h.adminHeaders).errorCode, "ERR_UID_NOT_FOUND", "nobody was made")
        XCTAssertEqual(login("m1", from: "127.0.0.7").status, 200, "a user who exists logs in as before")
        XCTAssertEqual(login("n1", from: "127.0.0.8").status, 200, "another address has its own")
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"b1"}"#).status, 200)
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"b2"}"#).status, 200)
        // Six users now: login makes no more, from anywhere.
        let full = login("n2", from: "127.0.0.8")
        XCTAssertEqual(full.status, 429)
        XCTAssertTrue(full.text.contains("ERR_LIMIT_REACHED"), full.text)
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"b3"}"#).status, 200, "the backend is not limited")
        XCTAssertEqual(login("b3", from: "127.0.0.8").status, 200)

        // The ration refills at its rate (a virtual clock): one more user each 1200 s.
        let limiter = SignupLimiter(perHour: 3, addresses: ClientAddresses(), redis: nil)
        let s: UInt64 = 1_000_000_000
        for _ in 0..<3 { XCTAssertTrue(limiter.allow("203.0.113.5", now: 10 * s)) }
        XCTAssertFalse(limiter.allow("203.0.113.5", now: 10 * s))
        XCTAssertFalse(limiter.allow("203.0.113.5", now: 1000 * s))
        XCTAssertTrue(limiter.allow("203.0.113.5", now: 1211 * s))
        XCTAssertTrue(limiter.allow("127.0.0.1", now: 10 * s) && limiter.allow("127.0.0.1", now: 10 * s)
                      && limiter.allow("127.0.0.1", now: 10 * s) && limiter.allow("127.0.0.1", now: 10 * s), "loopback is exempt")
        XCTAssertFalse(SignupLimiter(perHour: 0, addresses: ClientAddresses(), redis: nil).allow("203.0.113.5"), "0: none")
    }

    /// The attack: a display name with terminal escapes, shown on everyone's call screen.
    func testNamesAndChatReachOthersWithoutControlCharacters() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let evil = "Eve\\u001b[2J\\u001b]52;c;cm0gLXJm\\u0007\\u0000"
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"eve","authKey":"\#(h.server.keys.authKey)","name":"\#(evil)"}"#)
        XCTAssertEqual(login.data["name"] as? String, "Eve[2J]52;c;cm0gLXJm")
        XCTAssertEqual(h.request("PUT", "/v3/users/eve", headers: h.adminHeaders, body: #"{"name":"\u202eevE"}"#).data["name"] as? String, "evE")
        let a = try SignalProbe(url: h.server.url)
        a.send(.join(.init(callToken: try h.callToken(uid: "eve", session: "names"), displayName: "Mallory\u{1B}[31m\u{9B}H")))
        XCTAssertEqual(a.joined()?.you.name, "Mallory[31mH")
        a.send(.chat(text: "hi\u{1B}[2J\nthere"))
        guard case .chat(let m)? = a.wait({ if case .chat = $0 { return true }; return false }) else { return XCTFail("no chat") }
        XCTAssertEqual(m.text, "hi[2J\nthere")
    }
}

/// Revocation: deleting a user, or revoking all their auth tokens, ends their sessions and
/// refuses the call tokens they were given; auth tokens can expire; call tokens name their audience.
final class RevocationTests: XCTestCase {
    func testDeletingAUserEndsTheirSessionsAndRefusesTheirOldCallTokens() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let annToken = try h.callToken(uid: "ann", session: "revoke")
        let ann = try SignalProbe(url: url), bob = try SignalProbe(url: url)
        ann.send(.join(.init(callToken: annToken)))
        XCTAssertNotNil(ann.joined())
        bob.send(.join(.init(callToken: try h.callToken(uid: "bob", session: "revoke"))))
        XCTAssertNotNil(bob.joined())
        let phone = try RingingTests.online(url: url, appId: app, authKey: key, uid: "ann")
        XCTAssertEqual(h.request("DELETE", "/v3/users/ann", headers: h.adminHeaders).status, 200)
        // Their session ends at once, everyone hears why; their presence goes offline.
        XCTAssertNotNil(ann.wait { if case .left(.revoked, _) = $0 { return true }; return false }, "told they were removed")
        XCTAssertTrue(ann.waitClosed())
        XCTAssertNotNil(bob.wait { if case .participantLeft(let p, .revoked) = $0 { return p.uid == "ann" }; return false })
        XCTAssertTrue(phone.waitClosed(), "the presence connection is closed too")
        // The attack: rejoining with the old call token (valid for 24 h). Refused.
        let again = try SignalProbe(url: url)
        again.send(.join(.init(callToken: annToken)))
        XCTAssertEqual(again.error(), "AUTH_ERR_TOKEN_REVOKED")
        // A new ann (the uid reused later) is a new user with new tokens.
        Thread.sleep(forTimeInterval: 1.1)
        let fresh = try SignalProbe(url: url)
        fresh.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "revoke"))))
        XCTAssertNotNil(fresh.joined())
    }

    func testRevokingEveryAuthTokenEndsSessionsAndSurvivesARestart() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crs-revoke-\(UUID().uuidString.prefix(8))").path
        var h = try ServerHarness(dataDir: dir)
        let old = try h.callToken(uid: "cat", session: "tokens")
        let cat = try SignalProbe(url: h.server.url)
        cat.send(.join(.init(callToken: old)))
        XCTAssertNotNil(cat.joined())
        XCTAssertEqual(h.request("DELETE", "/v3/users/cat/auth_tokens", headers: h.adminHeaders).status, 200)
        XCTAssertNotNil(cat.wait { if case .left(.revoked, _) = $0 { return true }; return false })
        h.stop()
        h = try ServerHarness(dataDir: dir)
        defer { h.stop(); h.removeData() }
        let again = try SignalProbe(url: h.server.url)
        again.send(.join(.init(callToken: old)))
        XCTAssertEqual(again.error(), "AUTH_ERR_TOKEN_REVOKED", "kept across a restart")
    }

    /// The attack (#34): revoking one auth token left every connection it had opened, and the
    /// call tokens it had minted, working. Now they end with it; the user's other token is untouched.
    func testRevokingOneAuthTokenEndsWhatItOpenedAndNothingElse() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let app = h.server.keys.appId
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"ann"}"#).status, 200)
        func authToken() throws -> String {
            try XCTUnwrap(h.request("POST", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String)
        }
        let lost = try authToken(), kept = try authToken()
        func callToken(_ auth: String, _ session: String) throws -> String {
            try XCTUnwrap(h.request("POST", "/v3.0/call_tokens", headers: ["appId": app, "authToken": auth], body: #"{"sessionId":"\#(session)"}"#)
                .data["token"] as? String)
        }
        func online(_ auth: String) -> SignalProbe? {
            guard let p = try? SignalProbe(url: h.server.url) else { return nil }
            p.send(.hello(authToken: auth))
            return p.wait { if case .welcome = $0 { return true }; return false } == nil ? nil : p
        }
        let phone = try XCTUnwrap(online(lost)), laptop = try XCTUnwrap(online(kept))
        let inRoom = try SignalProbe(url: h.server.url), inOther = try SignalProbe(url: h.server.url)
        inRoom.send(.join(.init(callToken: try callToken(lost, "one"))))
        inOther.send(.join(.init(callToken: try callToken(kept, "two"))))
        XCTAssertNotNil(inRoom.joined())
        XCTAssertNotNil(inOther.joined())
        let unused = try callToken(lost, "three")
        let lostID = String(Crypto.sha256Hex(lost).prefix(16))
        XCTAssertEqual(h.request("DELETE", "/v3/users/ann/auth_tokens/\(lostID)", headers: h.adminHeaders).status, 200)
        XCTAssertNotNil(inRoom.wait { if case .left(.revoked, _) = $0 { return true }; return false }, "the session it opened ends")
        XCTAssertTrue(phone.waitClosed(), "the presence connection it opened closes")
        let late = try SignalProbe(url: h.server.url)
        late.send(.join(.init(callToken: unused)))
        XCTAssertEqual(late.error(), "AUTH_ERR_TOKEN_REVOKED", "a call token it minted no longer works")
        XCTAssertTrue(holds(for: 0.2) { !laptop.isClosed }, "the other token's connection stays")
        XCTAssertFalse(inOther.isClosed)
        let fresh = try SignalProbe(url: h.server.url)
        fresh.send(.join(.init(callToken: try callToken(kept, "four"))))
        XCTAssertNotNil(fresh.joined(), "the other token still mints working call tokens")
    }

    /// Every login makes an auth token (each `callroom` run logs in): a user's rows grew for
    /// ever. A user holds at most 100; the 101st login revokes the oldest whole — what it
    /// opened closes and its call tokens are refused, as `DELETE …/auth_tokens/{token}` does.
    func testAUserHoldsAtMostAHundredAuthTokensAndTheOldestIsRevokedWhole() throws {
        let h = try ServerHarness { $0.restRequestsPerSecond = 10_000 }
        defer { h.stop(); h.removeData() }
        let app = h.server.keys.appId
        func login() throws -> String {
            try XCTUnwrap(h.request("POST", "/v3/sdk/login", headers: ["appId": app],
                                    body: #"{"uid":"ann","authKey":"\#(h.server.keys.authKey)"}"#).data["authToken"] as? String)
        }
        let oldest = try login(), second = try login()
        let phone = try SignalProbe(url: h.server.url)
        phone.send(.hello(authToken: oldest))
        XCTAssertNotNil(phone.wait { if case .welcome = $0 { return true }; return false })
        let minted = try XCTUnwrap(h.request("POST", "/v3.0/call_tokens", headers: ["appId": app, "authToken": oldest],
                                             body: #"{"sessionId":"s"}"#).data["token"] as? String)
        for _ in 0..<98 { _ = try login() }
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": oldest]).status, 200, "100 tokens: all still good")
        XCTAssertFalse(phone.isClosed)
        let newest = try login()
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": oldest]).errorCode, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND",
                       "the 101st revokes the oldest")
        XCTAssertTrue(phone.waitClosed(), "the presence connection it opened closes")
        let late = try SignalProbe(url: h.server.url)
        late.send(.join(.init(callToken: minted)))
        XCTAssertEqual(late.error(), "AUTH_ERR_TOKEN_REVOKED", "a call token it minted no longer works")
        for kept in [second, newest] { XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": kept]).status, 200) }
        let listed = h.request("GET", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).json["data"] as? [[String: Any]]
        XCTAssertEqual(listed?.count, 100)
        // The operator's own issuing is bound the same way.
        _ = h.request("POST", "/v3/users/ann/auth_tokens", headers: h.adminHeaders)
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": second]).errorCode, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
        XCTAssertEqual((h.request("GET", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).json["data"] as? [[String: Any]])?.count, 100)
    }

    func testCallTokensCarryAnIdAndTheirAudience() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let token = try h.callToken(uid: "dan", session: "aud")
        let claims = try CallTokenSigner(secret: Hex.decode(h.server.keys.tokenSecret) ?? []).verify(token)
        XCTAssertEqual(claims.aud, "callroom:\(h.server.keys.appId)")
        XCTAssertEqual(claims.jti?.count, 32)
        XCTAssertNotEqual(try CallTokenSigner(secret: Hex.decode(h.server.keys.tokenSecret) ?? []).verify(try h.callToken(uid: "dan", session: "aud")).jti,
                          claims.jti, "each token its own id")
        // Signed with the right secret but for no audience (or another): not for this server.
        let now = Int64(Date().timeIntervalSince1970)
        let signer = CallTokenSigner(secret: Hex.decode(h.server.keys.tokenSecret) ?? [])
        for aud in [nil, "callroom:another-app"] {
            let p = try SignalProbe(url: h.server.url)
            p.send(.join(.init(callToken: signer.sign(CallTokenClaims(app: h.server.keys.appId, sub: "dan", sid: "aud", iat: now, exp: now + 60,
                                                                      jti: "x", aud: aud)))))
            XCTAssertEqual(p.error(), "AUTH_ERR_TOKEN_INVALID", "\(aud ?? "no audience")")
        }
    }

    /// Auth tokens older than the configured lifetime no longer authenticate (store logic, no sleep).
    func testAuthTokensExpireAfterTheirLifetime() throws {
        let dir = TemporaryDirectory("callroom-ttl")
        defer { dir.remove() }
        let store = try CallStore(path: dir.file("db.sqlite"))
        _ = try store.createUser(uid: "eve", name: "Eve")
        let old = try store.createAuthToken(uid: "eve", now: epochMilliseconds() - 3_600_000).token
        for minutes: Int64 in [50, 40, 35] { _ = try store.createAuthToken(uid: "eve", now: epochMilliseconds() - minutes * 60_000) }
        let new = try store.createAuthToken(uid: "eve").token
        XCTAssertNil(try store.user(authToken: old, maxAgeSeconds: 1800), "an hour old, a lifetime of 30 minutes")
        XCTAssertEqual(try store.user(authToken: new, maxAgeSeconds: 1800)?.uid, "eve")
        XCTAssertEqual(try store.user(authToken: old)?.uid, "eve", "no lifetime: until revoked")
        // Past their lifetime they open nothing; the hourly retention forgets their rows.
        XCTAssertEqual(HistoryRetention(store: store, deliveryDays: 0, chatDays: 0, log: ServerLog(level: .error)).sweep(), .init(),
                       "no lifetime: kept")
        XCTAssertEqual(try store.authTokens(uid: "eve").count, 5)
        // Two tokens a page: the four past their lifetime take three pages.
        let retention = HistoryRetention(store: store, deliveryDays: 0, chatDays: 0, authTokenTTLSeconds: 1800, log: ServerLog(level: .error), pageIds: 2)
        XCTAssertEqual(retention.sweep(), .init(authTokens: 4))
        XCTAssertEqual(try store.authTokens(uid: "eve").count, 1)
        XCTAssertEqual(try store.user(authToken: new, maxAgeSeconds: 1800)?.uid, "eve", "the one within its lifetime stays")
        XCTAssertEqual(retention.sweep(), .init())
    }
}

/// What a participant may fetch of a call (#34): only what ran while they were in it.
final class CallHistoryAccessTests: XCTestCase {
    func testALateJoinerSeesOnlyTheChatSentWhileTheyWereThere() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let ann = try SignalProbe(url: h.server.url)
        ann.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "hist"))))
        XCTAssertEqual(ann.joined()?.you.role, .moderator)
        let bob = try SignalProbe(url: h.server.url)
        bob.send(.join(.init(callToken: try h.callToken(uid: "bob", session: "hist"))))
        XCTAssertNotNil(bob.joined())
        ann.send(.chat(text: "before carl"))
        XCTAssertNotNil(bob.wait { if case .chat(let m) = $0 { return m.text == "before carl" }; return false })
        Thread.sleep(forTimeInterval: 0.01)  // (a millisecond clock: the next join is later)
        let carl = try SignalProbe(url: h.server.url)
        carl.send(.join(.init(callToken: try h.callToken(uid: "carl", session: "hist"))))
        XCTAssertNotNil(carl.joined())
        bob.send(.chat(text: "with carl"))
        XCTAssertNotNil(carl.wait { if case .chat(let m) = $0 { return m.text == "with carl" }; return false })
        func texts(_ uid: String) throws -> [String] {
            let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                                  body: #"{"uid":"\#(uid)","authKey":"\#(h.server.keys.authKey)"}"#)
            let token = try XCTUnwrap(login.data["authToken"] as? String)
            let r = h.request("GET", "/v3/calls/hist/messages", headers: ["appId": h.server.keys.appId, "authToken": token])
            return (r.json["data"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        }
        XCTAssertEqual(try texts("carl"), ["with carl"], "the late joiner does not read what was said before")
        XCTAssertEqual(try texts("bob"), ["before carl", "with carl"])
        XCTAssertEqual(try texts("ann"), ["before carl", "with carl"], "a moderator reads it all")
        let all = h.request("GET", "/v3/calls/hist/messages", headers: h.adminHeaders).json["data"] as? [[String: Any]]
        XCTAssertEqual(all?.count, 2, "the operator reads it all")
        XCTAssertTrue(try texts("eve").isEmpty, "not in the call: nothing")
    }
}
