import CallsCore
import CallsSecurity

/// Which call tokens no longer count: for each user whose tokens were revoked (or who was
/// deleted), the time before which their tokens were issued; and those minted by one revoked
/// auth token (`atid`) or redeemed from a revoked invite (`gid`). Kept in the store
/// (`token_revocations`, `auth_token_revocations`, `invites`) and loaded at start; the rooms
/// read it on every join.
///
/// Thread rules: any thread (a lock).
final class TokenRevocations: Sendable {
    private let notBefore: Locked<[String: Int64]>
    /// Auth tokens revoked one by one (`tokenId`): the call tokens they minted (`atid`) no longer count.
    private let authTokens: Locked<Set<String>>
    /// Invite grants revoked: the call tokens redeemed from them (`gid`) no longer count.
    private let invites: Locked<Set<String>>

    init(_ initial: [String: Int64] = [:], authTokens: Set<String> = [], invites: Set<String> = []) {
        notBefore = Locked(initial)
        self.authTokens = Locked(authTokens)
        self.invites = Locked(invites)
    }

    /// The call tokens `r` covers are refused from now on (`notBefore`: a user's revocation
    /// time, epoch seconds; the other kinds need none).
    func revoke(_ r: Revocation, notBefore seconds: Int64 = 0) {
        switch r {
        case .user(let uid): revoke(uid: uid, before: seconds)
        case .authToken(_, let id): authTokens.withLock { _ = $0.insert(id) }
        case .invite(let id): invites.withLock { _ = $0.insert(id) }
        }
    }

    /// Tokens of `uid` issued before `seconds` are refused from now on.
    func revoke(uid: String, before seconds: Int64) {
        notBefore.withLock { $0[uid] = max($0[uid] ?? 0, seconds) }
    }

    /// Whether a verified token still counts.
    func allows(_ claims: CallTokenClaims) -> Bool {
        if let atid = claims.atid, authTokens.withLock({ $0.contains(atid) }) { return false }
        if let gid = claims.gid, invites.withLock({ $0.contains(gid) }) { return false }
        guard let nb = notBefore.withLock({ $0[claims.sub] }) else { return true }
        return claims.iat >= nb
    }
}
