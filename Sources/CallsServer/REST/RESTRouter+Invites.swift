import CallsCore
import CallsSecurity
import CallsStore
import CallsTransport
import Foundation

/// An invite as `POST /v3/rooms/{sessionId}/invites` answers it: the grant and the link to share.
struct InviteBody: Encodable {
    var inviteId: String
    var sessionId: String
    var role: String
    var expiresAt: Int64
    var maxUses: Int?
    /// The signed grant (`invite=` of the link): never a key, and no call token either.
    var invite: String
    var link: String
}

/// What `POST /v3/invites/redeem` answers: a call token for the invite's session.
struct RedeemedBody: Encodable {
    var sessionId: String
    var uid: String
    var name: String
    var token: String
}

// MARK: Invite grants (#34): a signed, expiring, room-scoped grant in the share link
extension RESTRouter {
    static let inviteRoles = ["guest", "participant"]
    /// Live invites (not expired, revoked or used up) a session may hold, and each participant
    /// who makes them (the operator has no limit of its own): every one is a row, and the list
    /// answers whole.
    static let maxLiveInvitesPerSession = 1_000
    static let maxLiveInvitesPerMaker = 20

    /// `POST /v3/rooms/{sessionId}/invites`: the operator, or someone in the session's live call.
    func createInvite(_ r: HTTPRequest, sessionId: String) throws -> HTTPResponse {
        try validate(sessionId: sessionId)
        guard !sessionId.hasPrefix(CallTokenClaims.ringingSessionPrefix) else {
            throw ServerError(.notCallParty, "A ringing call's room takes only its parties; it has no invites.")
        }
        let by: String
        if r.header("apikey") != nil {
            try requireAPIKey(r)
            by = "operator"
        } else {
            let u = try requireUser(r)
            guard try store.isInLiveCall(uid: u.uid, sessionId: sessionId) else {
                throw ServerError(.forbidden, "Only someone in the call (or the operator) may invite others to it.")
            }
            by = u.uid
        }
        struct Body: Decodable { var role: String?; var ttlSeconds: Int?; var maxUses: Int? }
        let b: Body = r.body.isEmpty ? Body() : try decode(r)
        let role = b.role ?? "guest"
        guard Self.inviteRoles.contains(role) else { throw ServerError.badRequest("role must be guest or participant.") }
        let ttl = b.ttlSeconds ?? 86_400
        guard (60...2_592_000).contains(ttl) else { throw ServerError.badRequest("ttlSeconds must be 60…2592000 (30 days).") }
        if let n = b.maxUses, !(1...10_000).contains(n) { throw ServerError.badRequest("maxUses must be 1…10000.") }
        let now = epochMilliseconds()
        let invite = StoredInvite(inviteId: "inv_" + Crypto.randomHex(8), sessionId: sessionId, role: role, createdBy: by, createdAt: now,
                                  expiresAt: now + Int64(ttl) * 1000, maxUses: b.maxUses, uses: 0, revokedAt: nil)
        let forget = now - Int64(config.callTokenTTLSeconds) * 1000
        switch try store.createInvite(invite, perSession: Self.maxLiveInvitesPerSession,
                                      perMaker: by == "operator" ? nil : Self.maxLiveInvitesPerMaker, forgetBefore: forget) {
        case .created: break
        case .sessionFull:
            throw ServerError(.limitReached, "This session holds \(Self.maxLiveInvitesPerSession) live invites: revoke some, or wait for them to expire.")
        case .makerFull:
            throw ServerError(.limitReached, "You hold \(Self.maxLiveInvitesPerMaker) live invites of this session: revoke some, or wait for them to expire.")
        }
        let grant = signer.sign(CallTokenClaims(app: keys.appId, sub: "invite", sid: sessionId, iat: now / 1000, exp: invite.expiresAt / 1000,
                                                role: role, jti: invite.inviteId, aud: CallTokenClaims.inviteAudience(appId: keys.appId)))
        return ok(InviteBody(inviteId: invite.inviteId, sessionId: sessionId, role: role, expiresAt: invite.expiresAt, maxUses: b.maxUses,
                             invite: grant, link: InvitePage.link(publicURL: publicURL, sessionId: sessionId) + "?invite=" + grant))
    }

    /// `DELETE /v3/rooms/{sessionId}/invites/{inviteId}`: the operator or the invite's maker.
    func deleteInvite(_ r: HTTPRequest, sessionId: String, inviteId: String) throws -> HTTPResponse {
        try validate(sessionId: sessionId)
        let notFound = ServerError(.notFound, "No invite '\(inviteId.prefix(40))' of session '\(sessionId.prefix(80))'.")
        guard let invite = try store.invite(id: inviteId), invite.sessionId == sessionId else { throw notFound }
        if r.header("apikey") != nil {
            try requireAPIKey(r)
        } else {
            guard try requireUser(r).uid == invite.createdBy else { throw ServerError(.forbidden, "Only the operator or its maker may revoke an invite.") }
        }
        _ = try store.revokeInvite(id: inviteId, sessionId: sessionId, at: epochMilliseconds())
        try revoke(.invite(id: inviteId))
        return ok(["success": true])
    }

    /// `POST /v3/invites/redeem` `{invite, name?}`: a call token for the invite's session — as
    /// the caller's own account (an auth token), or, for a guest invite, as a guest with only a
    /// display name (no account, no key).
    func redeemInvite(_ r: HTTPRequest) throws -> HTTPResponse {
        try requireAppID(r)
        struct Body: Decodable { var invite: String; var name: String? }
        let b: Body = try decode(r)
        let now = epochMilliseconds()
        let claims: CallTokenClaims
        do {
            claims = try signer.verify(b.invite, now: now / 1000, audience: CallTokenClaims.inviteAudience(appId: keys.appId))
        } catch {
            throw ServerError(.inviteInvalid, error == .expired ? "This invite has expired." : "This is not a valid invite.")
        }
        let refused = ServerError(.inviteInvalid, "This invite was revoked or used up.")
        guard let gid = claims.jti, let stored = try store.invite(id: gid), stored.sessionId == claims.sid else { throw refused }
        // Who redeems it, checked before a use is taken.
        let uid: String, name: String
        if r.header("authtoken") != nil {
            let u = try requireUser(r)
            (uid, name) = (u.uid, clean(b.name) ?? u.name)
        } else {
            guard stored.role == "guest" else {
                throw ServerError(.emptyAuthToken, "This invite is for people with an account: log in (authToken) to use it.")
            }
            guard let n = clean(b.name) else { throw ServerError.badRequest("name is required: the name others see you by.") }
            (uid, name) = ("guest_" + Crypto.randomHex(6), n)
        }
        guard let invite = try store.useInvite(id: gid, sessionId: claims.sid, at: now) else { throw refused }
        // A grant's participant never moderates (the role is set, so succession passes it by).
        let token = signer.sign(CallTokenClaims(app: keys.appId, sub: uid, sid: claims.sid, iat: now / 1000,
                                                exp: min(now / 1000 + config.callTokenTTLSeconds, invite.expiresAt / 1000 + config.callTokenTTLSeconds),
                                                role: ParticipantRole.participant.rawValue, jti: Crypto.randomHex(16),
                                                aud: CallTokenClaims.audience(appId: keys.appId), gid: gid))
        return ok(RedeemedBody(sessionId: claims.sid, uid: uid, name: name, token: token))
    }
}
