import CallsCore

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
    /// `pending`, `delivered` or `dead`.
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

    private static func delivery(_ r: [SQLiteValue]) -> StoredDelivery {
        StoredDelivery(id: r[0].int ?? 0, deliveryId: r[1].text ?? "", webhookId: r[2].text ?? "", url: r[3].text ?? "",
                       sessionId: r[4].text ?? "", trigger: r[5].text ?? "", body: r[6].text ?? "", createdAt: r[7].int ?? 0,
                       attempts: Int(r[8].int ?? 0), nextAttemptAt: r[9].int ?? 0, status: r[10].text ?? "pending",
                       lastStatus: r[11].int.map(Int.init), lastError: r[12].text, deliveredAt: r[13].int)
    }

    /// Deliveries due at `now`, oldest first, at most one per (webhook, session) and only the
    /// oldest pending one of each: a session's events reach a receiver in order.
    func dueDeliveries(now: Int64, limit: Int) throws(SQLiteError) -> [StoredDelivery] {
        try locked { () throws(SQLiteError) in
            try db.query("""
                SELECT \(Self.deliveryColumns) FROM webhook_deliveries d
                WHERE d.status = 'pending' AND d.next_attempt_at <= ?
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.status = 'pending' AND e.webhook_id = d.webhook_id
                                  AND e.session_id = d.session_id AND e.id < d.id)
                ORDER BY d.id LIMIT ?
                """, [.int(now), .int(Int64(limit))]).map(Self.delivery)
        }
    }

    /// Records an attempt: delivered, to be retried at `next`, or dead.
    func recordAttempt(id: Int64, status: String, httpStatus: Int?, error: String?, next: Int64?, at now: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try db.execute("""
                UPDATE webhook_deliveries SET attempts = attempts + 1, status = ?, last_status = ?, last_error = ?,
                    next_attempt_at = COALESCE(?, next_attempt_at), delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END
                WHERE id = ?
                """, [.text(status), httpStatus.map { .int(Int64($0)) } ?? .null, error.map { .text($0) } ?? .null,
                      next.map { .int($0) } ?? .null, .text(status), .int(now), .int(id)])
        }
    }

    /// Makes every pending delivery to a webhook due now (it answered again after failing).
    func expediteDeliveries(webhookId: String, at now: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try db.execute("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE status = 'pending' AND webhook_id = ? AND next_attempt_at > ?",
                           [.int(now), .text(webhookId), .int(now)])
        }
    }

    /// Deliveries, newest first (optionally of one status).
    public func deliveries(status: String?, page: Int, perPage: Int) throws(SQLiteError) -> Page<StoredDelivery> {
        try locked { () throws(SQLiteError) in
            let filter = status == nil ? "" : "WHERE status = ?"
            let params: [SQLiteValue] = status.map { [.text($0)] } ?? []
            let total = Int(try db.query("SELECT COUNT(*) FROM webhook_deliveries \(filter)", params).first?.first?.int ?? 0)
            let rows = try db.query("SELECT \(Self.deliveryColumns) FROM webhook_deliveries \(filter) ORDER BY id DESC LIMIT ? OFFSET ?",
                                    params + [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))])
            return Page(items: rows.map(Self.delivery), total: total, page: page, perPage: perPage)
        }
    }

    /// Puts a delivery back in the queue (a dead letter re-sent by the operator). False when unknown.
    public func retryDelivery(deliveryId: String, at now: Int64) throws(SQLiteError) -> Bool {
        try locked { () throws(SQLiteError) in
            try db.execute("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE delivery_id = ?",
                           [.int(now), .text(deliveryId)])
            return db.changes > 0
        }
    }
}
