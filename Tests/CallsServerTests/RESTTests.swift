import CallRoomTestSupport
import CallsServer
import XCTest

final class RESTTests: XCTestCase {
    var h: ServerHarness!

    override func setUpWithError() throws { h = try ServerHarness() }
    override func tearDown() { h.stop(); h.removeData() }

    func testHealthAndAppInfo() {
        XCTAssertEqual(h.request("GET", "/healthz").json["status"] as? String, "ok")
        let app = h.request("GET", "/v3/app")
        XCTAssertEqual(app.data["appId"] as? String, h.server.keys.appId)
        XCTAssertEqual(app.data["mediaPort"] as? Int, h.server.mediaPort)
    }

    /// A body that does not fit says which field is wrong and how, as a 400.
    func testBadBodiesNameTheFieldAtFault() {
        let cases: [(String, String, String, String)] = [
            ("POST", "/v3/users", "not json", "The body is not valid JSON."),
            ("POST", "/v3/users", "[1,2]", "The body must be a JSON object."),
            ("POST", "/v3/users", #"{"name":"n"}"#, "uid is required."),
            ("POST", "/v3/users", #"{"uid":"u1","name":123}"#, "name must be a string."),
            ("POST", "/v3/users", #"{"uid":null}"#, "uid must be a string."),
            ("POST", "/v3/groups", #"{"guid":"g","owner":"u1","members":"u1"}"#, "members must be an array."),
            ("POST", "/v3/groups", #"{"guid":"g","owner":"u1","members":[1]}"#, "members[0] must be a string."),
            ("PUT", "/v3/rooms/r1", #"{"allowedUids":[true]}"#, "allowedUids[0] must be a string."),
            ("PUT", "/v3/rooms/r1", #"{"passcode":1234}"#, "passcode must be a string."),
            ("POST", "/v3/rooms/r1/invites", #"{"ttlSeconds":"a day"}"#, "ttlSeconds must be a whole number."),
            ("POST", "/v3/rooms/r1/invites", #"{"ttlSeconds":86400.5}"#, "A number is not whole, or too large for its field."),
            ("POST", "/v3/rooms/r1/invites", #"{"maxUses":1e30}"#, "A number is not whole, or too large for its field."),
        ]
        for (method, path, body, message) in cases {
            let r = h.request(method, path, headers: h.adminHeaders, body: body)
            XCTAssertEqual(r.status, 400, "\(method) \(path) \(body)")
            XCTAssertEqual(r.errorCode, "ERR_BAD_REQUEST", "\(method) \(path) \(body)")
            XCTAssertEqual(r.errorMessage, message, "\(method) \(path) \(body)")
        }
        XCTAssertEqual((h.request("GET", "/v3/users", headers: h.adminHeaders).json["data"] as? [Any])?.count, 0, "nothing was created")
    }

    func testCreateUserAndAuthTokensNeedTheAPIKey() throws {
        XCTAssertEqual(h.request("POST", "/v3/users", body: #"{"uid":"a"}"#).errorCode, "AUTH_ERR_EMPTY_APIKEY")
        let wrong = h.request("POST", "/v3/users", headers: ["apikey": "nope"], body: #"{"uid":"a"}"#)
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(wrong.errorCode, "AUTH_ERR_APIKEY_NOT_FOUND")
        let ok = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"alice","name":"Alice A"}"#)
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.data["name"] as? String, "Alice A")
        let dup = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"alice"}"#)
        XCTAssertEqual(dup.status, 409)
        XCTAssertEqual(dup.errorCode, "ERR_UID_ALREADY_EXISTS")
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"bad uid!"}"#).errorCode, "ERR_UID_INVALID")
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: "not json").errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders).errorCode, "ERR_BAD_REQUEST")

        let tok = h.request("POST", "/v3/users/alice/auth_tokens", headers: h.adminHeaders)
        XCTAssertEqual(tok.status, 200)
        let token = tok.data["authToken"] as? String ?? ""
        XCTAssertEqual(token.count, 40)
        XCTAssertEqual(tok.data["uid"] as? String, "alice")
        XCTAssertNotNil(tok.data["createdAt"])
        XCTAssertEqual(h.request("POST", "/v3/users/nobody/auth_tokens", headers: h.adminHeaders).errorCode, "ERR_UID_NOT_FOUND")
        // The token works for /v3/me, and only its hash is stored.
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": token]).data["uid"] as? String, "alice")
        if StoreBackend.current == .sqlite {
            let db = try? String(contentsOfFile: h.dir + "/callroom.sqlite", encoding: .isoLatin1)
            XCTAssertFalse(db?.contains(token) ?? true, "plaintext auth token must not be stored")
        }
        // Every stored value, as the database holds it: the hash, never the token.
        let stored = try h.storeDatabase().query("SELECT token_hash, uid FROM auth_tokens").flatMap { $0.compactMap(\.text) }
        XCTAssertFalse(stored.isEmpty)
        XCTAssertFalse(stored.contains { $0.contains(token) }, "plaintext auth token must not be stored")
    }

    func testLoginWithAuthKeyCreatesUsersAndIssuesCallTokens() throws {
        let appHeaders = ["appId": h.server.keys.appId]
        XCTAssertEqual(h.request("POST", "/v3/sdk/login", body: #"{"uid":"bob","authKey":"x"}"#).errorCode, "AUTH_ERR_EMPTY_APPID")
        XCTAssertEqual(h.request("POST", "/v3/sdk/login", headers: ["appId": "other"], body: #"{"uid":"bob","authKey":"x"}"#).errorCode,
                       "AUTH_ERR_APPID_MISMATCH")
        XCTAssertEqual(h.request("POST", "/v3/sdk/login", headers: appHeaders, body: #"{"uid":"bob","authKey":"x"}"#).errorCode,
                       "AUTH_ERR_AUTH_KEY_INVALID")
        let login = h.request("POST", "/v3/sdk/login", headers: appHeaders,
                              body: #"{"uid":"bob","authKey":"\#(h.server.keys.authKey)","name":"Bob"}"#)
        XCTAssertEqual(login.data["name"] as? String, "Bob")
        let auth = try XCTUnwrap(login.data["authToken"] as? String)

        let missing = h.request("POST", "/v3.0/call_tokens", headers: appHeaders, body: #"{"sessionId":"s1"}"#)
        XCTAssertEqual(missing.errorCode, "AUTH_ERR_EMPTY_AUTH_TOKEN")
        let bad = h.request("POST", "/v3.0/call_tokens", headers: appHeaders.merging(["authToken": "zzz"]) { $1 }, body: #"{"sessionId":"s1"}"#)
        XCTAssertEqual(bad.errorCode, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
        let badSession = h.request("POST", "/v3.0/call_tokens", headers: appHeaders.merging(["authToken": auth]) { $1 },
                                   body: #"{"sessionId":"has space"}"#)
        XCTAssertEqual(badSession.errorCode, "ERR_SESSION_ID_INVALID")
        let ok = h.request("POST", "/v3.0/call_tokens", headers: appHeaders.merging(["authToken": auth]) { $1 }, body: #"{"sessionId":"s1"}"#)
        let token = try XCTUnwrap(ok.data["token"] as? String)
        XCTAssertEqual(token.split(separator: ".").count, 3)
    }

    func testLoginDoesNotCreateUsersWhenSwitchedOff() throws {
        h.stop(); h.removeData()
        h = try ServerHarness(autoCreate: false)
        let r = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                          body: #"{"uid":"carol","authKey":"\#(h.server.keys.authKey)"}"#)
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.errorCode, "ERR_UID_NOT_FOUND")
    }

    func testUnknownRoutesAndMethodsAndOversizedBodies() {
        let nf = h.request("GET", "/v9/nothing")
        XCTAssertEqual(nf.status, 404)
        XCTAssertEqual(nf.errorCode, "ERR_NOT_FOUND")
        let m = h.request("DELETE", "/v3/users", headers: h.adminHeaders)
        XCTAssertEqual(m.status, 405)
        XCTAssertEqual(m.errorCode, "ERR_METHOD_NOT_ALLOWED")
        XCTAssertEqual(m.headers["allow"], "GET, HEAD, POST", "a 405 says what the path takes (RFC 9110)")
        let big = h.request("POST", "/v3/users", headers: h.adminHeaders, body: String(repeating: "x", count: 100_000))
        XCTAssertEqual(big.status, 413)
        XCTAssertEqual(big.errorCode, "ERR_BODY_TOO_LARGE")
        // A path is matched as sent: an empty segment is no route (libwebsockets itself makes
        // "//" one "/"). It decodes a trailing %00 away: DELETE …/auth_tokens/%00 must not
        // delete every token.
        let ann = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"ann","name":"Ann"}"#)
        XCTAssertEqual(ann.status, 200)
        XCTAssertEqual(h.request("POST", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).status, 200)
        for (method, path) in [("GET", "/v3/users/"), ("GET", "/v3/users/%00"),
                               ("DELETE", "/v3/users/ann/auth_tokens/%00"), ("DELETE", "/v3/users/ann/")] {
            let r = h.request(method, path, headers: h.adminHeaders)
            XCTAssertEqual(r.status, 404, "\(method) \(path)")
            XCTAssertEqual(r.errorCode, "ERR_NOT_FOUND", "\(method) \(path)")
        }
        let tokens = h.request("GET", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).json["data"] as? [[String: Any]]
        XCTAssertEqual(tokens?.count, 1, "ann's token is still there")
        XCTAssertEqual(h.request("GET", "/v3/users/ann", headers: h.adminHeaders).status, 200, "and so is ann")
        // Still serving afterwards.
        XCTAssertEqual(h.request("GET", "/healthz").status, 200)
        XCTAssertEqual(h.request("GET", "/v3/calls/none", headers: h.adminHeaders).errorCode, "ERR_CALL_SESSION_NOT_FOUND")
    }

    /// HEAD was answered 404 ("No endpoint HEAD"): curl -I, monitors and link checkers saw every
    /// page missing. It is answered as GET is — status and headers, the length a GET gets —
    /// without the body, and the connection serves the next request (pipelined behind it here:
    /// a body sent after the head would be read as the next answer).
    func testHEADIsAnsweredAsGETWithoutItsBody() throws {
        let get = h.request("GET", "/v3/users", headers: h.adminHeaders)
        XCTAssertEqual(get.status, 200)
        let pipelined = "HEAD /v3/users HTTP/1.1\r\nHost: x\r\napikey: \(h.server.keys.apiKey)\r\n\r\n"
            + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let (answer, closed) = RawHTTP.exchange(port: h.server.port, Array(pipelined.utf8))
        XCTAssertTrue(closed, answer)
        let heads = answer.components(separatedBy: "\r\n\r\n")
        XCTAssertEqual(heads.count, 3, answer)
        XCTAssertTrue(heads[0].hasPrefix("HTTP/1.1 200"), answer)
        XCTAssertTrue(heads[0].lowercased().contains("content-length: \(get.body.count)"), "the length a GET gets: \(answer)")
        XCTAssertTrue(heads[1].hasPrefix("HTTP/1.1 200"), "no body between the HEAD's answer and the next: \(answer)")
        XCTAssertEqual(heads[2], #"{"status":"ok"}"#)
        XCTAssertEqual(h.request("HEAD", "/v9/nothing").status, 404)
    }

    /// `Upgrade: h2c` (curl --http2 on http://) switched the connection to HTTP/2, where the
    /// API's own headers were not read: `GET /v3/users` with the key answered "apikey missing",
    /// and no limit of the HTTP/1.1 path held for its streams. The upgrade is ignored now and
    /// the request answered over HTTP/1.1, as any client that asks for h2c must accept.
    func testAnH2CUpgradeIsIgnoredAndTheRequestAnsweredOverHTTP1() throws {
        let head = "GET /v3/users HTTP/1.1\r\nHost: x\r\napikey: \(h.server.keys.apiKey)\r\n"
            + "Connection: close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
        let (answer, closed) = RawHTTP.exchange(port: h.server.port, Array(head.utf8))
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200"), answer)
        XCTAssertTrue(answer.contains(#""data":["#), "the key was read: \(answer)")
        XCTAssertTrue(closed, answer)
    }

    func testKeysPersistAcrossRestarts() throws {
        let keys = h.server.keys
        XCTAssertEqual(h.server.generatedKeys, ["appId", "apiKey", "authKey"])
        _ = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"dave"}"#)
        h.stop()
        let again = try ServerHarness(dataDir: h.dir)
        defer { again.stop() }
        XCTAssertEqual(again.server.generatedKeys, [])
        XCTAssertEqual(again.server.keys, keys)
        XCTAssertEqual(again.request("GET", "/v3/users/dave", headers: again.adminHeaders).data["uid"] as? String, "dave")
        let attrs = try FileManager.default.attributesOfItem(atPath: h.dir + "/keys.json")
        XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }

    /// A key given on first start is what keys.json keeps (a later start without the flag uses
    /// it) and is never printed as generated; only the keys made now are.
    func testGivenKeysAreSavedOnFirstStartAndNotCalledGenerated() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crs-given-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try ServerHarness(dataDir: dir) { $0.apiKey = "operator-chosen-api-key" }
        XCTAssertEqual(first.server.generatedKeys, ["appId", "authKey"])
        XCTAssertEqual(first.server.keys.apiKey, "operator-chosen-api-key")
        let saved = try JSONDecoder().decode(ServerKeys.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/keys.json")))
        XCTAssertEqual(saved, first.server.keys)
        first.stop()
        let again = try ServerHarness(dataDir: dir)
        XCTAssertEqual(again.server.keys.apiKey, "operator-chosen-api-key")
        // Later starts: a flag overrides keys.json without changing it.
        again.stop()
        let overridden = try ServerHarness(dataDir: dir) { $0.authKey = "for-this-start" }
        defer { overridden.stop() }
        XCTAssertEqual(overridden.server.keys.authKey, "for-this-start")
        XCTAssertEqual(try JSONDecoder().decode(ServerKeys.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/keys.json"))), saved)
    }
}
