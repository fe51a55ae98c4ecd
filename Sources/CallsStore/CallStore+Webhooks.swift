import CallsCore
import Foundation
import CallsDatabase

/// Webhooks the operator may add over REST (each event becomes a delivery row to every one);
/// the config file's are not counted.
package let maxStoredWebhooks = 100

/// A webhook delivery as the deliverer and the REST listing see it.
public struct StoredDelivery: Sendable, Equatable, Codable {
    public var id: Int64
    public var deliveryId: String
    public var webhookId: String
    public var url: String
    public var sessionId: String
    public var trigger: String
    public var body: String
    public var createdAt: Int64
    public var attempts: Int
    public var nextAttemptAt: Int64
    /// `pending`, `delivered`, `dead` or `dropped` (the webhook's queue was full).
    public var status: String
    public var lastStatus: Int?
    public var lastError: String?
    public var deliveredAt: Int64?
}

extension CallStore {
    private static let deliveryColumns = """
        id, delivery_id, webhook_id, url, session_id, trigger, body, created_at, attempts, next_attempt_at, status,
        last_status, last_error, delivered_at
        """

    private static func delivery(_ r: [DatabaseValue]) -> StoredDelivery {
        StoredDelivery(id: r[0].int ?? 0, deliveryId: r[1].text ?? "", webhookId: r[2].text ?? "", url: r[3].text ?? "",
                       sessionId: r[4].text ?? "", trigger: r[5].text ?? "", body: r[6].text ?? "", createdAt: r[7].int ?? 0,
                       attempts: Int(r[8].int ?? 0), nextAttemptAt: r[9].int ?? 0, status: r[10].text ?? "pending",
                       lastStatus: r[11].int.map(Int.init), lastError: r[12].text, deliveredAt: r[13].int)
    }

    /// Deliveries due at `now`, oldest first, at most one per (webhook, session) and only the
    /// oldest pending one of each: a session's events reach a receiver in order.
    /// `excluding`: webhooks paused now (their rows are not even read).
    package func dueDeliveries(now: Int64, limit: Int, excluding: [String] = []) throws(DatabaseError) -> [StoredDelivery] {
        let skip = excluding.isEmpty ? "" : "AND d.webhook_id NOT IN (\(excluding.map { _ in "?" }.joined(separator: ", ")))"
        return try locked { () throws(DatabaseError) in
            try db.query("""
                SELECT \(Self.deliveryColumns) FROM webhook_deliveries d
                WHERE d.status = 'pending' AND d.next_attempt_at <= ? \(skip)
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.status = 'pending' AND e.webhook_id = d.webhook_id
                                  AND e.session_id = d.session_id AND e.id < d.id)
                ORDER BY d.id LIMIT ?
                """, [.int(now)] + excluding.map { .text($0) } + [.int(Int64(limit))]).map(Self.delivery)
        }
    }

    /// Takes delivery `id` for one attempt: true when it is still pending and due at `now`, and
    /// then no node sees it due again before `until` (its next attempt, or the lease running out
    /// when this node dies mid-attempt). Nodes sharing one database each call this before an
    /// attempt; only one wins (the row's update is atomic), so each event goes out once.
    package func claimDelivery(id: Int64, now: Int64, until: Int64) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND status = 'pending' AND next_attempt_at <= ?",
                           [.int(until), .int(id), .int(now)])
            return db.changes == 1
        }
    }

    /// Records an attempt: delivered, to be retried at `next`, or dead.
    package func recordAttempt(id: Int64, status: String, httpStatus: Int?, error: String?, next: Int64?, at now: Int64) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("""
                UPDATE webhook_deliveries SET attempts = attempts + 1, status = ?, last_status = ?, last_error = ?,
                    next_attempt_at = COALESCE(?, next_attempt_at), delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END
                WHERE id = ?
                """, [.text(status), httpStatus.map { .int(Int64($0)) } ?? .null, error.map { .text($0) } ?? .null,
                      next.map { .int($0) } ?? .null, .text(status), .int(now), .int(id)])
        }
    }

    /// Makes every pending delivery to a webhook due now (it answered again after failing).
    package func expediteDeliveries(webhookId: String, at now: Int64) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE status = 'pending' AND webhook_id = ? AND next_attempt_at > ?",
                           [.int(now), .text(webhookId), .int(now)])
        }
    }

    /// Deliveries, newest first (optionally of one status).
    public func deliveries(status: String?, page: Int, perPage: Int) throws(DatabaseError) -> Page<StoredDelivery> {
        try locked { () throws(DatabaseError) in
            let filter = status == nil ? "" : "WHERE status = ?"
            let params: [DatabaseValue] = status.map { [.text($0)] } ?? []
            let total = Int(try db.query("SELECT COUNT(*) FROM webhook_deliveries \(filter)", params).first?.first?.int ?? 0)
            let rows = try db.query("SELECT \(Self.deliveryColumns) FROM webhook_deliveries \(filter) ORDER BY id DESC LIMIT ? OFFSET ?",
                                    params + [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))])
            return Page(items: rows.map(Self.delivery), total: total, page: page, perPage: perPage)
        }
    }

    /// Puts a delivery back in the queue (a dead letter re-sent by the operator). False when unknown.
    public func retryDelivery(deliveryId: String, at now: Int64) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE delivery_id = ?",
                           [.int(now), .text(deliveryId)])
            return db.changes > 0
        }
    }

    // MARK: Webhooks added over REST

    /// The webhooks added over REST, oldest first.
    package func addedWebhooks() throws(DatabaseError) -> [WebhookConfig] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT id, url, secret, triggers FROM webhooks ORDER BY created_at, id").map { r in
                let triggers = r[3].text.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }.map(Set.init)
                return WebhookConfig(id: r[0].text ?? "", url: r[1].text ?? "", secret: r[2].text ?? "", triggers: triggers)
            }
        }
    }

    /// Adds a webhook (`replace` false) or replaces one whole: `.conflict` when one with that id
    /// exists (adding) or none does (replacing); `.full` when adding past `maxStoredWebhooks`
    /// (checked in the insert itself).
    package func saveWebhook(_ w: WebhookConfig, replace: Bool, at now: Int64) throws(DatabaseError) -> WebhookSave {
        try locked { () throws(DatabaseError) in
            let triggers: DatabaseValue = w.triggers.map { t in .text(String(decoding: (try? JSONEncoder().encode(t.sorted())) ?? Data("[]".utf8), as: UTF8.self)) } ?? .null
            if replace {
                try db.execute("UPDATE webhooks SET url = ?, secret = ?, triggers = ? WHERE id = ?", [.text(w.url), .text(w.secret), triggers, .text(w.id)])
                return db.changes > 0 ? .saved : .conflict
            }
            try db.execute("""
                INSERT INTO webhooks(id, url, secret, triggers, created_at) SELECT ?, ?, ?, ?, ?
                WHERE (SELECT COUNT(*) FROM webhooks) < ? ON CONFLICT DO NOTHING
                """, [.text(w.id), .text(w.url), .text(w.secret), triggers, .int(now), .int(Int64(maxStoredWebhooks))])
            if db.changes > 0 { return .saved }
            return try db.query("SELECT 1 FROM webhooks WHERE id = ?", [.text(w.id)]).isEmpty ? .full : .conflict
        }
    }

    /// What came of `saveWebhook`.
    package enum WebhookSave: Sendable { case saved, conflict, full }

    package func deleteWebhook(id: String) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM webhooks WHERE id = ?", [.text(id)])
            return db.changes > 0
        }
    }

    // MARK: The queue bound

    /// Undelivered deliveries per webhook.
    package func pendingDeliveryCounts() throws(DatabaseError) -> [String: Int] {
        try locked { () throws(DatabaseError) in
            var out: [String: Int] = [:]
            for r in try db.query("SELECT webhook_id, COUNT(*) FROM webhook_deliveries WHERE status = 'pending' GROUP BY webhook_id") {
                out[r[0].text ?? ""] = Int(r[1].int ?? 0)
            }
            return out
        }
    }

    /// Marks the oldest `count` pending deliveries of a webhook `dropped`. Returns how many.
    package func dropOldestDeliveries(webhookId: String, count: Int) throws(DatabaseError) -> Int {
        try locked { () throws(DatabaseError) in
            try db.execute("""
                UPDATE webhook_deliveries SET status = 'dropped', last_error = 'queue full: dropped oldest'
                WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' ORDER BY id LIMIT ?)
                """, [.text(webhookId), .int(Int64(count))])
            return db.changes
        }
    }
}
