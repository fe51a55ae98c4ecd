import CallsCore
import CallsDatabase

/// How a background loop (webhooks, pushes, maintenance) meets a store that fails: every
/// failure is a `DatabaseError` the loop sees (nil here, and the loop skips that step and tries
/// again on its next turn), counted in `callroom_store_failures_total` by the store itself and
/// logged — once when an outage starts (with the operation and the error) and once when the
/// store answers again (with how many operations failed meanwhile), never once per retry.
///
/// Thread rules: owned by one loop; any thread, one at a time (an internal lock).
final class StoreOutage: Sendable {
    private let outage: OutageLog

    /// `owner` names the loop in the log lines ("webhooks", "push", "recordings").
    init(_ owner: String, log: ServerLog) {
        outage = OutageLog(log, started: "\(owner): the database failed; retrying", ended: "\(owner): the database answers again")
    }

    /// Runs one store operation: its value, or nil when the store failed (logged as above).
    func attempt<T>(_ operation: String, _ body: () throws(DatabaseError) -> T) -> T? {
        do {
            let value = try body()
            outage.succeeded()
            return value
        } catch {
            outage.failed(["operation": operation, "error": error.description])
            return nil
        }
    }

    /// Whether the last operation failed (an outage is going on).
    var isOngoing: Bool { outage.isOngoing }
}
