import Foundation

/// A write that must not be lost to a passing failure — a recording's or a transcript's end row
/// while the disk is full or the database restarts: after its first attempt failed (which the
/// caller logged), tried again every `every` seconds until it succeeds (logged, with how many
/// attempts it took) or `window` seconds have passed (logged as an error: the next start's crash
/// recovery finishes it from what is on disk). Nothing is logged per retry.
///
/// Thread rules: `start` and `cancel` from any thread; the attempts run one at a time on a
/// utility queue, on `scheduler` (virtual in tests). A server starts its retries through its
/// `WriteRetries`, which cancels them when it stops.
public final class WriteRetry: Sendable {
    private let what: String
    private let fields: [String: String]
    private let log: ServerLog
    private let scheduler: any Scheduler
    private let every: Double
    private let window: Double
    private let attempt: @Sendable () -> String?
    private let queue = DispatchQueue(label: "callroom.write-retry", qos: .utility)
    private let state = Locked<(attempts: Int, pending: ScheduledWork?, finished: Bool)>((1, nil, false))

    /// `attempt` writes and returns nil, or returns why it could not. `what` and `fields` name
    /// the write in the log (never secrets).
    public init(_ what: String, fields: [String: String], log: ServerLog, scheduler: any Scheduler = DispatchScheduler.shared,
                every: Double = 5, window: Double = 3600, attempt: @escaping @Sendable () -> String?) {
        self.what = what
        self.fields = fields
        self.log = log
        self.scheduler = scheduler
        self.every = every
        self.window = window
        self.attempt = attempt
    }

    /// Schedules the next attempts (the first attempt was the caller's).
    public func start() {
        let deadline = scheduler.nowMilliseconds() + Int64(window * 1000)
        schedule(until: deadline)
    }

    /// Stops trying (the server stopping: what was not written is crash recovery's at the next
    /// start). An attempt already running is the last.
    public func cancel() {
        state.withLock { s in
            s.finished = true
            s.pending?.cancel()
            s.pending = nil
        }
    }

    /// Attempts made so far, the caller's first included (tests).
    public var attempts: Int { state.withLock { $0.attempts } }

    /// Stored, given up, or cancelled.
    public var isFinished: Bool { state.withLock { $0.finished } }

    private func schedule(until deadline: Int64) {
        let work = scheduler.schedule(after: every, on: queue) { [self] in
            guard let n = state.withLock({ s -> Int? in
                guard !s.finished else { return nil }
                s.attempts += 1
                return s.attempts
            }) else { return }
            guard let why = attempt() else {
                state.withLock { $0.finished = true }
                log.info("\(what) stored after \(n) attempts", fields)
                return
            }
            guard scheduler.nowMilliseconds() + Int64(every * 1000) <= deadline else {
                state.withLock { $0.finished = true }
                log.error("\(what) still not stored after \(n) attempts: left for crash recovery at the next start",
                          fields.merging(["error": why]) { $1 })
                return
            }
            schedule(until: deadline)
        }
        // (Cancelled while the attempt ran: nothing more.)
        state.withLock { s in
            if s.finished { work.cancel() } else { s.pending = work }
        }
    }
}
