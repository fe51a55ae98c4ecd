import CallsDatabase

/// The rows history retention forgets once past their time, a page of ids at a time
/// (`CallStore.forget`): each a table with an integer `id` in the order rows were made.
package enum ForgettableHistory: Sendable, CaseIterable {
    /// The chat of calls that ended before the cut-off; calls still going keep theirs.
    case chat
    /// Webhook deliveries made before it that are over (delivered, dead, dropped); pending
    /// ones stay whatever their age.
    case webhookDeliveries
    /// Pushes made before it that are over (sent, failed, expired, superseded).
    case pushDeliveries
    /// The logs of calls that ended before it, each with its participants, ring members and
    /// chat (`dependents`). A call that still has recordings or transcripts stays (their own
    /// retention removes them first, with their files); a call still going stays.
    case callLogs

    /// What the rows are, for the log.
    package var noun: String {
        switch self {
        case .chat: "chat"
        case .webhookDeliveries: "webhook deliveries"
        case .pushDeliveries: "pushes"
        case .callLogs: "call logs"
        }
    }

    var table: String {
        switch self {
        case .chat: "chat_messages"
        case .webhookDeliveries: "webhook_deliveries"
        case .pushDeliveries: "push_deliveries"
        case .callLogs: "calls"
        }
    }

    /// Tables whose rows name one of this table's by `call_id`, forgotten with it.
    var dependents: [String] {
        self == .callLogs ? ["chat_messages", "call_participants", "call_members"] : []
    }

    /// Which of the table's rows are past a cut-off, given as its one parameter (epoch ms).
    var pastCutOff: String {
        switch self {
        case .chat:
            "EXISTS (SELECT 1 FROM calls WHERE calls.id = chat_messages.call_id AND calls.ended_at IS NOT NULL AND calls.ended_at < ?)"
        case .webhookDeliveries, .pushDeliveries:
            "status != 'pending' AND created_at < ?"
        case .callLogs:
            """
            ended_at IS NOT NULL AND ended_at < ?
            AND NOT EXISTS (SELECT 1 FROM recordings WHERE recordings.call_id = calls.id)
            AND NOT EXISTS (SELECT 1 FROM transcripts WHERE transcripts.call_id = calls.id)
            """
        }
    }
}

/// What one page of `CallStore.forget` did.
package struct ForgottenPage: Equatable, Sendable {
    /// Rows forgotten.
    package var rows: Int
    /// The id to go on after; nil when no row lies past this page.
    package var next: Int64?
}

extension CallStore {
    /// Forgets the rows of `history` past `before` (epoch ms) among the `window` ids from the
    /// first one after `after`. A page is a bounded piece of work under the store's lock, let
    /// go between pages: one statement over a whole table held it for seconds (500,000 old chat
    /// messages, 200,000 deliveries, 5,000 calls: a request waited 1.3–1.6 s behind them; at
    /// most 84 ms behind pages of 1,000 ids, `scripts/bench-retention.sh`). Any thread.
    package func forget(_ history: ForgettableHistory, before: Int64, after: Int64 = 0, window: Int = 1_000) throws(DatabaseError) -> ForgottenPage {
        try locked { () throws(DatabaseError) in
            // Two queries: with MIN and MAX together SQLite walks every id after `after`.
            guard let first = try db.query("SELECT MIN(id) FROM \(history.table) WHERE id > ?", [.int(after)]).first?.first?.int,
                  let last = try db.query("SELECT MAX(id) FROM \(history.table)").first?.first?.int else {
                return ForgottenPage(rows: 0, next: nil)
            }
            let end = first - 1 + Int64(max(1, window))
            let next = end < last ? end : nil
            let page: [DatabaseValue] = [.int(first), .int(end), .int(before)]
            guard !history.dependents.isEmpty else {
                try db.execute("DELETE FROM \(history.table) WHERE id >= ? AND id <= ? AND \(history.pastCutOff)", page)
                return ForgottenPage(rows: db.changes, next: next)
            }
            return try db.transaction { () throws(DatabaseError) in
                let ids = try db.query("SELECT id FROM \(history.table) WHERE id >= ? AND id <= ? AND \(history.pastCutOff)", page)
                    .compactMap { $0.first?.int }
                for start in stride(from: 0, to: ids.count, by: 500) {
                    let chunk = ids[start..<min(start + 500, ids.count)].map { DatabaseValue.int($0) }
                    let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                    for table in history.dependents { try db.execute("DELETE FROM \(table) WHERE call_id IN (\(marks))", chunk) }
                    try db.execute("DELETE FROM \(history.table) WHERE id IN (\(marks))", chunk)
                }
                return ForgottenPage(rows: ids.count, next: next)
            }
        }
    }
}
