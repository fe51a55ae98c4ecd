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
    private let log: ServerLog
    private let owner: String
    private let state = Locked<(since: Int64?, failures: Int)>((nil, 0))

    /// `owner` names the loop in the log lines ("webhooks", "push", "recordings").
    init(_ owner: String, log: ServerLog) {
        self.owner = owner
        self.log = log
    }

    /// Runs one store operation: its value, or nil when the store failed (logged as above).
    func attempt<T>(_ operation: String, _ body: () throws(DatabaseError) -> T) -> T? {
        do {
            let value = try body()
            let ended = state.withLock { s -> (since: Int64, failures: Int)? in
                guard let since = s.since else { return nil }
                defer { s = (nil, 0) }
                return (since, s.failures)
            }
            if let ended {
                log.info("\(owner): the database answers again", ["failed_operations": "\(ended.failures)",
                                                                   "outage_ms": "\(max(0, epochMilliseconds() - ended.since))"])
            }
            return value
        } catch {
            let first = state.withLock { s -> Bool in
                s.failures += 1
                guard s.since == nil else { return false }
                s.since = epochMilliseconds()
                return true
            }
            if first { log.warn("\(owner): the database failed; retrying", ["operation": operation, "error": error.description]) }
            return nil
        }
    }

    /// Whether the last operation failed (an outage is going on).
    var isOngoing: Bool { state.withLock { $0.since != nil } }
}
