import CallsCore
import Foundation
import CallsDatabase

/// A device's push token as registered (`/v3/users/{uid}/push_tokens`).
public struct StoredPushToken: Sendable, Equatable, Codable {
    public var uid: String
    public var token: String
    public var platform: PushPlatform
    public var appBundleId: String?
    public var createdAt: Int64
}

/// One push to one token, as the sender and the REST listing see it.
public struct StoredPush: Sendable, Equatable, Codable {
    /// `pending`, `sent`, `failed` (the service refused it), `expired` (not sent within its
    /// lifetime) or `superseded` (an `ended` push came before its `initiated` one was sent).
    public enum Status: String, Sendable, Codable, CaseIterable { case pending, sent, failed, expired, superseded }

    public var id: Int64
    /// The `apns-id` (a UUID) sent with it.
    public var pushId: String
    public var sessionId: String
    public var uid: String
    public var platform: PushPlatform
    public var token: String
    public var topic: String?
    public var action: String
    public var body: String
    public var createdAt: Int64
    public var expiresAt: Int64
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var status: Status
    public var lastStatus: Int?
    public var lastReason: String?
    /// The service's id for it (APNs `apns-id`, FCM message `name`).
    public var providerId: String?
    public var sentAt: Int64?
}

/// How many tokens one user keeps: registering another drops the oldest (phones re-register
/// often and a dead token is only purged when a push to it fails).
package let maxPushTokensPerUser = 20

extension CallStore {
    /// Registers (or moves to `uid`) a device token. Returns the stored row.
    public func registerPushToken(uid: String, token: String, platform: PushPlatform, appBundleId: String?,
                                  at now: Int64) throws(DatabaseError) -> StoredPushToken {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                try db.execute("""
                    INSERT INTO push_tokens(platform, token, uid, app_bundle_id, created_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(platform, token) DO UPDATE SET uid = excluded.uid, app_bundle_id = excluded.app_bundle_id,
                        created_at = excluded.created_at
                    """, [.text(platform.rawValue), .text(token), .text(uid), appBundleId.map { .text($0) } ?? .null, .int(now)])
                try db.execute("""
                    DELETE FROM push_tokens WHERE uid = ? AND rowid NOT IN
                        (SELECT rowid FROM push_tokens WHERE uid = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)
                    """, [.text(uid), .text(uid), .int(Int64(maxPushTokensPerUser))])
                return StoredPushToken(uid: uid, token: token, platform: platform, appBundleId: appBundleId, createdAt: now)
            }
        }
    }

    public func pushTokens(uid: String) throws(DatabaseError) -> [StoredPushToken] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT uid, token, platform, app_bundle_id, created_at FROM push_tokens WHERE uid = ? ORDER BY created_at, rowid",
                         [.text(uid)]).compactMap { r in
                guard let p = r[2].text.flatMap(PushPlatform.init(rawValue:)) else { return nil }
                return StoredPushToken(uid: r[0].text ?? "", token: r[1].text ?? "", platform: p, appBundleId: r[3].text, createdAt: r[4].int ?? 0)
            }
        }
    }

    /// Removes one of the user's tokens (nil: all of them; APNs tokens match in any case). Returns how many went.
    public func deletePushTokens(uid: String, token: String?) throws(DatabaseError) -> Int {
        try locked { () throws(DatabaseError) in
            if let token {
                try db.execute("DELETE FROM push_tokens WHERE uid = ? AND (token = ? OR (platform != 'fcm' AND token = lower(?)))",
                               [.text(uid), .text(token), .text(token)])
            } else {
                try db.execute("DELETE FROM push_tokens WHERE uid = ?", [.text(uid)])
            }
            return db.changes
        }
    }

    /// A token the push service said is dead (`Unregistered`, `BadDeviceToken`).
    package func purgePushToken(platform: PushPlatform, token: String) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM push_tokens WHERE platform = ? AND token = ?", [.text(platform.rawValue), .text(token)])
            return db.changes > 0
        }
    }

    /// One row per token of the event's user on a platform that rings calls (inside the batch).
    package func insertPushes(_ e: PushEvent) throws(DatabaseError) {
        let platforms = e.platforms.filter(\.ringsCalls)
        guard !platforms.isEmpty else { return }
        let marks = platforms.map { _ in "?" }.joined(separator: ", ")
        let tokens = try db.query("SELECT platform, token, app_bundle_id FROM push_tokens WHERE uid = ? AND platform IN (\(marks)) ORDER BY rowid",
                                  [.text(e.uid)] + platforms.map { .text($0.rawValue) })
        for t in tokens {
            guard let platform = t[0].text.flatMap(PushPlatform.init(rawValue:)), let token = t[1].text else { continue }
            let topic: String? = platform == .apnsVoip ? t[2].text.map { $0 + ".voip" } : nil
            if platform == .apnsVoip && topic == nil { continue }  // registration requires a bundle id; nothing to address it to
            let body = platform == .fcm ? e.fcmBody(token: token) : e.apnsBody
            try db.execute("""
                INSERT INTO push_deliveries(push_id, session_id, uid, platform, token, topic, action, body, created_at, expires_at, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.text(UUID().uuidString.lowercased()), .text(e.sessionId), .text(e.uid), .text(platform.rawValue), .text(token),
                      topic.map { .text($0) } ?? .null, .text(e.action.rawValue), .text(body), .int(e.at), .int(e.at + PushEvent.lifetimeMs),
                      .int(e.at)])
        }
    }

    private static let pushColumns = """
        id, push_id, session_id, uid, platform, token, topic, action, body, created_at, expires_at, attempts, next_attempt_at,
        status, last_status, last_reason, provider_id, sent_at
        """

    private static func push(_ r: [DatabaseValue]) -> StoredPush {
        StoredPush(id: r[0].int ?? 0, pushId: r[1].text ?? "", sessionId: r[2].text ?? "", uid: r[3].text ?? "",
                   platform: r[4].text.flatMap(PushPlatform.init(rawValue:)) ?? .fcm, token: r[5].text ?? "", topic: r[6].text,
                   action: r[7].text ?? "", body: r[8].text ?? "", createdAt: r[9].int ?? 0, expiresAt: r[10].int ?? 0,
                   attempts: Int(r[11].int ?? 0), nextAttemptAt: r[12].int ?? 0,
                   status: r[13].text.flatMap(StoredPush.Status.init(rawValue:)) ?? .pending, lastStatus: r[14].int.map(Int.init),
                   lastReason: r[15].text, providerId: r[16].text, sentAt: r[17].int)
    }

    /// Pending pushes due at `now`, oldest first.
    package func duePushes(now: Int64, limit: Int) throws(DatabaseError) -> [StoredPush] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT \(Self.pushColumns) FROM push_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY id LIMIT ?",
                         [.int(now), .int(Int64(limit))]).map(Self.push)
        }
    }

    /// Takes push `id` for one attempt (as `claimDelivery`: one node wins; the lease runs out at `until`).
    package func claimPush(id: Int64, now: Int64, until: Int64) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("UPDATE push_deliveries SET next_attempt_at = ? WHERE id = ? AND status = 'pending' AND next_attempt_at <= ?",
                           [.int(until), .int(id), .int(now)])
            return db.changes == 1
        }
    }

    /// Records an attempt's outcome (`next`: when a pending push is tried again).
    package func recordPush(id: Int64, status: StoredPush.Status, httpStatus: Int?, reason: String?, providerId: String?, next: Int64?,
                    at now: Int64) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("""
                UPDATE push_deliveries SET attempts = attempts + 1, status = ?, last_status = ?, last_reason = ?,
                    provider_id = COALESCE(?, provider_id), next_attempt_at = COALESCE(?, next_attempt_at),
                    sent_at = CASE WHEN ? = 'sent' THEN ? ELSE sent_at END
                WHERE id = ?
                """, [.text(status.rawValue), httpStatus.map { .int(Int64($0)) } ?? .null, reason.map { .text($0) } ?? .null,
                      providerId.map { .text($0) } ?? .null, next.map { .int($0) } ?? .null, .text(status.rawValue), .int(now), .int(id)])
        }
    }

    /// An `ended` push is due while the same token's `initiated` push for that call is still
    /// unsent: neither is worth sending. Marks both superseded; false when there was none.
    package func supersedeUnsentRing(_ end: StoredPush) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                try db.execute("""
                    UPDATE push_deliveries SET status = 'superseded' WHERE session_id = ? AND token = ? AND status = 'pending'
                        AND action = 'initiated' AND id < ?
                    """, [.text(end.sessionId), .text(end.token), .int(end.id)])
                guard db.changes > 0 else { return false }
                try db.execute("UPDATE push_deliveries SET status = 'superseded' WHERE id = ?", [.int(end.id)])
                return true
            }
        }
    }

    /// Pushes, newest first (optionally of one status or one call).
    public func pushDeliveries(status: StoredPush.Status?, sessionId: String?, page: Int, perPage: Int) throws(DatabaseError) -> Page<StoredPush> {
        try locked { () throws(DatabaseError) in
            var clauses: [String] = []
            var params: [DatabaseValue] = []
            if let status { clauses.append("status = ?"); params.append(.text(status.rawValue)) }
            if let sessionId { clauses.append("session_id = ?"); params.append(.text(sessionId)) }
            let filter = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            let total = Int(try db.query("SELECT COUNT(*) FROM push_deliveries \(filter)", params).first?.first?.int ?? 0)
            let rows = try db.query("SELECT \(Self.pushColumns) FROM push_deliveries \(filter) ORDER BY id DESC LIMIT ? OFFSET ?",
                                    params + [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))])
            return Page(items: rows.map(Self.push), total: total, page: page, perPage: perPage)
        }
    }
}
