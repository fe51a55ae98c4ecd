/// Edge-triggered logging of something the server depends on failing and coming back (the
/// database, Redis): one warning when an outage starts (with the error), one line when it ends
/// (with how many attempts failed and how long it lasted), nothing per retry — a retry loop
/// cannot flood the log.
///
/// Thread rules: any thread (an internal lock).
public final class OutageLog: Sendable {
    private let log: ServerLog
    private let startMessage: String
    private let endMessage: String
    private let fields: [String: String]
    private let state = Locked<(since: Int64?, failures: Int)>((nil, 0))

    /// `started` is logged (warn) at an outage's first failure, `ended` (info) at the first
    /// success after it; `fields` go with both (a node id: never secrets).
    public init(_ log: ServerLog, started: String, ended: String, fields: [String: String] = [:]) {
        self.log = log
        startMessage = started
        endMessage = ended
        self.fields = fields
    }

    /// An attempt failed: the first of an outage is logged with `details` (the operation, the error).
    public func failed(_ details: [String: String] = [:]) {
        let first = state.withLock { s -> Bool in
            s.failures += 1
            guard s.since == nil else { return false }
            s.since = epochMilliseconds()
            return true
        }
        if first { log.warn(startMessage, fields.merging(details) { $1 }) }
    }

    /// An attempt succeeded: the end of an outage, if one was going on, is logged.
    public func succeeded() {
        let ended = state.withLock { s -> (since: Int64, failures: Int)? in
            guard let since = s.since else { return nil }
            defer { s = (nil, 0) }
            return (since, s.failures)
        }
        guard let ended else { return }
        log.info(endMessage, fields.merging(["failed_operations": "\(ended.failures)",
                                              "outage_ms": "\(max(0, epochMilliseconds() - ended.since))"]) { $1 })
    }

    /// Whether an outage is going on (the last attempt failed).
    public var isOngoing: Bool { state.withLock { $0.since != nil } }
}
