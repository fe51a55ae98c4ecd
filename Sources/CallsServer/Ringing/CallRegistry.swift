import CallsCore
import Foundation

/// Runs presence and ringing calls: the queue `RingCore` is confined to, the timers, the
/// store reads it needs (a `hello`'s auth token, a call's receiver) and its effects — messages
/// through the `SignalOutbox`, writes through its own `StoreWriter`, transition events to
/// `onEvent` (the webhooks issue delivers them).
///
/// Thread rules: entry points from any thread hop onto `queue`; the core, the timer table and
/// the effects run only there (`dispatchPrecondition`). `onEvent` is set before start and is
/// called on `queue`.
final class CallRegistry: SignalHandler, @unchecked Sendable {
    let queue = DispatchQueue(label: "callroom.calls")
    let core: RingCore
    let store: CallStore
    let log: ServerLog
    let scheduler: any Scheduler
    private var writer: StoreWriter!
    weak var outboxRef: (any SignalOutbox)?
    /// Every transition once it is on disk.
    var onEvent: (@Sendable (CallTrigger, WireCall) -> Void)?
    private var timers: TimerTable<String>!
    /// Auth tokens older than this do not say hello (nil: no limit).
    var authTokenTTLSeconds: Int64?

    init(store: CallStore, log: ServerLog, defaultTimeoutSeconds: Int = 45, outbox: WebhookOutbox = .none,
         pushPlatforms: [PushPlatform] = [], limits: RingLimits = RingLimits(), scheduler: any Scheduler = DispatchScheduler.shared) {
        self.store = store
        self.log = log
        self.scheduler = scheduler
        core = RingCore(defaultTimeoutSeconds: defaultTimeoutSeconds, outbox: outbox, pushPlatforms: pushPlatforms, limits: limits)
        timers = TimerTable(scheduler: scheduler, queue: queue)
        writer = StoreWriter(store: store) { [weak self] receipts in
            guard let self else { return }
            self.queue.async { for r in receipts { self.run(.stored(r)) } }
        }
    }

    func attach(outbox: any SignalOutbox) { outboxRef = outbox }

    /// Takes back the calls that were ringing when the server stopped (before any connection).
    func restore() throws(DatabaseError) {
        let list = try store.ringingCalls()
        queue.sync { run(.restore(list)) }
    }

    // MARK: Entry points (any thread)

    func received(_ message: ClientMessage, from connection: ConnectionID) {
        queue.async { self.receive(message, from: connection) }
    }

    func connectionClosed(_ connection: ConnectionID) {
        queue.async { self.run(.connectionClosed(connection)) }
    }

    /// `uid`'s tokens were revoked: their devices go offline.
    func revoke(_ r: Revocation) { queue.async { self.run(.revoked(r)) } }

    /// The room of `sessionId` emptied (the room registry says so).
    func roomEnded(_ sessionId: String) {
        queue.async { self.run(.roomEnded(sessionId: sessionId)) }
    }

    /// Blocks until every write so far is on disk and its receipt handled (tests, shutdown).
    func settle() { writer.settle(runner: queue) { core.pendingWrites > 0 } }

    // MARK: On the queue

    private func receive(_ message: ClientMessage, from c: ConnectionID) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch message {
        case .hello(let token):
            // A store read on this queue (WAL: readers do not wait for the writer's fsync).
            do {
                let user = try store.user(authToken: token, maxAgeSeconds: authTokenTTLSeconds)
                run(.hello(c, user.map { RingUser(uid: $0.uid, name: $0.name, tokenId: CallStore.authTokenID(token)) }))
            } catch {
                storeFailed(error, c, .hello)
            }
        case let .initiateCall(receiverId, receiverType, type, timeout):
            do {
                let receiver = try lookUp(receiverId, receiverType)
                run(.initiate(c, receiverId: receiverId, receiverType: receiverType, type: type, timeoutSeconds: timeout, receiver: receiver))
            } catch {
                storeFailed(error, c, .initiateCall)
            }
        default:
            run(.message(message, from: c))
        }
    }

    private func storeFailed(_ error: DatabaseError, _ c: ConnectionID, _ read: RingStoreRead) {
        log.warn("ringing: the store could not be read", ["message": read.rawValue, "error": error.description])
        run(.storeUnavailable(c, during: read))
    }

    private func lookUp(_ id: String, _ type: CallReceiverType) throws(DatabaseError) -> RingReceiver {
        switch type {
        case .user:
            return RingReceiver(user: try store.user(uid: id).map { RingUser(uid: $0.uid, name: $0.name) }, group: nil)
        case .group:
            guard let g = try store.group(guid: id) else { return RingReceiver(user: nil, group: nil) }
            var members: [RingUser] = []
            for uid in g.members { members.append(RingUser(uid: uid, name: try store.user(uid: uid)?.name ?? uid)) }
            return RingReceiver(user: nil, group: (g.guid, g.name, members))
        }
    }

    /// The caller-offline check's timer, beside the call's own timeout (keyed by the session id).
    private static func callerCheckKey(_ sid: String) -> String { "caller " + sid }

    private func run(_ input: RingInput) {
        dispatchPrecondition(condition: .onQueue(queue))
        for effect in core.handle(input, now: scheduler.nowMilliseconds()) { perform(effect) }
    }

    private func perform(_ effect: RingEffect) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch effect {
        case .send(let m, let c): outboxRef?.send(m, to: c)
        case .close(let c): outboxRef?.close(c)
        case .persist(let r): writer.submit(r)
        case .schedule(let sid, let seconds):
            timers.schedule(sid, after: seconds) { [weak self] sid in self?.run(.timedOut(sessionId: sid)) }
        case .scheduleCallerCheck(let sid, let seconds):
            timers.schedule(Self.callerCheckKey(sid), after: seconds) { [weak self] _ in self?.run(.callerGone(sessionId: sid)) }
        case .cancel(let sid):
            timers.cancel(sid)
            timers.cancel(Self.callerCheckKey(sid))
        case .event(let trigger, let call):
            log.info("call \(trigger.rawValue)", ["session": call.sessionId, "status": call.status.rawValue])
            onEvent?(trigger, call)
        case .log(let level, let message, let fields): log.write(level, message, fields)
        }
    }
}
