import CallsCore
import CallsDatabase
import CallsStore
import Foundation

/// Keeps the delivery logs bounded: webhook deliveries and pushes that are over (delivered or
/// dead, sent or failed…) are forgotten `days` after they were made — at start, then hourly.
/// Pending ones are never touched. Store failures are `StoreOutage`'s: the turn is skipped.
///
/// Thread rules: the timer runs on a utility queue (on the scheduler: virtual in tests); `sweep`
/// from any thread (tests call it); `start`/`stop` from the server's owner.
final class DeliveryLogRetention: Sendable {
    private let store: CallStore
    private let days: Int
    private let log: ServerLog
    private let outage: StoreOutage
    private let timer = Locked<RepeatingWork?>(nil)
    private let scheduler: any Scheduler

    /// `days` 0: keep them for ever (nothing runs).
    init(store: CallStore, days: Int, log: ServerLog, scheduler: any Scheduler = DispatchScheduler.shared) {
        self.store = store
        self.days = days
        self.log = log
        self.scheduler = scheduler
        outage = StoreOutage("delivery logs", log: log)
    }

    func start() {
        guard days > 0 else { return }
        let work = RepeatingWork(on: scheduler, queue: DispatchQueue.global(qos: .utility), first: 0, every: 3600) { [weak self] in self?.sweep() }
        timer.withLock { $0 = work }
    }

    func stop() { timer.withLock { t in t?.cancel(); t = nil } }

    /// Forgets what was over and made more than `days` before `now`; how many of each.
    @discardableResult
    func sweep(now: Int64 = epochMilliseconds()) -> (webhooks: Int, pushes: Int) {
        guard days > 0 else { return (0, 0) }
        let before = now - Int64(days) * 86_400_000
        guard let n = outage.attempt("forget old deliveries", { () throws(DatabaseError) in try store.forgetFinishedDeliveries(before: before) }) else {
            return (0, 0)
        }
        if n.webhooks + n.pushes > 0 {
            log.info("delivery logs past retention forgotten", ["webhooks": "\(n.webhooks)", "pushes": "\(n.pushes)"])
        }
        return n
    }
}
