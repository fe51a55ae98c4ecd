import CallsCore
import CallsDatabase

/// An invite grant as stored (`/v3/rooms/{sessionId}/invites`): the signed link carries only
/// its id, session and expiry; the rest — who made it, how often it may be used, whether it was
/// revoked — is here, so a revoked or used-up grant stops at once on every node.
public struct StoredInvite: Sendable, Equatable, Codable {
    public var inviteId: String
    public var sessionId: String
    /// `guest` (no account needed: a display name) or `participant` (an account's own uid).
    public var role: String
    public var createdBy: String
    public var createdAt: Int64
    public var expiresAt: Int64
    /// nil: any number of times until it expires.
    public var maxUses: Int?
    public var uses: Int
    public var revokedAt: Int64?
    public init(inviteId: String, sessionId: String, role: String, createdBy: String, createdAt: Int64, expiresAt: Int64, maxUses: Int? = nil, uses: Int, revokedAt: Int64? = nil) {
        self.inviteId = inviteId
        self.sessionId = sessionId
        self.role = role
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.maxUses = maxUses
        self.uses = uses
        self.revokedAt = revokedAt
    }
}

/// What `createInvite` did: made it, or refused it at a limit of live invites.
package enum InviteCreation: Equatable, Sendable {
    case created
    /// The session holds `perSession` live invites already.
    case sessionFull
    /// Its maker holds `perMaker` live invites of the session already.
    case makerFull
}

extension CallStore {
    /// Stores `i` unless the session already holds `perSession` live invites (not expired,
    /// revoked or used up), or its maker `perMaker` of them (nil: no limit of their own). First
    /// the session's invites that can no longer matter are forgotten: those that expired, or were
    /// revoked, before `forgetBefore` (epoch ms: every call token they let anyone mint has
    /// expired by then).
    package func createInvite(_ i: StoredInvite, perSession: Int, perMaker: Int?, forgetBefore: Int64) throws(DatabaseError) -> InviteCreation {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM invites WHERE session_id = ? AND \(Self.overBefore)", [.text(i.sessionId), .int(forgetBefore), .int(forgetBefore)])
            let live = "revoked_at IS NULL AND expires_at > ? AND (max_uses IS NULL OR uses < max_uses)"
            let inSession = try db.query("SELECT COUNT(*) FROM invites WHERE session_id = ? AND \(live)", [.text(i.sessionId), .int(i.createdAt)])
            guard (inSession.first?[0].int ?? 0) < Int64(perSession) else { return .sessionFull }
            if let perMaker {
                let byMaker = try db.query("SELECT COUNT(*) FROM invites WHERE session_id = ? AND created_by = ? AND \(live)",
                                           [.text(i.sessionId), .text(i.createdBy), .int(i.createdAt)])
                guard (byMaker.first?[0].int ?? 0) < Int64(perMaker) else { return .makerFull }
            }
            try db.execute("""
                INSERT INTO invites(invite_id, session_id, role, created_by, created_at, expires_at, max_uses, uses)
                VALUES (?, ?, ?, ?, ?, ?, ?, 0)
                """, [.text(i.inviteId), .text(i.sessionId), .text(i.role), .text(i.createdBy), .int(i.createdAt), .int(i.expiresAt),
                      i.maxUses.map { .int(Int64($0)) } ?? .null])
            return .created
        }
    }

    private static func invite(_ r: [DatabaseValue]) -> StoredInvite {
        StoredInvite(inviteId: r[0].text ?? "", sessionId: r[1].text ?? "", role: r[2].text ?? "guest", createdBy: r[3].text ?? "",
                     createdAt: r[4].int ?? 0, expiresAt: r[5].int ?? 0, maxUses: r[6].int.map(Int.init), uses: Int(r[7].int ?? 0), revokedAt: r[8].int)
    }

    /// An invite that can no longer matter: it expired, or was revoked, before the time given
    /// twice (every call token it let anyone mint has expired by then).
    private static let overBefore = "(expires_at < ? OR (revoked_at IS NOT NULL AND revoked_at < ?))"

    private static let inviteColumns = "invite_id, session_id, role, created_by, created_at, expires_at, max_uses, uses, revoked_at"

    public func invites(sessionId: String) throws(DatabaseError) -> [StoredInvite] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT \(Self.inviteColumns) FROM invites WHERE session_id = ? ORDER BY created_at", [.text(sessionId)]).map(Self.invite)
        }
    }

    public func invite(id: String) throws(DatabaseError) -> StoredInvite? {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT \(Self.inviteColumns) FROM invites WHERE invite_id = ?", [.text(id)]).first.map(Self.invite)
        }
    }

    /// Takes one use of an invite at `now` (epoch ms), in one statement (two nodes cannot both
    /// take the last one). Nil: no such invite, or it is revoked, expired or used up.
    package func useInvite(id: String, sessionId: String, at now: Int64) throws(DatabaseError) -> StoredInvite? {
        try locked { () throws(DatabaseError) -> StoredInvite? in
            try db.execute("""
                UPDATE invites SET uses = uses + 1 WHERE invite_id = ? AND session_id = ? AND revoked_at IS NULL AND expires_at > ?
                    AND (max_uses IS NULL OR uses < max_uses)
                """, [.text(id), .text(sessionId), .int(now)])
            guard db.changes > 0 else { return nil }
            return try db.query("SELECT \(Self.inviteColumns) FROM invites WHERE invite_id = ?", [.text(id)]).first.map(Self.invite)
        }
    }

    /// Revokes an invite of `sessionId`; false when there is none.
    package func revokeInvite(id: String, sessionId: String, at now: Int64) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("UPDATE invites SET revoked_at = COALESCE(revoked_at, ?) WHERE invite_id = ? AND session_id = ?",
                           [.int(now), .text(id), .text(sessionId)])
            return db.changes > 0
        }
    }

    /// Invites revoked while their call tokens may still be about (for the rooms to refuse them);
    /// every invite that can no longer matter — expired or revoked before `since` — is forgotten.
    package func revokedInvites(since: Int64) throws(DatabaseError) -> Set<String> {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM invites WHERE \(Self.overBefore)", [.int(since), .int(since)])
            return Set(try db.query("SELECT invite_id FROM invites WHERE revoked_at IS NOT NULL AND revoked_at >= ?", [.int(since)]).compactMap { $0[0].text })
        }
    }

    /// Whether `uid` is in the live call of `sessionId` now (a participant may invite others).
    package func isInLiveCall(uid: String, sessionId: String) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try !db.query("""
                SELECT 1 FROM call_participants p JOIN calls c ON c.id = p.call_id
                WHERE c.session_id = ? AND c.ended_at IS NULL AND p.uid = ? AND p.left_at IS NULL LIMIT 1
                """, [.text(sessionId), .text(uid)]).isEmpty
        }
    }
}
