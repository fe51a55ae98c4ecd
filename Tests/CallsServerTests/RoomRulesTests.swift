@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import CallsTransport
import Foundation
import XCTest

/// Rooms' access rules (issue #15), each attack reproduced: a removed participant rejoining with
/// the same token, one token filling a room, an operator's role overridden, anyone walking in.
final class RoomRulesTests: XCTestCase {
    /// A call token issued by the operator (apikey), with `role`.
    private func operatorToken(_ h: ServerHarness, uid: String, session: String, role: String) throws -> String {
        _ = try h.callToken(uid: uid, session: session)  // the user exists
        let t = h.request("POST", "/v3.0/call_tokens", headers: ["appId": h.server.keys.appId, "apikey": h.server.keys.apiKey],
                          body: #"{"sessionId":"\#(session)","uid":"\#(uid)","role":"\#(role)"}"#)
        return try XCTUnwrap(t.data["token"] as? String, "\(t)")
    }

    private func join(_ h: ServerHarness, _ token: String, passcode: String? = nil) throws -> SignalProbe {
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: token, passcode: passcode)))
        return p
    }

    /// The attack: the rooms give each user five wrong passcodes per session, so someone with
    /// many accounts guesses five times each. An address now has 20 wrong guesses, across users
    /// and sessions, then one every 30 s: past that a join with a passcode — the right one too —
    /// is `ERR_RATE_LIMITED` without being checked. Joins without a passcode, and rooms without
    /// one, are not touched.
    func testWrongPasscodesAreRationedPerAddressAcrossUsers() throws {
        let h = try ServerHarness { $0.addressLimitsExemptLoopback = false }
        defer { h.stop(); h.removeData() }
        XCTAssertEqual(h.request("PUT", "/v3/rooms/vault", headers: h.adminHeaders, body: #"{"passcode":"4321"}"#).status, 200)
        for user in 0..<5 {
            for guess in 0..<4 {
                XCTAssertEqual(try join(h, try h.callToken(uid: "m\(user)", session: "vault"), passcode: "\(1000 + user * 4 + guess)").error(),
                               "ERR_PASSCODE", "user \(user), guess \(guess)")
            }
        }
        let fresh = try join(h, try h.callToken(uid: "ann", session: "vault"), passcode: "4321")
        guard case .error(let code, let text)? = fresh.wait({ if case .error = $0 { return true }; return false }) else {
            return XCTFail("the 21st guess was not answered")
        }
        XCTAssertEqual(code, .rateLimited, "20 wrong from this address: the right passcode is not even checked")
        // ("try again in N s": the 30 s from the last wrong guess, less what has passed since — a loaded machine says 29.)
        let wait = text.split(separator: " ").reversed().dropFirst().first.flatMap { Int($0) }
        XCTAssertTrue(text.contains("from this address") && (25...30).contains(wait ?? 0), text)
        XCTAssertTrue(fresh.waitClosed())
        XCTAssertNotNil(try join(h, try h.callToken(uid: "ann", session: "open-room")).joined(), "a room without a passcode is not touched")
        XCTAssertEqual(try join(h, try h.callToken(uid: "bob", session: "vault")).error(), "ERR_PASSCODE",
                       "a join without a passcode is no guess: told the room needs one")
        // The same from loopback where it is exempt (the default): the rooms' per-user ration alone.
        let exempt = try ServerHarness()
        defer { exempt.stop(); exempt.removeData() }
        XCTAssertEqual(exempt.request("PUT", "/v3/rooms/vault", headers: exempt.adminHeaders, body: #"{"passcode":"4321"}"#).status, 200)
        for user in 0..<5 {
            for guess in 0..<4 { _ = try join(exempt, try exempt.callToken(uid: "m\(user)", session: "vault"), passcode: "\(guess)").error() }
        }
        XCTAssertNotNil(try join(exempt, try exempt.callToken(uid: "ann", session: "vault"), passcode: "4321").joined())
    }

    /// The address's count, on a virtual clock: joins sent one behind the other on a connection
    /// (each checked by the rooms) each spend a guess, and none is let through past what the
    /// address has left while earlier ones are unanswered; being let in spends nothing; the
    /// guesses come back one every 30 s.
    func testAnAddressesGuessesCountJoinsInFlightAndRefill() {
        let g = PasscodeGuesses(addresses: ClientAddresses())
        let s: UInt64 = 1_000_000_000, t0 = 1_000 * s
        let wrong = ServerMessage.error(code: .passcodeWrong, message: "The passcode is not right.")
        // One connection sends 20 joins before any answer: all may go, the 21st may not.
        for _ in 0..<20 { XCTAssertNil(g.admit(1, peer: "203.0.113.9", now: t0)) }
        XCTAssertNotNil(g.admit(1, peer: "203.0.113.9", now: t0), "20 in flight: none past them")
        XCTAssertNil(g.admit(2, peer: "198.51.100.1", now: t0), "another address has its own")
        for _ in 0..<20 { g.sent(wrong, to: 1, now: t0) }
        XCTAssertFalse(g.isPending(1))
        XCTAssertEqual(g.admit(3, peer: "203.0.113.9", now: t0), "Too many wrong passcodes from this address: try again in 30 s.")
        XCTAssertEqual(g.admit(3, peer: "203.0.113.9", now: t0 + 20 * s), "Too many wrong passcodes from this address: try again in 10 s.")
        XCTAssertNil(g.admit(3, peer: "203.0.113.9", now: t0 + 30 * s), "one back after 30 s")
        XCTAssertNotNil(g.admit(4, peer: "203.0.113.9", now: t0 + 30 * s), "and it is in flight")
        g.sent(.lobbyWaiting, to: 3, now: t0 + 30 * s)
        XCTAssertNil(g.admit(4, peer: "203.0.113.9", now: t0 + 30 * s), "let in (here: to the lobby) spends nothing")
        g.closed(4, now: t0 + 30 * s)
        XCTAssertNotNil(g.admit(5, peer: "203.0.113.9", now: t0 + 30 * s),
                        "a join unanswered when its connection closed spent its guess (the rooms check it after the close)")
        XCTAssertNil(g.admit(5, peer: "203.0.113.9", now: t0 + 60 * s))
        g.sent(.lobbyWaiting, to: 5, now: t0 + 60 * s)
        g.closed(5, now: t0 + 60 * s)
        XCTAssertNil(g.admit(7, peer: "203.0.113.9", now: t0 + 60 * s), "a join let in spent nothing, before the close or at it")
        XCTAssertNil(g.admit(6, peer: "127.0.0.1", now: t0), "loopback exempt when asked")
    }

    func testARemovedParticipantStaysOutAndOneTokenIsOneParticipant() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let mod = try join(h, try h.callToken(uid: "mod", session: "rules"))
        XCTAssertEqual(mod.joined()?.you.role, .moderator, "first in, where the room says so (the dev default)")
        let eveToken = try h.callToken(uid: "eve", session: "rules")
        let eve = try join(h, eveToken)
        let evePID = try XCTUnwrap(eve.joined()?.you.pid)
        // The attack: one token, many participants (a room filled from one token).
        XCTAssertEqual(try join(h, eveToken).error(), "ERR_TOKEN_IN_USE")
        mod.send(.removeParticipant(pid: evePID))
        XCTAssertNotNil(eve.wait { if case .left(.removed, _) = $0 { return true }; return false })
        // The attack: back in at once with the same token. Refused, also once the room restarts.
        XCTAssertEqual(try join(h, eveToken).error(), "ERR_REMOVED_FROM_SESSION")
        mod.send(.leave)
        XCTAssertTrue(mod.waitClosed())
        XCTAssertEqual(try join(h, eveToken).error(), "ERR_REMOVED_FROM_SESSION", "the ban outlives the room")
    }

    /// The attack (#34): removed, a new call token, back in 10 ms. Now the user stays out of the
    /// live session whatever token they mint; the operator bans for good and lifts over REST.
    func testARemovedUserStaysOutWithANewTokenAndTheOperatorBansAndLifts() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let mod = try join(h, try h.callToken(uid: "mod", session: "bans"))
        XCTAssertNotNil(mod.joined())
        let eve = try join(h, try h.callToken(uid: "eve", session: "bans"))
        let evePID = try XCTUnwrap(eve.joined()?.you.pid)
        mod.send(.removeParticipant(pid: evePID))
        XCTAssertNotNil(eve.wait { if case .left(.removed, _) = $0 { return true }; return false })
        let back = try join(h, try h.callToken(uid: "eve", session: "bans"))
        XCTAssertEqual(back.error(), "ERR_REMOVED_FROM_SESSION", "a new token does not get back in")
        // The operator lifts the removal: a new token gets in.
        XCTAssertEqual(h.request("DELETE", "/v3/rooms/bans/bans/eve", headers: h.adminHeaders).status, 200)
        let lifted = try join(h, try h.callToken(uid: "eve", session: "bans"))
        XCTAssertNotNil(lifted.joined(), "lifted: \(lifted.all)")
        // A ban for good: out at once, refused, listed; lifted, back in.
        let ban = h.request("PUT", "/v3/rooms/bans/bans/eve", headers: h.adminHeaders)
        XCTAssertEqual(ban.status, 200)
        XCTAssertNotNil(lifted.wait { if case .left(.removed, _) = $0 { return true }; return false }, "banned: removed from the live room")
        XCTAssertEqual(try join(h, try h.callToken(uid: "eve", session: "bans")).error(), "ERR_BANNED_FROM_ROOM")
        XCTAssertEqual(h.request("GET", "/v3/rooms/bans/bans", headers: h.adminHeaders).data["bannedUids"] as? [String], ["eve"])
        XCTAssertEqual(h.request("PUT", "/v3/rooms/bans", headers: h.adminHeaders, body: #"{"moderation":"firstJoiner"}"#).status, 200)
        XCTAssertEqual(h.request("GET", "/v3/rooms/bans/bans", headers: h.adminHeaders).data["bannedUids"] as? [String], ["eve"],
                       "replacing the rules keeps the bans")
        XCTAssertEqual(h.request("GET", "/v3/rooms/bans/bans").status, 401)
        XCTAssertEqual(h.request("DELETE", "/v3/rooms/bans/bans/eve", headers: h.adminHeaders).status, 200)
        let eveBack = try join(h, try h.callToken(uid: "eve", session: "bans"))
        XCTAssertNotNil(eveBack.joined())
        // A moderator bans for good from the call (the panel's B): the same ban, listed for moderators.
        mod.send(.setBan(uid: "eve", banned: true))
        XCTAssertNotNil(eveBack.wait { if case .left(.removed, _) = $0 { return true }; return false })
        XCTAssertNotNil(mod.wait { if case .roomBans(let u) = $0 { return u == ["eve"] }; return false })
        XCTAssertEqual(try join(h, try h.callToken(uid: "eve", session: "bans")).error(), "ERR_BANNED_FROM_ROOM")
        XCTAssertEqual(h.request("GET", "/v3/rooms/bans/bans", headers: h.adminHeaders).data["bannedUids"] as? [String], ["eve"])
        mod.send(.setBan(uid: "eve", banned: false))
        XCTAssertNotNil(mod.wait { if case .roomBans(let u) = $0 { return u.isEmpty }; return false })
        XCTAssertNotNil(try join(h, try h.callToken(uid: "eve", session: "bans")).joined())
    }

    func testAnOperatorsRoleIsNeverOverridden() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let boss = try join(h, try operatorToken(h, uid: "boss", session: "roles", role: "moderator"))
        XCTAssertEqual(boss.joined()?.you.role, .moderator)
        let guest = try join(h, try operatorToken(h, uid: "guest", session: "roles", role: "participant"))
        XCTAssertEqual(guest.joined()?.you.role, .participant)
        let user = try join(h, try h.callToken(uid: "user", session: "roles"))
        XCTAssertEqual(user.joined()?.you.role, .participant)
        // The moderator leaves: the guest (operator said participant) joined first but is passed over.
        boss.send(.leave)
        XCTAssertNotNil(user.wait { if case .participantUpdated(let p, change: .roleChanged) = $0 { return p.uid == "user" && p.role == .moderator }; return false },
                        "the longest present participant whose role the operator did not set")
        XCTAssertTrue(holds(for: 0.2) { !guest.all.contains { if case .participantUpdated(let p, change: .roleChanged) = $0 { return p.uid == "guest" }; return false } },
                       "\(guest.all)")
    }

    func testOperatorModerationAllowListAndPasscode() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let set = h.request("PUT", "/v3/rooms/board", headers: h.adminHeaders,
                            body: #"{"moderation":"operator","passcode":"s3cret-code","allowedUids":["ann","ben"]}"#)
        XCTAssertEqual(set.data["hasPasscode"] as? Bool, true, "\(set)")
        XCTAssertFalse(set.text.contains("s3cret-code"), "the passcode is never shown")
        XCTAssertEqual(h.request("GET", "/v3/rooms/board", headers: h.adminHeaders).data["allowedUids"] as? [String], ["ann", "ben"])
        XCTAssertEqual(h.request("PUT", "/v3/rooms/board", headers: h.adminHeaders, body: #"{"moderation":"chaos"}"#).errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("PUT", "/v3/rooms/held", headers: h.adminHeaders, body: #"{"moderatorMute":"forever"}"#).errorCode, "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("GET", "/v3/rooms/board", headers: h.adminHeaders).data["moderatorMute"] as? String, "selfUnmute", "the default")
        XCTAssertEqual(h.request("PUT", "/v3/rooms/held", headers: h.adminHeaders, body: #"{"moderatorMute":"untilAllowed"}"#)
            .data["moderatorMute"] as? String, "untilAllowed")
        XCTAssertEqual(h.request("PUT", "/v3/rooms/board", body: #"{}"#).errorCode, "AUTH_ERR_EMPTY_APIKEY")
        // Not on the list; no passcode; the wrong one: refused. The right one: in, and not moderator.
        XCTAssertEqual(try join(h, try h.callToken(uid: "mallory", session: "board"), passcode: "s3cret-code").error(), "ERR_NOT_ALLOWED_IN_ROOM")
        XCTAssertEqual(try join(h, try h.callToken(uid: "ann", session: "board")).error(), "ERR_PASSCODE")
        XCTAssertEqual(try join(h, try h.callToken(uid: "ann", session: "board"), passcode: "guess").error(), "ERR_PASSCODE")
        let ann = try join(h, try h.callToken(uid: "ann", session: "board"), passcode: "s3cret-code")
        XCTAssertEqual(ann.joined()?.you.role, .participant, "operator moderation: the first in is no moderator")
        // Rules go: anyone with a token joins again.
        XCTAssertEqual(h.request("DELETE", "/v3/rooms/board", headers: h.adminHeaders).status, 200)
        XCTAssertNotNil(try join(h, try h.callToken(uid: "mallory", session: "board")).joined())
    }

    func testProductionDefaultIsOperatorModeration() throws {
        let h = try ServerHarness { $0.firstJoinerModerator = false }
        defer { h.stop(); h.removeData() }
        XCTAssertEqual(try join(h, try h.callToken(uid: "first", session: "prod")).joined()?.you.role, .participant)
        XCTAssertEqual(h.request("GET", "/v3/rooms/prod", headers: h.adminHeaders).data["moderation"] as? String, "operator")
    }
}
