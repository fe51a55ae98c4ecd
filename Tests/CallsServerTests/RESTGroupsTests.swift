@testable import CallsServer
import CallRoomTestSupport
import Foundation
import XCTest

/// Groups over REST: who may create, see, change and delete them.
final class RESTGroupsTests: XCTestCase {
    func testGroupsAndTheirMembersWithOwnersMembersAndTheOperator() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let (url, app, key) = (h.server.url, h.server.keys.appId, h.server.keys.authKey)
        let ann = ["authToken": try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "ann")]
        let bob = ["authToken": try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "bob")]
        _ = try RingingTests.authToken(url: url, appId: app, authKey: key, uid: "cat")

        XCTAssertEqual(h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"bad guid!"}"#).errorCode, "ERR_GUID_INVALID")
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"g","members":["ghost"]}"#).errorCode, "ERR_UID_NOT_FOUND")
        let g = h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"g","name":"  Gee  ","members":["bob"]}"#)
        XCTAssertEqual(g.data["name"] as? String, "Gee")
        XCTAssertEqual(g.data["members"] as? [String], ["ann", "bob"])
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"g"}"#).errorCode, "ERR_GUID_ALREADY_EXISTS")
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: h.adminHeaders, body: #"{"guid":"h"}"#).errorCode, "ERR_BAD_REQUEST", "the operator names an owner")
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: h.adminHeaders, body: #"{"guid":"h","owner":"cat"}"#).data["owner"] as? String, "cat")

        // Members see their groups; others do not.
        XCTAssertEqual((h.request("GET", "/v3/groups", headers: bob).json["data"] as? [[String: Any]])?.compactMap { $0["guid"] as? String }, ["g"])
        XCTAssertEqual((h.request("GET", "/v3/groups", headers: h.adminHeaders).json["data"] as? [[String: Any]])?.count, 2)
        XCTAssertEqual(h.request("GET", "/v3/groups/h", headers: bob).errorCode, "ERR_GUID_NOT_FOUND")
        // Only the owner (or the operator) changes a group; a member may leave.
        XCTAssertEqual(h.request("POST", "/v3/groups/g/members", headers: bob, body: #"{"uids":["cat"]}"#).errorCode, "ERR_NOT_GROUP_OWNER")
        XCTAssertEqual(h.request("POST", "/v3/groups/g/members", headers: ann, body: #"{"uids":["cat"]}"#).data["members"] as? [String],
                       ["ann", "bob", "cat"])
        XCTAssertEqual(h.request("DELETE", "/v3/groups/g/members/cat", headers: bob).errorCode, "ERR_NOT_GROUP_OWNER")
        XCTAssertEqual(h.request("DELETE", "/v3/groups/g/members/bob", headers: bob).data["members"] as? [String], ["ann", "cat"], "bob leaves")
        XCTAssertEqual(h.request("DELETE", "/v3/groups/g/members/ann", headers: ann).errorCode, "ERR_BAD_REQUEST", "the owner cannot leave")
        XCTAssertEqual(h.request("DELETE", "/v3/groups/g", headers: bob).errorCode, "ERR_GUID_NOT_FOUND", "no longer a member")
        XCTAssertEqual(h.request("DELETE", "/v3/groups/g", headers: ann).data["success"] as? Bool, true)
        XCTAssertEqual(h.request("GET", "/v3/groups/g", headers: h.adminHeaders).status, 404)
        XCTAssertEqual(h.request("PUT", "/v3/groups/g", headers: h.adminHeaders).status, 405)
    }

    /// The attack: a user makes groups in a loop (each up to 101 rows). They own at most 100
    /// made with their own auth token; deleting one makes room; the operator is not limited.
    func testAUserOwnsAtMostAHundredGroups() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let ann = ["authToken": try RingingTests.authToken(url: h.server.url, appId: h.server.keys.appId, authKey: h.server.keys.authKey, uid: "ann")]
        for i in 0..<RESTRouter.maxGroupsPerOwner {
            XCTAssertEqual(h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"g\#(i)"}"#).status, 200)
        }
        let refused = h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"one-more"}"#)
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.errorCode, "ERR_LIMIT_REACHED")
        XCTAssertEqual(h.request("DELETE", "/v3/groups/g0", headers: ann).status, 200)
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"one-more"}"#).status, 200, "deleting one makes room")
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: h.adminHeaders, body: #"{"guid":"by-operator","owner":"ann"}"#).status, 200,
                       "the operator is not limited")
    }

    /// Ringing a group rings, pushes to and writes a row for every member, and a group's owner
    /// adds anyone with an account: one group could be every user of the app. A group holds at
    /// most 1,000 (the operator's groups too); an addition past it adds nobody.
    func testAGroupHoldsAtMostAThousandMembers() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let ann = ["authToken": try RingingTests.authToken(url: h.server.url, appId: h.server.keys.appId, authKey: h.server.keys.authKey, uid: "ann")]
        let db = try h.storeDatabase()
        for i in 0..<1_100 {
            try db.execute("INSERT INTO users(uid, name, created_at) VALUES (?, ?, ?)", [.text("u\(i)"), .text("U\(i)"), .int(Int64(i))])
        }
        XCTAssertEqual(h.request("POST", "/v3/groups", headers: ann, body: #"{"guid":"all"}"#).status, 200)
        func add(_ range: Range<Int>, as headers: [String: String]) -> BlockingHTTP.Reply {
            h.request("POST", "/v3/groups/all/members", headers: headers,
                      body: #"{"uids":[\#(range.map { "\"u\($0)\"" }.joined(separator: ","))]}"#)
        }
        for start in stride(from: 0, to: 900, by: 100) { XCTAssertEqual(add(start..<(start + 100), as: ann).status, 200, "\(start)") }
        XCTAssertEqual(add(900..<999, as: ann).status, 200, "999 added and ann: 1,000")
        let refused = add(999..<1_000, as: ann)
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.errorCode, "ERR_LIMIT_REACHED")
        XCTAssertEqual(add(0..<50, as: ann).status, 200, "members already in are no new ones")
        XCTAssertEqual(add(1_000..<1_100, as: h.adminHeaders).errorCode, "ERR_LIMIT_REACHED", "the operator too: nobody of the hundred added")
        XCTAssertEqual((h.request("GET", "/v3/groups/all", headers: h.adminHeaders).data["members"] as? [Any])?.count, 1_000)
        XCTAssertEqual(h.request("DELETE", "/v3/groups/all/members/u0", headers: ann).status, 200)
        XCTAssertEqual(add(999..<1_000, as: ann).status, 200, "one out, one in")
    }
}
