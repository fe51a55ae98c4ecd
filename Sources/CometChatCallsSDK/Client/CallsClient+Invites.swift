import CallsCore
import Foundation

/// An invite to a session as the server minted it: share `link` (the invite page with the grant);
/// it expires at `expiresAt` (epoch ms) and may be limited to `maxUses`.
public struct SessionInvite: Sendable, Equatable, Decodable {
    public var inviteId: String
    public var sessionId: String
    /// `guest` (no account needed) or `participant`.
    public var role: String
    public var expiresAt: Int64
    public var maxUses: Int?
    /// The signed grant (what `redeemInvite` takes); holds no key.
    public var invite: String
    public var link: String
}

// MARK: Invites (CallRoom): a signed, expiring grant instead of a shared key
extension CallsClient {
    /// Mints an invite to `sessionID` (you must be in its call now): `role` `guest` lets someone
    /// without an account join with a display name; `ttlSeconds` 60…30 days (default a day);
    /// `maxUses` nil: any number until it expires.
    public func createInvite(sessionID: String, role: String = "guest", ttlSeconds: Int? = nil,
                             maxUses: Int? = nil) async throws(CometChatCallException) -> SessionInvite {
        guard let u = user else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "Log in before inviting.")
        }
        struct Wire: Encodable, Sendable { var role: String; var ttlSeconds: Int?; var maxUses: Int? }
        return try await rest.call("POST", "/v3/rooms/\(sessionID)/invites", headers: ["authToken": u.authToken],
                                   encodable: Wire(role: role, ttlSeconds: ttlSeconds, maxUses: maxUses), as: SessionInvite.self)
    }

    /// A guest invite to `sessionID` to share: the one this client minted last, while it has
    /// more than an hour to live, else a new one (a day long). Sharing the link again does not
    /// make another invite each time: the server keeps at most 20 live ones per participant.
    public func guestInvite(sessionID: String) async throws(CometChatCallException) -> SessionInvite {
        let now = epochMilliseconds()
        if let kept = published.withLock({ $0.guestInvite }), kept.sessionId == sessionID, kept.expiresAt - now > 3_600_000 {
            return kept
        }
        let made = try await createInvite(sessionID: sessionID)
        published.withLock { $0.guestInvite = made }
        return made
    }

    /// Revokes an invite you made (who came in with it leaves; it lets nobody in any more).
    public func revokeInvite(sessionID: String, inviteID: String) async throws(CometChatCallException) {
        guard let u = user else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "Log in first.")
        }
        struct Done: Decodable, Sendable { var success: Bool }
        _ = try await rest.call("DELETE", "/v3/rooms/\(sessionID)/invites/\(inviteID)", headers: ["authToken": u.authToken], as: Done.self)
    }

    /// Redeems an invite (`invite=` of a link) for a call token of its session: as the logged-in
    /// user, or — not logged in, a guest invite — as a guest known by `name` (you are then the
    /// client's user until you log out). Returns the session and the token to join with.
    public func redeemInvite(_ invite: String, name: String?) async throws(CometChatCallException) -> (sessionID: String, callToken: String) {
        struct Body: Decodable, Sendable { var sessionId: String; var uid: String; var name: String; var token: String }
        var headers: [String: String] = [:]
        if let u = user { headers["authToken"] = u.authToken }
        var body = ["invite": invite]
        if let name { body["name"] = name }
        let b = try await rest.call("POST", "/v3/invites/redeem", headers: headers, body: body, as: Body.self)
        if user == nil { published.withLock { $0.user = CallsUser(uid: b.uid, name: b.name, status: "guest", authToken: "") } }
        return (b.sessionId, b.token)
    }
}
