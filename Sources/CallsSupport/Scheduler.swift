import Foundation

/// Time for logic that must run the same on a real clock and in tests: the current wall-clock
/// time (epoch milliseconds, as the wire uses) and work scheduled on a queue after a delay.
/// `DispatchScheduler` is the real one; `VirtualScheduler` lets tests move time by hand, so
/// timeouts and grace periods are tested without sleeping.
public protocol Scheduler: AnyObject, Sendable {
    /// Milliseconds since the Unix epoch.
    func nowMilliseconds() -> Int64
    /// Runs `work` on `queue` after `seconds`, unless the returned work is cancelled first.
    func schedule(after seconds: Double, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> ScheduledWork
}

/// A scheduled piece of work; `cancel()` stops it if it has not run. Any thread.
public final class ScheduledWork: Sendable {
    private let cancelled = Locked(false)
    public init() {}
    public func cancel() { cancelled.withLock { $0 = true } }
    public var isCancelled: Bool { cancelled.withLock { $0 } }
}

/// The real clock: `Date()` and `DispatchQueue.asyncAfter`.
public final class DispatchScheduler: Scheduler {
    public static let shared = DispatchScheduler()
    public init() {}
    public func nowMilliseconds() -> Int64 { epochMilliseconds() }
    public func schedule(after seconds: Double, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let w = ScheduledWork()
        queue.asyncAfter(deadline: .now() + max(0, seconds)) { if !w.isCancelled { work() } }
        return w
    }
}

/// A clock that moves only when told (`advance(by:)`), running what falls due in time order,
/// each on its queue (synchronously: call `advance` from a thread other than those queues).
///
/// Thread rules: any thread; pending work is behind a lock.
public final class VirtualScheduler: Scheduler, Sendable {
    private struct Pending: Sendable { var due: Int64; var order: Int; var queue: DispatchQueue; var work: @Sendable () -> Void; var handle: ScheduledWork }
    private struct State: Sendable {
        var now: Int64
        var pending: [Pending] = []
        var counter = 0
    }
    private let state: Locked<State>

    public init(startMilliseconds: Int64 = 1_700_000_000_000) { state = Locked(State(now: startMilliseconds)) }

    public func nowMilliseconds() -> Int64 { state.withLock { $0.now } }

    public func schedule(after seconds: Double, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let w = ScheduledWork()
        state.withLock { s in
            s.counter += 1
            s.pending.append(Pending(due: s.now + Int64((max(0, seconds) * 1000).rounded()), order: s.counter, queue: queue, work: work, handle: w))
        }
        return w
    }

    /// Work scheduled and not yet run or cancelled.
    public var pendingCount: Int { state.withLock { $0.pending.filter { !$0.handle.isCancelled }.count } }

    /// Moves time forward by `seconds`, running everything that falls due on the way.
    public func advance(by seconds: Double) {
        let target = state.withLock { $0.now + Int64((seconds * 1000).rounded()) }
        while true {
            let next: Pending? = state.withLock { s in
                s.pending.removeAll { $0.handle.isCancelled }
                guard let i = s.pending.indices.filter({ s.pending[$0].due <= target })
                    .min(by: { (s.pending[$0].due, s.pending[$0].order) < (s.pending[$1].due, s.pending[$1].order) }) else { return nil }
                let p = s.pending.remove(at: i)
                s.now = max(s.now, p.due)
                return p
            }
            guard let p = next else { break }
            if !p.handle.isCancelled { p.queue.sync { p.work() } }
        }
        state.withLock { $0.now = max($0.now, target) }
    }
}

/// Work that repeats on a scheduler until cancelled (a heartbeat, a maintenance sweep): each
/// run schedules the next, so a virtual clock drives it like any timer.
///
/// Thread rules: any thread.
public final class RepeatingWork: Sendable {
    private let current = Locked<ScheduledWork?>(nil)
    private let stopped = Locked(false)

    /// Runs `work` on `queue` after `first` seconds, then every `every` seconds.
    public init(on scheduler: any Scheduler, queue: DispatchQueue, first: Double, every: Double, _ work: @escaping @Sendable () -> Void) {
        schedule(scheduler, queue, after: first, every: every, work)
    }

    private func schedule(_ scheduler: any Scheduler, _ queue: DispatchQueue, after: Double, every: Double, _ work: @escaping @Sendable () -> Void) {
        let next = scheduler.schedule(after: after, on: queue) { [weak self] in
            guard let self, !self.stopped.withLock({ $0 }) else { return }
            work()
            self.schedule(scheduler, queue, after: every, every: every, work)
        }
        let cancelled = stopped.withLock { $0 }
        current.withLock { $0 = next }
        if cancelled { next.cancel() }
    }

    /// No more runs (one under way finishes).
    public func cancel() {
        stopped.withLock { $0 = true }
        current.withLock { $0 }?.cancel()
    }
}
