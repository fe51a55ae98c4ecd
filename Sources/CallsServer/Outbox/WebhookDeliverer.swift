import CallsCore
import CallsDatabase
import CallsStore
import CallsTransport
import Foundation
import Synchronization

/// Counters of webhook delivery, for `/metrics`. Any thread.
public final class WebhookCounters: Sendable {
    public let delivered = Atomic<UInt64>(0)
    public let failedAttempts = Atomic<UInt64>(0)
    public let deadLettered = Atomic<UInt64>(0)
    /// Undelivered events dropped because their webhook's queue was full.
    public let dropped = Atomic<UInt64>(0)
    init() {}
}

/// Sends the webhook outbox: each due delivery is POSTed with its signature headers (5 s
/// timeout); a 2xx marks it delivered, anything else (or a timeout) is retried with exponential
/// backoff and jitter, and after `maxAttempts` it is a dead letter (listable, re-sendable). A
/// session's deliveries to one webhook go in order. Everything is in the store, so a restart
/// (even `kill -9`) resumes where it was: each delivery id is delivered at least once. The
/// queue per webhook is bounded (`queueLimit`, checked every second): past it the oldest
/// undelivered events are marked `dropped`, counted and logged. A receiver that fails is paused
/// as a whole (`Pause`): while it is, none of its deliveries is attempted, so a dead receiver
/// with a backlog sees one request every few seconds, not every delivery's retries; the first
/// delivery due after the pause probes it, and its success sends everything waiting at once.
///
/// Thread rules: `start`/`stop` from the owner; the loop runs on its own thread, which alone
/// owns the libcurl handle. Signalling and media never wait for it.
final class WebhookDeliverer: @unchecked Sendable {
    private let store: CallStore
    private let webhooks: WebhookDirectory
    private let maxAttempts: Int
    private let queueLimit: Int
    private var boundCheckedAt: Int64 = 0
    /// Receivers failing now: consecutive failures and until when nothing is sent to them.
    /// Loop thread only.
    private struct Pause { var failures: Int; var until: Int64 }
    private var paused: [String: Pause] = [:]
    /// The longest pause: how soon a receiver that came back is noticed (with a backlog due).
    static let maxPauseMs: Int64 = 5000
    /// How long a claimed delivery (or push) stays out of the other nodes' sight: more than one
    /// attempt takes (5 s for a webhook, two 5 s for a push). A node that dies mid-attempt leaves
    /// the row to be retried by another after this — at least once, never twice at the same time.
    static let claimLeaseMs: Int64 = 30_000
    private let log: ServerLog
    private let thread = OutboxThread(name: "callroom.webhooks")
    private let outage: StoreOutage
    let counters = WebhookCounters()

    init(store: CallStore, webhooks: WebhookDirectory, maxAttempts: Int, queueLimit: Int = 100_000, log: ServerLog) {
        self.store = store
        self.webhooks = webhooks
        self.maxAttempts = max(1, maxAttempts)
        self.queueLimit = max(1, queueLimit)
        self.log = log
        outage = StoreOutage("webhooks", log: log)
    }

    func start() { thread.start { [self] in loop() } }

    /// Stops after the attempt in progress (at most one 5 s timeout).
    func stop() { thread.stop() }

    var isRunning: Bool { thread.isRunning }

    /// Looks at the outbox now (new rows were written).
    func poke() { thread.poke() }

    /// The delay before attempt `n + 1` after `n` failed: 1 s, 2 s, 4 s … capped at 60 s, with
    /// the upper half jittered so retries of many deliveries spread out.
    static func backoffMs(afterAttempts n: Int, random: Double = Double.random(in: 0...1)) -> Int64 {
        let base = min(60_000.0, 1000 * pow(2, Double(max(0, n - 1))))
        return Int64(base / 2 + base / 2 * random)
    }

    private func loop() {
        let client: CurlClient
        do { client = try CurlClient() } catch {
            log.error("webhooks off: \(error)", [:])
            return
        }
        client.refusedDestinations = IPNetwork.neverDialled
        while thread.isRunning {
            enforceBound()
            let now = epochMilliseconds()
            let skip = paused.filter { $0.value.until > now }.map(\.key)
            let due = outage.attempt("due deliveries") { () throws(DatabaseError) in try store.dueDeliveries(now: now, limit: 50, excluding: skip) } ?? []
            for d in due where thread.isRunning {
                if let p = paused[d.webhookId], p.until > epochMilliseconds() { continue }
                // Nodes sharing the database: whoever claims it sends it (the lease covers one attempt).
                let at = epochMilliseconds()
                let claimed = outage.attempt("claim delivery") { () throws(DatabaseError) in try store.claimDelivery(id: d.id, now: at, until: at + Self.claimLeaseMs) }
                guard claimed == true else { continue }
                attempt(d, client)
            }
            if due.isEmpty { thread.idle() }
        }
    }

    /// At most once a second: drops the oldest undelivered events of a webhook over the bound.
    private func enforceBound() {
        let now = epochMilliseconds()
        guard now - boundCheckedAt >= 1000 else { return }
        boundCheckedAt = now
        let counts = outage.attempt("pending delivery counts") { () throws(DatabaseError) in try store.pendingDeliveryCounts() } ?? [:]
        for (id, n) in counts where n > queueLimit {
            let dropped = outage.attempt("drop oldest deliveries") { () throws(DatabaseError) in
                try store.dropOldestDeliveries(webhookId: id, count: n - queueLimit)
            } ?? 0
            guard dropped > 0 else { continue }
            counters.dropped.add(UInt64(dropped), ordering: .relaxed)
            log.warn("webhook queue full: dropped the oldest undelivered events", ["webhook": id, "dropped": "\(dropped)", "limit": "\(queueLimit)"])
        }
    }

    private func attempt(_ d: StoredDelivery, _ client: CurlClient) {
        guard let hook = webhooks.webhook(d.webhookId) else {
            // The webhook left the configuration: nothing can sign or send it any more.
            record(d, status: "dead", httpStatus: nil, error: "webhook '\(d.webhookId)' is not configured", next: nil, at: epochMilliseconds())
            counters.deadLettered.add(1, ordering: .relaxed)
            return
        }
        let ts = epochMilliseconds() / 1000
        let headers = [
            "Content-Type: application/json",
            "X-CometChat-Signature: \(WebhookOutbox.signature(secret: hook.secret, body: d.body))",
            "X-CallRoom-Signature: \(WebhookOutbox.timestampedSignature(secret: hook.secret, timestamp: ts, body: d.body))",
            "X-CallRoom-Delivery-Id: \(d.deliveryId)",
            "X-CallRoom-Timestamp: \(ts)",
            "X-CallRoom-Attempt: \(d.attempts + 1)",
            "User-Agent: callroomd/\(CallRoomVersion.string)",
        ]
        let result = client.post(d.url, headers: headers, body: Array(d.body.utf8), timeoutMs: 5000)
        let at = epochMilliseconds()
        switch result {
        case .success(let r) where (200..<300).contains(r.status):
            record(d, status: "delivered", httpStatus: r.status, error: nil, next: nil, at: at)
            counters.delivered.add(1, ordering: .relaxed)
            // The receiver is back: what waits in backoff for it goes now, not at its retry time.
            if let p = paused.removeValue(forKey: d.webhookId) {
                log.info("webhook receiver answers again", ["webhook": d.webhookId, "failed_attempts": "\(p.failures)"])
            }
            if d.attempts > 0 { _ = outage.attempt("expedite deliveries") { () throws(DatabaseError) in try store.expediteDeliveries(webhookId: d.webhookId, at: at) } }
        case .success(let r):
            failed(d, httpStatus: r.status, error: "HTTP \(r.status)", at: at)
        case .failure(let e) where e.isRefusedDestination:
            // Its name resolves where no webhook goes: nothing was sent, and retrying sends nothing.
            record(d, status: "dead", httpStatus: nil, error: e.message, next: nil, at: at)
            counters.deadLettered.add(1, ordering: .relaxed)
            log.warn("webhook delivery refused: its address is never a webhook's", ["delivery": d.deliveryId, "webhook": d.webhookId, "error": e.message])
        case .failure(let e):
            failed(d, httpStatus: nil, error: e.description, at: at)
        }
    }

    private func failed(_ d: StoredDelivery, httpStatus: Int?, error: String, at: Int64) {
        counters.failedAttempts.add(1, ordering: .relaxed)
        var p = paused[d.webhookId] ?? Pause(failures: 0, until: 0)
        if p.failures == 0 { log.warn("webhook receiver failing: pausing its deliveries", ["webhook": d.webhookId, "error": error]) }
        p.failures += 1
        p.until = at + min(Self.maxPauseMs, Self.backoffMs(afterAttempts: p.failures))
        paused[d.webhookId] = p
        if d.attempts + 1 >= maxAttempts {
            record(d, status: "dead", httpStatus: httpStatus, error: error, next: nil, at: at)
            counters.deadLettered.add(1, ordering: .relaxed)
            log.warn("webhook delivery dead-lettered", ["delivery": d.deliveryId, "webhook": d.webhookId, "error": error])
        } else {
            record(d, status: "pending", httpStatus: httpStatus, error: error, next: at + Self.backoffMs(afterAttempts: d.attempts + 1), at: at)
        }
    }

    /// An attempt's outcome on disk. If the store fails here the claim's lease runs out and the
    /// delivery is attempted again (at least once: receivers dedupe by `X-CallRoom-Delivery-Id`).
    private func record(_ d: StoredDelivery, status: String, httpStatus: Int?, error: String?, next: Int64?, at: Int64) {
        _ = outage.attempt("record attempt") { () throws(DatabaseError) in
            try store.recordAttempt(id: d.id, status: status, httpStatus: httpStatus, error: error, next: next, at: at)
        }
    }
}
