import CallsCore
import CallsDatabase
import CallsSignalling
import CallsStore
import Foundation

/// Runs presence and ringing calls: a `CoreRunner` drives `RingCore` (its queue, clock,
/// timers and store writer); this type makes the store reads the core needs (a `hello`'s auth
/// token, a call's receiver) and does its effects — messages through the `SignalOutbox`,
/// transition events to `onEvent` (webhooks and push deliver them).
///
/// Thread rules: entry points from any thread hop onto the runner's queue; the core, the timers
/// and the effects run only there (`dispatchPrecondition`). `onEvent` is set before start and is
/// called on the queue.
final class CallRegistry: SignalHandler, @unchecked Sendable {
    private let runner: CoreRunner<RingCore, String>
    var queue: DispatchQueue { runner.queue }
    let store: CallStore
    let log: ServerLog
    weak var outboxRef: (any SignalOutbox)?
    /// Every transition once it is on disk.
    var onEvent: (@Sendable (CallTrigger, WireCall) -> Void)?
    /// Auth tokens older than this do not say hello (nil: no limit).
    var authTokenTTLSeconds: Int64?

    init(store: CallStore, log: ServerLog, defaultTimeoutSeconds: Int = 45, outbox: WebhookOutbox = .none,
         pushPlatforms: [PushPlatform] = [], limits: RingLimits = RingLimits(), scheduler: any Scheduler = DispatchScheduler.shared) {
        self.store = store
        self.log = log
        let core = RingCore(defaultTimeoutSeconds: defaultTimeoutSeconds, outbox: outbox, pushPlatforms: pushPlatforms, limits: limits)
        runner = CoreRunner(label: "callroom.calls", core: core, store: store, scheduler: scheduler, stored: { .stored($0) })
        runner.setPerform { [unowned self] effect in self.perform(effect) }
    }

    func attach(outbox: any SignalOutbox) { outboxRef = outbox }

    /// Takes back the calls that were ringing when the server stopped (before any connection).
    func restore() throws(DatabaseError) {
        let list = try store.ringingCalls()
        runner.sync(.restore(list))
    }

    // MARK: Entry points (any thread)

    func received(_ message: ClientMessage, from connection: ConnectionID) {
        queue.async { self.receive(message, from: connection) }
    }

    func connectionClosed(_ connection: ConnectionID) { runner.async(.connectionClosed(connection)) }

    /// `uid`'s tokens were revoked: their devices go offline.
    func revoke(_ r: Revocation) { runner.async(.revoked(r)) }

    /// The room of `sessionId` emptied (the room registry says so).
    func roomEnded(_ sessionId: String) { runner.async(.roomEnded(sessionId: sessionId)) }

    /// Blocks until every write so far is on disk and its receipt handled (tests, shutdown).
    func settle() { runner.settle() }

    // MARK: On the queue

    private func receive(_ message: ClientMessage, from c: ConnectionID) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch message {
        case .hello(let token):
            // A store read on this queue (WAL: readers do not wait for the writer's fsync).
            do {
                let user = try store.user(authToken: token, maxAgeSeconds: authTokenTTLSeconds)
                runner.run(.hello(c, user.map { RingUser(uid: $0.uid, name: $0.name, tokenId: CallStore.authTokenID(token)) }))
            } catch {
                storeFailed(error, c, .hello)
            }
        case let .initiateCall(receiverId, receiverType, type, timeout):
            do {
                let receiver = try lookUp(receiverId, receiverType)
                runner.run(.initiate(c, receiverId: receiverId, receiverType: receiverType, type: type, timeoutSeconds: timeout, receiver: receiver))
            } catch {
                storeFailed(error, c, .initiateCall)
            }
        default:
            runner.run(.message(message, from: c))
        }
    }

    private func storeFailed(_ error: DatabaseError, _ c: ConnectionID, _ read: RingStoreRead) {
        log.warn("ringing: the store could not be read", ["message": read.rawValue, "error": error.description])
        runner.run(.storeUnavailable(c, during: read))
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

    private func perform(_ effect: RingEffect) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch effect {
        case .send(let m, let c): outboxRef?.send(m, to: c)
        case .close(let c): outboxRef?.close(c)
        case .persist(let r): runner.submit(r)
        case .schedule(let sid, let seconds): runner.schedule(sid, after: seconds) { .timedOut(sessionId: $0) }
        case .scheduleCallerCheck(let sid, let seconds): runner.schedule(Self.callerCheckKey(sid), after: seconds) { _ in .callerGone(sessionId: sid) }
        case .cancel(let sid):
            runner.cancel(sid)
            runner.cancel(Self.callerCheckKey(sid))
        case .event(let trigger, let call):
            log.info("call \(trigger.rawValue)", ["session": call.sessionId, "status": call.status.rawValue])
            onEvent?(trigger, call)
        case .log(let level, let message, let fields): log.write(level, message, fields)
        }
    }
}

extension RingCore: RunnableCore {
    var hasPendingWrites: Bool { pendingWrites > 0 }
}
