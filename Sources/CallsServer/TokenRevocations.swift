import CallsCore
import CallsSecurity

/// Which call tokens no longer count: for each user whose tokens were revoked (or who was
/// deleted), the time before which their tokens were issued. Kept in the store
/// (`token_revocations`) and loaded at start; the rooms read it on every join.
///
/// Thread rules: any thread (a lock).
final class TokenRevocations: Sendable {
    private let notBefore: Locked<[String: Int64]>
    /// Auth tokens revoked one by one (`tokenId`): the call tokens they minted (`atid`) no longer count.
    private let authTokens: Locked<Set<String>>

    init(_ initial: [String: Int64] = [:], authTokens: Set<String> = []) {
        notBefore = Locked(initial)
        self.authTokens = Locked(authTokens)
    }

    /// Call tokens minted with auth token `id` are refused from now on.
    func revoke(authToken id: String) { authTokens.withLock { _ = $0.insert(id) } }

    /// Invite grants revoked: the call tokens redeemed from them no longer count.
    private let invites = Locked<Set<String>>([])
    func revoke(invite id: String) { invites.withLock { _ = $0.insert(id) } }

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
