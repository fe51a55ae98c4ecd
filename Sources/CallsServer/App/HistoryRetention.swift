import CallsCore
import CallsDatabase
import CallsStore
import Foundation
import Synchronization

/// Keeps the server's history bounded in time, at start and then hourly: webhook deliveries and
/// pushes that are over (delivered or dead, sent or failed…) are forgotten `deliveryDays` after
/// they were made (pending ones never), the chat of calls that ended `chatDays` ago, and the
/// logs of calls that ended `callLogDays` ago once their recordings and transcripts are gone
/// (`RecordingMaintenance`'s retention), and auth tokens past `authTokenTTLSeconds` (which open
/// nothing). Each 0 (or no lifetime): kept for ever. Store failures are `StoreOutage`'s: the
/// turn is skipped.
///
/// Thread rules: the timer runs on a utility queue (on the scheduler: virtual in tests); `sweep`
/// from any thread (tests call it); `start`/`stop` from the server's owner.
final class HistoryRetention: Sendable {
    /// What one sweep forgot.
    struct Forgotten: Equatable {
        var webhooks = 0, pushes = 0, chatMessages = 0, calls = 0, authTokens = 0
    }

    private let store: CallStore
    private let deliveryDays: Int
    private let chatDays: Int
    private let callLogDays: Int
    private let authTokenTTLSeconds: Int64?
    private let log: ServerLog
    private let outage: StoreOutage
    private let timer = Locked<RepeatingWork?>(nil)
    /// Set by `stop`: a turn running stops after its page (a large one pauses between pages).
    private let stopped = Atomic<Bool>(false)
    private let scheduler: any Scheduler
    /// Ids looked at per page (`CallStore.forget`).
    private let pageIds: Int

    init(store: CallStore, deliveryDays: Int, chatDays: Int, callLogDays: Int = 0, authTokenTTLSeconds: Int64? = nil, log: ServerLog,
         scheduler: any Scheduler = DispatchScheduler.shared, pageIds: Int = 1_000) {
        self.pageIds = pageIds
        self.store = store
        self.deliveryDays = deliveryDays
        self.chatDays = chatDays
        self.callLogDays = callLogDays
        self.authTokenTTLSeconds = authTokenTTLSeconds
        self.log = log
        self.scheduler = scheduler
        outage = StoreOutage("history retention", log: log)
    }

    func start() {
        guard deliveryDays > 0 || chatDays > 0 || callLogDays > 0 || authTokenTTLSeconds != nil else { return }
        let work = RepeatingWork(on: scheduler, queue: DispatchQueue.global(qos: .utility), first: 0, every: 3600) { [weak self] in self?.sweep() }
        timer.withLock { $0 = work }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        timer.withLock { t in t?.cancel(); t = nil }
    }

    /// Runs `page` until it says there is no more, pausing after each as long as it took, so the
    /// store is free at least half the time for everything else (its lock is not fair: let go
    /// and taken again at once, waiters could wait out several pages); how many rows in all. A
    /// store failure ends it, and so does `stop` (the rest wait for the next turn).
    private func inPages(_ operation: String, _ page: () throws(DatabaseError) -> (rows: Int, more: Bool)) -> Int {
        var forgotten = 0
        while !stopped.load(ordering: .acquiring) {
            let start = monotonicNanoseconds()
            guard let done = outage.attempt(operation, page) else { break }
            forgotten += done.rows
            guard done.more else { break }
            Thread.sleep(forTimeInterval: min(1, Double(monotonicNanoseconds() - start) / 1e9))
        }
        return forgotten
    }

    /// Forgets the rows of `history` past `before`, `pageIds` ids a page.
    private func forget(_ history: ForgettableHistory, before: Int64) -> Int {
        var after: Int64 = 0
        return inPages("forget old \(history.noun)") { () throws(DatabaseError) in
            let page = try store.forget(history, before: before, after: after, window: pageIds)
            after = page.next ?? after
            return (page.rows, page.next != nil)
        }
    }

    /// Forgets what is past its retention at `now`.
    @discardableResult
    func sweep(now: Int64 = epochMilliseconds()) -> Forgotten {
        var out = Forgotten()
        let day: Int64 = 86_400_000
        if deliveryDays > 0 {
            let before = now - Int64(deliveryDays) * day
            out.webhooks = forget(.webhookDeliveries, before: before)
            out.pushes = forget(.pushDeliveries, before: before)
            if out.webhooks + out.pushes > 0 {
                log.info("delivery logs past retention forgotten", ["webhooks": "\(out.webhooks)", "pushes": "\(out.pushes)"])
            }
        }
        if chatDays > 0 {
            out.chatMessages = forget(.chat, before: now - Int64(chatDays) * day)
            if out.chatMessages > 0 { log.info("chat past retention forgotten", ["messages": "\(out.chatMessages)"]) }
        }
        if callLogDays > 0 {
            out.calls = forget(.callLogs, before: now - Int64(callLogDays) * day)
            if out.calls > 0 { log.info("call logs past retention forgotten", ["calls": "\(out.calls)"]) }
        }
        if let ttl = authTokenTTLSeconds {
            out.authTokens = inPages("forget expired auth tokens") { () throws(DatabaseError) in
                let n = try store.forgetAuthTokens(madeBefore: now - ttl * 1000, limit: pageIds)
                return (n, n == pageIds)
            }
            if out.authTokens > 0 { log.info("expired auth tokens forgotten", ["tokens": "\(out.authTokens)"]) }
        }
        return out
    }
}
