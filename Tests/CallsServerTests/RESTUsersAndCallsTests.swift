import CallRoomTestSupport
import CallsCore
import CallsServer
import XCTest

final class RESTUsersAndCallsTests: XCTestCase {
    var h: ServerHarness!

    override func setUpWithError() throws { h = try ServerHarness() }
    override func tearDown() { h.stop(); h.removeData() }

    func testUserListingUpdateAndDelete() throws {
        for i in 1...5 { XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"u\#(i)"}"#).status, 200) }
        let page = h.request("GET", "/v3/users?perPage=2&page=2", headers: h.adminHeaders)
        XCTAssertEqual((page.json["data"] as? [[String: Any]])?.compactMap { $0["uid"] as? String }, ["u3", "u4"])
        let pg = (page.json["meta"] as? [String: Any])?["pagination"] as? [String: Any]
        XCTAssertEqual(pg?["total"] as? Int, 5)
        XCTAssertEqual(pg?["total_pages"] as? Int, 3)
        XCTAssertEqual(pg?["current_page"] as? Int, 2)
        XCTAssertEqual(pg?["per_page"] as? Int, 2)
        XCTAssertEqual(pg?["count"] as? Int, 2)
        XCTAssertEqual(h.request("GET", "/v3/users?perPage=0", headers: h.adminHeaders).errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("GET", "/v3/users?page=x", headers: h.adminHeaders).errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("GET", "/v3/users").errorCode, "AUTH_ERR_EMPTY_APIKEY")

        let upd = h.request("PUT", "/v3/users/u1", headers: h.adminHeaders, body: #"{"name":"Uma","avatar":"https://x/a.png"}"#)
        XCTAssertEqual(upd.data["name"] as? String, "Uma")
        XCTAssertEqual(upd.data["avatar"] as? String, "https://x/a.png")
        XCTAssertNil(h.request("PUT", "/v3/users/u1", headers: h.adminHeaders, body: #"{"avatar":""}"#).data["avatar"])
        XCTAssertEqual(h.request("PUT", "/v3/users/u1", headers: h.adminHeaders, body: "{}").errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("PUT", "/v3/users/zz", headers: h.adminHeaders, body: #"{"name":"Z"}"#).errorCode, "ERR_UID_NOT_FOUND")

        let tok = h.request("POST", "/v3/users/u2/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String ?? ""
        XCTAssertEqual(h.request("DELETE", "/v3/users/u2", headers: h.adminHeaders).data["success"] as? Bool, true)
        XCTAssertEqual(h.request("GET", "/v3/users/u2", headers: h.adminHeaders).errorCode, "ERR_UID_NOT_FOUND")
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": tok]).errorCode, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND",
                       "deleting a user revokes their tokens")
        XCTAssertEqual(h.request("DELETE", "/v3/users/u2", headers: h.adminHeaders).status, 404)
    }

    /// An avatar goes into other apps' `<img src>` and links: only an http(s) URL, whole.
    func testAnAvatarIsAnHTTPURLOrRefused() throws {
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"u1"}"#).status, 200)
        let long = "https://x/" + String(repeating: "a", count: 2040)
        for bad in ["javascript:alert(1)", "data:image/png;base64,AAAA", "https://x/a b.png", "https://x/\\u0000", "//x/a.png",
                    "https://", long] {
            XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"v1","avatar":"\#(bad)"}"#).errorCode,
                           "ERR_BAD_REQUEST", bad)
            XCTAssertEqual(h.request("PUT", "/v3/users/u1", headers: h.adminHeaders, body: #"{"avatar":"\#(bad)"}"#).errorCode,
                           "ERR_BAD_REQUEST", bad)
        }
        XCTAssertEqual(h.request("GET", "/v3/users/v1", headers: h.adminHeaders).errorCode, "ERR_UID_NOT_FOUND", "nothing made")
        let fits = String(long.dropLast(2))
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"v1","avatar":"\#(fits)"}"#)
            .data["avatar"] as? String, fits)
        XCTAssertEqual(h.request("PUT", "/v3/users/v1", headers: h.adminHeaders, body: #"{"avatar":"HTTP://Y/b.png"}"#)
            .data["avatar"] as? String, "HTTP://Y/b.png")
    }

    func testAuthTokensAreListedWithoutPlaintextAndRevocable() throws {
        _ = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"amy"}"#)
        let t1 = h.request("POST", "/v3/users/amy/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String ?? ""
        let t2 = h.request("POST", "/v3/users/amy/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String ?? ""
        let t3 = h.request("POST", "/v3/users/amy/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String ?? ""
        let listed = h.request("GET", "/v3/users/amy/auth_tokens", headers: h.adminHeaders)
        let rows = try XCTUnwrap(listed.json["data"] as? [[String: Any]])
        XCTAssertEqual(rows.count, 3)
        XCTAssertFalse(String(describing: listed.json).contains(t1), "never the plaintext")
        // Revoke one by plaintext, one by its listed id.
        XCTAssertEqual(h.request("DELETE", "/v3/users/amy/auth_tokens/\(t1)", headers: h.adminHeaders).status, 200)
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": t1]).errorCode, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": t2]).status, 200)
        let ids = (h.request("GET", "/v3/users/amy/auth_tokens", headers: h.adminHeaders).json["data"] as? [[String: Any]])?
            .compactMap { $0["tokenId"] as? String } ?? []
        XCTAssertEqual(ids.count, 2)
        XCTAssertEqual(h.request("DELETE", "/v3/users/amy/auth_tokens/\(ids[0])", headers: h.adminHeaders).status, 200)
        XCTAssertEqual(h.request("DELETE", "/v3/users/amy/auth_tokens/nope", headers: h.adminHeaders).errorCode, "ERR_AUTH_TOKEN_NOT_FOUND")
        XCTAssertEqual(h.request("DELETE", "/v3/users/amy/auth_tokens", headers: h.adminHeaders).data["deleted"] as? Int, 1)
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": t3]).status, 401)
    }

    /// Runs a call in `session` with `uids` joining in order, then everyone leaving.
    func runCall(_ session: String, _ uids: [String]) throws {
        var probes: [SignalProbe] = []
        for u in uids {
            let p = try SignalProbe(url: h.server.url)
            p.send(.join(.init(callToken: try h.callToken(uid: u, session: session))))
            XCTAssertNotNil(p.joined())
            probes.append(p)
        }
        for p in probes { p.send(.leave); XCTAssertTrue(p.waitClosed()) }
        eventually(3, poll: 0.02) { h.request("GET", "/v3/calls/\(session)", headers: h.adminHeaders).data["status"] as? String == "ended" }
    }

    /// A call can hold 10,000 participant rows: a page of 100 such calls was 233 MB built in
    /// memory for one request. A listing carries each call's first 100 rows and the viewer's own,
    /// says so, and its totals still count every row; the call itself has them all.
    func testAListingCarriesAHundredParticipantsPerCallAndTotalsThemAll() throws {
        let bob = try SignalProbe(url: h.server.url)
        bob.send(.join(.init(callToken: try h.callToken(uid: "bob", session: "big"))))
        XCTAssertNotNil(bob.joined())
        let db = try h.storeDatabase()
        let callID = try XCTUnwrap(db.query("SELECT id FROM calls WHERE session_id = 'big'", []).first?.first?.int)
        for i in 0..<150 {
            try db.execute("INSERT INTO call_participants(call_id, uid, pid, name, joined_at, left_at) VALUES (?, ?, ?, ?, ?, ?)",
                           [.int(callID), .text("guest_\(i % 30)"), .text("p\(i)"), .text("Guest"), .int(1_000_000 + Int64(i) * 60_000),
                            .int(1_000_000 + Int64(i) * 60_000 + 30_000)])
        }
        let ann = try SignalProbe(url: h.server.url)
        ann.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "big"))))
        XCTAssertNotNil(ann.joined())
        for p in [ann, bob] { p.send(.leave); XCTAssertTrue(p.waitClosed()) }
        eventually(3, poll: 0.02) { h.request("GET", "/v3/calls/big", headers: h.adminHeaders).data["status"] as? String == "ended" }

        let whole = h.request("GET", "/v3/calls/big", headers: h.adminHeaders).data
        XCTAssertEqual((whole["participants"] as? [Any])?.count, 152, "the call itself: every row")
        XCTAssertNil(whole["participantsTruncated"])
        XCTAssertEqual(whole["totalParticipants"] as? Int, 32)
        let listed = try XCTUnwrap((h.request("GET", "/v3/calls", headers: h.adminHeaders).json["data"] as? [[String: Any]])?.first)
        let rows = try XCTUnwrap(listed["participants"] as? [[String: Any]])
        XCTAssertEqual(rows.count, 100, "the first hundred")
        XCTAssertEqual(rows.first?["uid"] as? String, "bob")
        XCTAssertEqual(listed["participantsTruncated"] as? Bool, true)
        for total in ["totalParticipants", "totalAudioMinutes", "totalVideoMinutes", "totalDurationInMinutes"] {
            XCTAssertEqual(listed[total] as? Double, whole[total] as? Double, "\(total) counts every row")
        }
        XCTAssertEqual(try XCTUnwrap(whole["totalAudioMinutes"] as? Double), 75, accuracy: 0.1, "150 half minutes and two short stays")
        // Ann, the 152nd row, sees her own row in the listing too.
        let annToken = try XCTUnwrap(h.request("POST", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String)
        let hers = try XCTUnwrap((h.request("GET", "/v3/calls", headers: ["authToken": annToken]).json["data"] as? [[String: Any]])?.first)
        let hersRows = try XCTUnwrap(hers["participants"] as? [[String: Any]])
        XCTAssertEqual(hersRows.count, 101)
        XCTAssertEqual(hersRows.last?["uid"] as? String, "ann")
        XCTAssertEqual(hers["participantsTruncated"] as? Bool, true)
    }

    func testCallListingFiltersPagingAndUserScope() throws {
        let before = epochMilliseconds()
        try runCall("c1", ["ann", "ben"])
        try runCall("c2", ["ann", "cat", "dan"])
        try runCall("c3", ["cat"])
        func sessions(_ query: String, _ headers: [String: String]? = nil) -> [String] {
            let r = h.request("GET", "/v3/calls\(query)", headers: headers ?? h.adminHeaders)
            return (r.json["data"] as? [[String: Any]])?.compactMap { $0["sessionId"] as? String } ?? ["error: \(r.errorCode ?? "?")"]
        }
        XCTAssertEqual(sessions(""), ["c3", "c2", "c1"], "newest first")
        XCTAssertEqual(sessions("?uid=ann"), ["c2", "c1"])
        XCTAssertEqual(sessions("?participantsCount=3"), ["c2"])
        XCTAssertEqual(sessions("?status=ended&type=audio&receiverType=group"), ["c3", "c2", "c1"])
        XCTAssertEqual(sessions("?status=ongoing"), [])
        XCTAssertEqual(sessions("?hasRecording=true"), [])
        XCTAssertEqual(sessions("?hasRecording=false&perPage=1&page=2"), ["c2"])
        XCTAssertEqual(sessions("?startedAt=\(before)").count, 3)
        XCTAssertEqual(sessions("?endedAt=\(before)"), [])
        XCTAssertEqual(sessions("?type=fax"), ["error: ERR_BAD_REQUEST"])
        XCTAssertEqual(sessions("?participantsCount=-1"), ["error: ERR_BAD_REQUEST"])

        // A user with an auth token sees only the calls they were in.
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"ben","authKey":"\#(h.server.keys.authKey)"}"#)
        let benToken = try XCTUnwrap(login.data["authToken"] as? String)
        XCTAssertEqual(sessions("", ["authToken": benToken]), ["c1"])
        XCTAssertEqual(h.request("GET", "/v3/calls/c2", headers: ["authToken": benToken]).errorCode, "ERR_CALL_SESSION_NOT_FOUND")
        XCTAssertEqual(h.request("GET", "/v3/calls").errorCode, "AUTH_ERR_EMPTY_APIKEY")

        let c2 = h.request("GET", "/v3/calls/c2", headers: h.adminHeaders).data
        XCTAssertEqual(c2["totalParticipants"] as? Int, 3)
        XCTAssertEqual(c2["receiverType"] as? String, "group")
        XCTAssertNotNil(c2["totalDuration"] as? String)
        let ps = try XCTUnwrap(c2["participants"] as? [[String: Any]])
        XCTAssertEqual(ps.compactMap { $0["uid"] as? String }, ["ann", "cat", "dan"])
        for p in ps {
            XCTAssertEqual(p["state"] as? String, "left")
            XCTAssertEqual(p["isJoined"] as? Bool, false)
            XCTAssertNotNil(p["deviceId"] as? String)
            XCTAssertNotNil(p["totalAudioMinutes"] as? Double)
            XCTAssertEqual(p["totalVideoMinutes"] as? Double, 0, "an audio call has no video minutes")
        }
    }
}
