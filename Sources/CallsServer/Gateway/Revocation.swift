/// What the operator revoked: everything a user held (deleted, or all their auth tokens), or
/// one auth token (`tokenId`) — the presence connections that said hello with it and the
/// participants who joined with call tokens it minted (`atid`). A value; any thread.
enum Revocation: Sendable, Equatable {
    case user(String)
    case authToken(uid: String, id: String)
    /// An invite grant: the participants who joined with it.
    case invite(id: String)

    /// The user it is about (nil: an invite's, whoever redeemed it).
    var uid: String? {
        switch self {
        case .user(let u), .authToken(let u, _): return u
        case .invite: return nil
        }
    }

    /// Whether a connection of `uid` authenticated with auth token `tokenId` (nil: unknown, or
    /// the operator's call token), or redeemed from invite `grantId`, falls under it.
    func covers(uid: String, tokenId: String?, grantId: String? = nil) -> Bool {
        switch self {
        case .user(let u): return u == uid
        case .authToken(let u, let id): return u == uid && tokenId == id
        case .invite(let id): return grantId == id
        }
    }
}
