/// What the operator revoked: everything a user held (deleted, or all their auth tokens), or
/// one auth token (`tokenId`) — the presence connections that said hello with it and the
/// participants who joined with call tokens it minted (`atid`). A value; any thread.
enum Revocation: Sendable, Equatable {
    case user(String)
    case authToken(uid: String, id: String)

    var uid: String {
        switch self {
        case .user(let u), .authToken(let u, _): return u
        }
    }

    /// Whether a connection of `uid` authenticated with auth token `tokenId` (nil: unknown, or
    /// the operator's call token) falls under it.
    func covers(uid: String, tokenId: String?) -> Bool {
        switch self {
        case .user(let u): return u == uid
        case .authToken(let u, let id): return u == uid && tokenId == id
        }
    }
}
