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

    var table: String {
        switch self {
        case .chat: "chat_messages"
        case .webhookDeliveries: "webhook_deliveries"
        case .pushDeliveries: "push_deliveries"
        }
    }

    /// Which of the table's rows are past a cut-off, given as its one parameter (epoch ms).
    var pastCutOff: String {
        switch self {
        case .chat:
            "EXISTS (SELECT 1 FROM calls WHERE calls.id = chat_messages.call_id AND calls.ended_at IS NOT NULL AND calls.ended_at < ?)"
        case .webhookDeliveries, .pushDeliveries:
            "status != 'pending' AND created_at < ?"
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
    /// messages and 200,000 deliveries: a request waited 1.5 s behind them, 71 ms at worst
    /// behind pages of 2,000 ids; `scripts/bench-retention.sh`). Any thread.
    package func forget(_ history: ForgettableHistory, before: Int64, after: Int64 = 0, window: Int = 2_000) throws(DatabaseError) -> ForgottenPage {
        try locked { () throws(DatabaseError) in
            // Two queries: with MIN and MAX together SQLite walks every id after `after`.
            guard let first = try db.query("SELECT MIN(id) FROM \(history.table) WHERE id > ?", [.int(after)]).first?.first?.int,
                  let last = try db.query("SELECT MAX(id) FROM \(history.table)").first?.first?.int else {
                return ForgottenPage(rows: 0, next: nil)
            }
            let end = first - 1 + Int64(max(1, window))
            try db.execute("DELETE FROM \(history.table) WHERE id >= ? AND id <= ? AND \(history.pastCutOff)",
                           [.int(first), .int(end), .int(before)])
            return ForgottenPage(rows: db.changes, next: end < last ? end : nil)
        }
    }
}
