import CallsCore
import CallsDatabase
import CallsStore
import Foundation
import Synchronization

/// Counters of push sending, for `/metrics`. Any thread.
public final class PushCounters: Sendable {
    public let sentAPNs = Atomic<UInt64>(0)
    public let sentFCM = Atomic<UInt64>(0)
    public let failed = Atomic<UInt64>(0)
    public let retried = Atomic<UInt64>(0)
    public let expired = Atomic<UInt64>(0)
    public let tokensPurged = Atomic<UInt64>(0)
    init() {}
}

/// Sends the push outbox (`push_deliveries`, written with the ringing transitions): each due
/// push goes to its service (APNs for `apns_voip`, FCM for `fcm`); a push the service refuses
/// for good is `failed` (and a dead token purged), one it asks to retry is tried again with
/// backoff until its 30 s lifetime is over (`expired`: a phone ringing later would ring for a
/// call that is over). An `ended` push whose `initiated` push was never sent sends neither.
///
/// Thread rules: `start`/`stop` from the owner; the loop runs on its own thread, which alone
/// uses the providers (and their libcurl handles). Signalling never waits for it.
final class PushSender: @unchecked Sendable {
    private let store: CallStore
    private let providers: [PushPlatform: any PushProvider]
    private let log: ServerLog
    private let thread = OutboxThread(name: "callroom.push")
    private let outage: StoreOutage
    let counters = PushCounters()

    init(store: CallStore, providers: [PushPlatform: any PushProvider], log: ServerLog) {
        self.store = store
        self.providers = providers
        self.log = log
        outage = StoreOutage("push", log: log)
    }

    func start() {
        thread.start { [self] in
            while thread.isRunning {
                let due = outage.attempt("due pushes") { () throws(DatabaseError) in try store.duePushes(now: epochMilliseconds(), limit: 50) } ?? []
                for p in due where thread.isRunning {
                    // Nodes sharing the database: whoever claims it sends it.
                    let at = epochMilliseconds()
                    let claimed = outage.attempt("claim push") { () throws(DatabaseError) in
                        try store.claimPush(id: p.id, now: at, until: at + WebhookDeliverer.claimLeaseMs)
                    }
                    guard claimed == true else { continue }
                    attempt(p)
                }
                if due.isEmpty { thread.idle() }
            }
        }
    }

    /// Stops after the push in progress (at most two 5 s timeouts).
    func stop() { thread.stop() }

    /// Looks at the outbox now (new rows were committed).
    func poke() { thread.poke() }

    private func attempt(_ p: StoredPush) {
        let now = epochMilliseconds()
        if now >= p.expiresAt {
            record(p, .expired, httpStatus: nil, reason: p.lastReason, providerId: nil, next: nil, at: now)
            counters.expired.add(1, ordering: .relaxed)
            return
        }
        if p.action == PushEvent.Action.ended.rawValue,
           outage.attempt("supersede unsent ring", { () throws(DatabaseError) in try store.supersedeUnsentRing(p) }) == true { return }
        guard let provider = providers[p.platform] else {
            record(p, .failed, httpStatus: nil, reason: "\(p.platform.rawValue) is not configured", providerId: nil, next: nil, at: now)
            counters.failed.add(1, ordering: .relaxed)
            return
        }
        let outcome = provider.send(p, now: now)
        let at = epochMilliseconds()
        switch outcome {
        case let .sent(status, providerId):
            record(p, .sent, httpStatus: status, reason: nil, providerId: providerId, next: nil, at: at)
            if p.platform == .fcm { counters.sentFCM.add(1, ordering: .relaxed) } else { counters.sentAPNs.add(1, ordering: .relaxed) }
        case let .retry(status, reason, afterMs):
            let delay = afterMs ?? WebhookDeliverer.backoffMs(afterAttempts: p.attempts + 1) / 4
            record(p, .pending, httpStatus: status, reason: reason, providerId: nil, next: at + delay, at: at)
            counters.retried.add(1, ordering: .relaxed)
        case let .failed(status, reason, purge):
            record(p, .failed, httpStatus: status, reason: reason, providerId: nil, next: nil, at: at)
            counters.failed.add(1, ordering: .relaxed)
            if purge, outage.attempt("purge push token", { () throws(DatabaseError) in try store.purgePushToken(platform: p.platform, token: p.token) }) == true {
                counters.tokensPurged.add(1, ordering: .relaxed)
                log.info("push token purged", ["uid": p.uid, "platform": p.platform.rawValue, "reason": reason])
            }
        }
    }

    /// A push's outcome on disk. If the store fails here the claim's lease runs out and the push
    /// is tried again while its lifetime lasts.
    private func record(_ p: StoredPush, _ status: StoredPush.Status, httpStatus: Int?, reason: String?, providerId: String?, next: Int64?, at: Int64) {
        _ = outage.attempt("record push") { () throws(DatabaseError) in
            try store.recordPush(id: p.id, status: status, httpStatus: httpStatus, reason: reason, providerId: providerId, next: next, at: at)
        }
    }
}
