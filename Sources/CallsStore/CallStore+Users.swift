import CallsCore
import CallsSecurity
import CallsDatabase

/// One page of a listing, with the total count across pages.
public struct Page<T: Sendable>: Sendable {
    public var items: [T]
    public var total: Int
    public var page: Int
    public var perPage: Int
    public var totalPages: Int { total == 0 ? 0 : (total + perPage - 1) / perPage }
}

/// An issued auth token as listed: never the plaintext, only an id derived from its hash.
public struct StoredAuthToken: Sendable, Equatable, Codable {
    /// The first 16 hex digits of the token's SHA-256.
    public var tokenId: String
    public var uid: String
    /// Seconds since the epoch.
    public var createdAt: Int64
}

/// How many auth tokens one user holds: issuing another revokes the oldest (a device that has
/// not logged in since its user's last 100 logins logs in again).
package let maxAuthTokensPerUser = 100

extension CallStore {
    /// Forgets the auth tokens made before `before` (epoch ms): past `authTokenTTLSeconds` they
    /// open nothing (`user(authToken:maxAgeSeconds:)`), and their rows only waited. Returns how
    /// many, at most `limit` (a page: retention calls it again while it forgets that many).
    /// (No revocation is recorded: the call tokens they minted live their own 24 hours, as they
    /// would have had the auth token stayed.)
    package func forgetAuthTokens(madeBefore before: Int64, limit: Int = 1_000) throws(DatabaseError) -> Int {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM auth_tokens WHERE token_hash IN (SELECT token_hash FROM auth_tokens WHERE created_at < ? LIMIT ?)",
                           [.int(before), .int(Int64(max(1, limit)))])
            return db.changes
        }
    }

    /// How many users the app has.
    package func userCount() throws(DatabaseError) -> Int {
        try locked { () throws(DatabaseError) in Int(try db.query("SELECT COUNT(*) FROM users").first?.first?.int ?? 0) }
    }

    /// Users in creation order.
    public func users(page: Int, perPage: Int) throws(DatabaseError) -> Page<StoredUser> {
        try locked { () throws(DatabaseError) in
            let total = Int(try db.query("SELECT COUNT(*) FROM users").first?.first?.int ?? 0)
            let rows = try db.query("SELECT uid, name, avatar, created_at FROM users ORDER BY created_at, uid LIMIT ? OFFSET ?",
                                    [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))])
            return Page(items: rows.map(Self.user), total: total, page: page, perPage: perPage)
        }
    }

    /// Updates a user's name and/or avatar (an empty avatar removes it). Nil when the user does not exist.
    public func updateUser(uid: String, name: String?, avatar: String?) throws(DatabaseError) -> StoredUser? {
        try locked { () throws(DatabaseError) in
            guard try !db.query("SELECT 1 FROM users WHERE uid = ?", [.text(uid)]).isEmpty else { return nil }
            if let name { try db.execute("UPDATE users SET name = ? WHERE uid = ?", [.text(name), .text(uid)]) }
            if let avatar {
                try db.execute("UPDATE users SET avatar = ? WHERE uid = ?", [avatar.isEmpty ? .null : .text(avatar), .text(uid)])
            }
            return try db.query("SELECT uid, name, avatar, created_at FROM users WHERE uid = ?", [.text(uid)]).first.map(Self.user)
        }
    }

    /// Deletes a user and their auth tokens; their call history stays. Returns whether they existed.
    public func deleteUser(uid: String) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                guard try !db.query("SELECT 1 FROM users WHERE uid = ?", [.text(uid)]).isEmpty else { return false }
                try db.execute("DELETE FROM auth_tokens WHERE uid = ?", [.text(uid)])
                try db.execute("DELETE FROM push_tokens WHERE uid = ?", [.text(uid)])
                try db.execute("DELETE FROM users WHERE uid = ?", [.text(uid)])
                return true
            }
        }
    }

    public func authTokens(uid: String) throws(DatabaseError) -> [StoredAuthToken] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT token_hash, uid, created_at FROM auth_tokens WHERE uid = ? ORDER BY created_at", [.text(uid)]).map {
                StoredAuthToken(tokenId: String(($0[0].text ?? "").prefix(16)), uid: $0[1].text ?? "", createdAt: ($0[2].int ?? 0) / 1000)
            }
        }
    }

    /// Revokes one token of `uid`, given as plaintext or as its `tokenId`: removed, and its id
    /// kept in `auth_token_revocations` (call tokens it minted are refused). Returns its id, or
    /// nil when `uid` has no such token.
    public func deleteAuthToken(uid: String, token: String, at now: Int64 = epochMilliseconds()) throws(DatabaseError) -> String? {
        try locked { () throws(DatabaseError) -> String? in
            let hash = Crypto.sha256Hex(token)
            guard let row = try db.query("SELECT token_hash FROM auth_tokens WHERE uid = ? AND (token_hash = ? OR (length(?) = 16 AND substr(token_hash, 1, 16) = ?))",
                                         [.text(uid), .text(hash), .text(token), .text(token)]).first, let found = row[0].text else { return nil }
            return try db.transaction { () throws(DatabaseError) in try revokeAuthTokenRow(hash: found, at: now) }
        }
    }

    /// Removes one auth token's row and keeps its id in `auth_token_revocations` (call tokens it
    /// minted are refused); returns the id. Caller holds the lock, inside a transaction.
    package func revokeAuthTokenRow(hash: String, at now: Int64) throws(DatabaseError) -> String {
        let id = String(hash.prefix(16))
        try db.execute("DELETE FROM auth_tokens WHERE token_hash = ?", [.text(hash)])
        try db.execute("INSERT INTO auth_token_revocations(token_id, revoked_at) VALUES (?, ?) ON CONFLICT(token_id) DO NOTHING",
                       [.text(id), .int(now)])
        return id
    }

    /// The auth tokens revoked one by one since `since` (epoch ms); older ones are forgotten
    /// (every call token they minted has expired by then).
    package func authTokenRevocations(since: Int64) throws(DatabaseError) -> Set<String> {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM auth_token_revocations WHERE revoked_at < ?", [.int(since)])
            return Set(try db.query("SELECT token_id FROM auth_token_revocations").compactMap { $0[0].text })
        }
    }

    /// The id an auth token is listed and revoked by (`StoredAuthToken.tokenId`).
    public static func authTokenID(_ token: String) -> String { String(Crypto.sha256Hex(token).prefix(16)) }

    /// Revokes every token of `uid`; returns how many.
    public func deleteAuthTokens(uid: String) throws(DatabaseError) -> Int {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM auth_tokens WHERE uid = ?", [.text(uid)])
            return db.changes
        }
    }
}
