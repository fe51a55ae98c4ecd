/// The writes a server is trying again (`WriteRetry`), so that stopping the server stops them
/// all: what they had not written is the next start's crash recovery's. Ended retries are
/// forgotten as new ones start (the list holds only those still trying, and those ended since).
///
/// Thread rules: any thread.
public final class WriteRetries: Sendable {
    private let state = Locked<(stopped: Bool, retries: [WriteRetry])>((false, []))

    public init() {}

    /// Starts `retry` — or, once `cancelAll` has run, does not: the server is stopping.
    public func start(_ retry: WriteRetry) {
        let go = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.retries.removeAll { $0.isFinished }
            s.retries.append(retry)
            return true
        }
        if go { retry.start() }
    }

    /// Stops every retry, and any started from now on.
    public func cancelAll() {
        let all = state.withLock { s -> [WriteRetry] in
            s.stopped = true
            defer { s.retries = [] }
            return s.retries
        }
        for r in all { r.cancel() }
    }

    /// Retries still trying.
    public var pending: Int { state.withLock { $0.retries.filter { !$0.isFinished }.count } }
}
