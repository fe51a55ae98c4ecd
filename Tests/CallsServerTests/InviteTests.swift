@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import Foundation
import XCTest

/// Invite grants (#34): a signed, expiring, room-scoped grant in the share link; a guest joins
/// with a display name only; use counts, revocation and removals hold.
final class InviteTests: XCTestCase {
    func login(_ h: ServerHarness, _ uid: String) throws -> String {
        let r = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId], body: #"{"uid":"\#(uid)","authKey":"\#(h.server.keys.authKey)"}"#)
        return try XCTUnwrap(r.data["authToken"] as? String)
    }

    func redeem(_ h: ServerHarness, _ invite: String, name: String?, authToken: String? = nil) -> ServerHarness.Reply {
        var headers = ["appId": h.server.keys.appId]
        if let authToken { headers["authToken"] = authToken }
        let body = name.map { #"{"invite":"\#(invite)","name":"\#($0)"}"# } ?? #"{"invite":"\#(invite)"}"#
        return h.request("POST", "/v3/invites/redeem", headers: headers, body: body)
    }

    func testAGuestJoinsWithAnInviteAndItsLimitsHold() throws {
        let h = try ServerHarness { $0.roomAccess = .invited }
        defer { h.stop(); h.removeData() }
        let app = h.server.keys.appId
        // The host is invited by the operator's role; a stranger is not.
        let hostToken = try XCTUnwrap(h.request("POST", "/v3.0/call_tokens", headers: h.adminHeaders.merging(["appId": app]) { a, _ in a },
                                                body: #"{"sessionId":"inv","uid":"\#(try { _ = try login(h, "host"); return "host" }())","role":"moderator"}"#).data["token"] as? String)
        let host = try SignalProbe(url: h.server.url)
        host.send(.join(.init(callToken: hostToken)))
        XCTAssertNotNil(host.joined())
        let stranger = try SignalProbe(url: h.server.url)
        stranger.send(.join(.init(callToken: try h.callToken(uid: "eve", session: "inv"))))
        XCTAssertEqual(stranger.error(), "ERR_NOT_ALLOWED_IN_ROOM", "invited rooms take no stranger")
        // Someone outside the call cannot mint an invite to it.
        let eve = try login(h, "eve")
        XCTAssertEqual(h.request("POST", "/v3/rooms/inv/invites", headers: ["appId": app, "authToken": eve], body: "{}").status, 403)
        // The host mints one for two guests.
        let minted = h.request("POST", "/v3/rooms/inv/invites", headers: ["appId": app, "authToken": try login(h, "host")], body: #"{"maxUses":2}"#)
        XCTAssertEqual(minted.status, 200, "\(minted.json)")
        let invite = try XCTUnwrap(minted.data["invite"] as? String)
        let link = try XCTUnwrap(minted.data["link"] as? String)
        XCTAssertTrue(link.hasSuffix("/call/inv?invite=" + invite), link)
        for secret in [h.server.keys.authKey, h.server.keys.apiKey, h.server.keys.tokenSecret] { XCTAssertFalse(link.contains(secret), "no key in the link") }
        // Not a call token: the room refuses it as one.
        let misuse = try SignalProbe(url: h.server.url)
        misuse.send(.join(.init(callToken: invite)))
        XCTAssertEqual(misuse.error(), "AUTH_ERR_TOKEN_INVALID")
        // A guest: a display name, no account.
        XCTAssertEqual(redeem(h, invite, name: nil).json["error"].flatMap { ($0 as? [String: Any])?["code"] as? String }, "ERR_BAD_REQUEST")
        let g = redeem(h, invite, name: "Grace")
        let guestToken = try XCTUnwrap(g.data["token"] as? String, "\(g.json)")
        XCTAssertTrue((g.data["uid"] as? String)?.hasPrefix("guest_") == true)
        let guest = try SignalProbe(url: h.server.url)
        guest.send(.join(.init(callToken: guestToken, displayName: "Grace")))
        let joined = try XCTUnwrap(guest.joined(), "\(guest.all)")
        XCTAssertEqual(joined.you.role, .participant, "a guest never moderates")
        XCTAssertEqual(joined.you.name, "Grace")
        // Removed: the grant stays out of the session, whatever is redeemed from it.
        host.send(.removeParticipant(pid: joined.you.pid))
        XCTAssertNotNil(guest.wait { if case .left(.removed, _) = $0 { return true }; return false })
        let again = try XCTUnwrap(redeem(h, invite, name: "Grace again").data["token"] as? String)
        let back = try SignalProbe(url: h.server.url)
        back.send(.join(.init(callToken: again)))
        XCTAssertEqual(back.error(), "ERR_REMOVED_FROM_SESSION", "the grant they used is removed with them")
        XCTAssertEqual(redeem(h, invite, name: "Third").status, 403, "used up (2 uses)")
        XCTAssertEqual(redeem(h, invite, name: "Third").json["error"].flatMap { ($0 as? [String: Any])?["code"] as? String }, "ERR_INVITE_INVALID")
    }

    func testRevokingAnInviteEndsWhoCameInWithIt() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let app = h.server.keys.appId
        let host = try SignalProbe(url: h.server.url)
        host.send(.join(.init(callToken: try h.callToken(uid: "host", session: "rev"))))
        XCTAssertNotNil(host.joined())
        let minted = h.request("POST", "/v3/rooms/rev/invites", headers: h.adminHeaders.merging(["appId": app]) { a, _ in a }, body: #"{"role":"guest"}"#)
        let inviteId = try XCTUnwrap(minted.data["inviteId"] as? String)
        let token = try XCTUnwrap(redeem(h, try XCTUnwrap(minted.data["invite"] as? String), name: "Guest").data["token"] as? String)
        let spare = try XCTUnwrap(redeem(h, try XCTUnwrap(minted.data["invite"] as? String), name: "Spare").data["token"] as? String)
        let guest = try SignalProbe(url: h.server.url)
        guest.send(.join(.init(callToken: token)))
        XCTAssertNotNil(guest.joined())
        XCTAssertEqual((h.request("GET", "/v3/rooms/rev/invites", headers: h.adminHeaders).json["data"] as? [[String: Any]])?.first?["uses"] as? Int, 2)
        XCTAssertEqual(h.request("DELETE", "/v3/rooms/rev/invites/\(inviteId)", headers: h.adminHeaders).status, 200)
        XCTAssertNotNil(guest.wait { if case .left(.revoked, _) = $0 { return true }; return false }, "revoked: who came in with it leaves")
        let late = try SignalProbe(url: h.server.url)
        late.send(.join(.init(callToken: spare)))
        XCTAssertEqual(late.error(), "AUTH_ERR_TOKEN_REVOKED", "a call token redeemed before is refused")
        XCTAssertEqual(redeem(h, try XCTUnwrap(minted.data["invite"] as? String), name: "Late").status, 403)
        XCTAssertFalse(host.isClosed)
    }

    /// The attack: someone in the call mints invites in a loop (each a row, the list answered
    /// whole). A participant holds at most 20 live ones of a session; revoking one makes room;
    /// the operator has only the session's limit.
    func testInvitesAreBoundedPerMakerAndSession() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let app = h.server.keys.appId
        let host = try SignalProbe(url: h.server.url)
        host.send(.join(.init(callToken: try h.callToken(uid: "host", session: "many"))))
        XCTAssertNotNil(host.joined())
        let asHost = ["appId": app, "authToken": try login(h, "host")]
        var ids: [String] = []
        for _ in 0..<RESTRouter.maxLiveInvitesPerMaker {
            let r = h.request("POST", "/v3/rooms/many/invites", headers: asHost, body: "{}")
            ids.append(try XCTUnwrap(r.data["inviteId"] as? String, "\(r.json)"))
        }
        let refused = h.request("POST", "/v3/rooms/many/invites", headers: asHost, body: "{}")
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.errorCode, "ERR_LIMIT_REACHED")
        XCTAssertEqual(h.request("DELETE", "/v3/rooms/many/invites/\(ids[0])", headers: asHost).status, 200)
        XCTAssertEqual(h.request("POST", "/v3/rooms/many/invites", headers: asHost, body: "{}").status, 200, "revoking one makes room")
        let operatorHeaders = h.adminHeaders.merging(["appId": app]) { a, _ in a }
        XCTAssertEqual(h.request("POST", "/v3/rooms/many/invites", headers: operatorHeaders, body: "{}").status, 200, "the operator: the session's limit only")
        XCTAssertEqual((h.request("GET", "/v3/rooms/many/invites", headers: h.adminHeaders).json["data"] as? [[String: Any]])?.count, 22)
    }
}
