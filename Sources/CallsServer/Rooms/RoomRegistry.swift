import CallsCore
import CallsSecurity
import Foundation

/// Runs the rooms: owns the queue that `RoomCore` is confined to, the clock and the timers,
/// and does the core's effects: messages and closes through the `SignalOutbox`, durable writes
/// through the `StoreWriter` (whose receipts come back as inputs), membership patches to the
/// relay, log lines.
///
/// ```
///  router ─▶ received/connectionClosed ─┐
///  relay ──▶ dominant speaker ──────────┤        ┌─▶ send / close ─▶ SignalOutbox
///  timers ─▶ fired ─────────────────────┼─▶ queue: core.handle(input, now) ─▶ effects ─┼─▶ persist ─▶ StoreWriter ─┐
///  store writer ─▶ receipts ────────────┘        ├─▶ relay patch ─▶ MediaRelay          │
///         ▲                                      └─▶ schedule / cancel / log             │
///         └──────────────────────────────────────────────────────────────────────────────┘
/// ```
/// Thread rules: entry points from any thread hop onto `queue`; the core, the timers table and
/// the effects run only there (`dispatchPrecondition`).
final class RoomRegistry: SignalHandler, @unchecked Sendable {
    let queue = DispatchQueue(label: "callroom.rooms")
    let core: RoomCore
    let store: CallStore
    let relay: MediaRelay
    let log: ServerLog
    /// Time and timers (grace periods, idle timeouts): real, or virtual in tests.
    let scheduler: any Scheduler
    private var writer: StoreWriter!
    weak var outboxRef: (any SignalOutbox)?
    /// Told (on `queue`) when a room empties; set before start.
    var onRoomEnded: (@Sendable (String) -> Void)?
    /// Confined to `queue`.
    private var timers: TimerTable<RoomTimer>!
    private var heartbeat: DispatchSourceTimer?

    /// Told (on the writer's queue) after each batch of writes commits: the webhook deliverer
    /// looks at the outbox then. Set before start.
    var onCommitted: (@Sendable () -> Void)?
    /// Where moderators' actions are recorded (set before the server listens).
    var audit: AuditLog?
    /// Applies a moderator's ban for good (or its lifting): stored, in the rules, every node told
    /// (the same as the REST endpoint). Set before the server listens; called off this queue.
    var setBan: (@Sendable (String, String, Bool) -> Void)?

    init(store: CallStore, signer: CallTokenSigner, appID: String, relay: MediaRelay, log: ServerLog, limits: RoomLimits = RoomLimits(),
         outbox: WebhookOutbox = .none, publicURL: String? = nil, mediaPublicAddress: (host: String, port: Int?)? = nil,
         revocations: TokenRevocations = TokenRevocations(),
         roomRules: RoomRulesDirectory = RoomRulesDirectory(defaultModeration: .firstJoiner),
         scheduler: any Scheduler = DispatchScheduler.shared) {
        self.scheduler = scheduler
        self.store = store
        self.relay = relay
        self.log = log
        core = RoomCore(signer: signer, appID: appID, limits: limits, mediaPort: relay.port, publicURL: publicURL,
                        mediaHost: mediaPublicAddress?.host, mediaPublicPort: mediaPublicAddress?.port, revocations: revocations,
                        roomRules: roomRules, outbox: outbox)
        timers = TimerTable(scheduler: scheduler, queue: queue)
        writer = StoreWriter(store: store) { [weak self] receipts in
            guard let self else { return }
            self.onCommitted?()
            self.queue.async { for r in receipts { self.run(.stored(r)) } }
        }
    }

    func attach(outbox: any SignalOutbox) {
        outboxRef = outbox
        relay.onDominantSpeaker = { [weak self] room, key in
            guard let registry = self else { return }
            registry.queue.async { registry.run(.dominantSpeaker(room: room, key: key)) }
        }
    }

    /// Starts the store heartbeat that bounds how much end time a crash can lose.
    func startHeartbeat(every seconds: Double = 5) {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + seconds, repeating: seconds)
        t.setEventHandler { [weak self] in self?.run(.heartbeat) }
        t.resume()
        heartbeat = t
    }

    func stopHeartbeat() { heartbeat?.cancel(); heartbeat = nil }

    var roomCount: Int { queue.sync { core.rooms.count } }
    var participantCount: Int { queue.sync { core.participantCount } }
    /// The rooms this node holds (their session ids), and its participants, in one look.
    var load: (rooms: [String], participants: Int) { queue.sync { (Array(core.rooms.keys), core.participantCount) } }

    // MARK: Entry points (any thread)

    /// A room-family message from the router (rate-limited there already).
    func received(_ message: ClientMessage, from connection: ConnectionID) {
        queue.async { self.run(.message(message, from: connection)) }
    }

    func connectionClosed(_ connection: ConnectionID) {
        queue.async { self.run(.connectionClosed(connection)) }
    }

    /// Ends every call (server shutdown) and returns once every leave is on disk and its
    /// `left` handed to the outbox.
    /// `uid`'s tokens were revoked: they leave every room now (any thread).
    func revoke(_ r: Revocation) { queue.async { self.run(.revoked(r)) } }
    /// Recordings a crash cut start again as their sessions come back (`RoomInput.resumeRecordings`).
    func resumeRecordings(in sessions: [String]) { queue.async { self.run(.resumeRecordings(sessions)) } }

    /// A room's rules changed (here or on another node): any thread.
    func rulesChanged(session: String, liftedBan: String?) { queue.async { self.run(.rulesChanged(session: session, liftedBan: liftedBan)) } }

    func closeAll(reason: LeaveReason) {
        queue.sync { run(.shutdown(reason)) }
        settle()
    }

    /// Blocks until the store writer is idle and every receipt it produced has been handled
    /// (tests use it after each input; shutdown uses it once).
    func settle() { writer.settle(runner: queue) { !core.pendingWrites.isEmpty } }

    // MARK: The effect loop (on the queue)

    /// Starts a server member for a room (on the queue; it must only hand off).
    private var memberLauncher: (@Sendable (MemberLaunch) -> Void)?

    /// A member could not start (any thread); `code` when the failure has its own (a language
    /// with no model).
    func memberFailed(_ launch: MemberLaunch, code: SignalErrorCode? = nil, reason: String) {
        queue.async { self.run(.memberFailed(session: launch.session, feature: launch.feature, id: launch.id, code: code, reason: reason)) }
    }

    /// Sets how members start and which features they offer (the server, once it listens).
    func setMemberLauncher(offering features: Set<SessionFeature>, _ launch: @escaping @Sendable (MemberLaunch) -> Void) {
        queue.sync {
            memberLauncher = launch
            core.offeredFeatures = features
        }
    }

    private func run(_ input: RoomInput) {
        dispatchPrecondition(condition: .onQueue(queue))
        for effect in core.handle(input, now: scheduler.nowMilliseconds()) { perform(effect) }
    }

    private func perform(_ effect: RoomEffect) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch effect {
        case .send(let m, let c): outboxRef?.send(m, to: c)
        case .close(let c): outboxRef?.close(c)
        case .persist(let request): writer.submit(request)
        case .relay(let patch): relay.apply(patch)
        case .schedule(let timer, let seconds):
            timers.schedule(timer, after: seconds) { [weak self] t in self?.run(.timerFired(t)) }
        case .cancel(let timer): timers.cancel(timer)
        case .log(let level, let message, let fields): log.write(level, message, fields)
        case .audit(let entry): audit?.record(entry)
        case .setBan(let sid, let uid, let banned):
            // (A store write: off the rooms' queue; the change comes back as `rulesChanged`.)
            let apply = setBan
            DispatchQueue.global().async { apply?(sid, uid, banned) }
        case .roomEnded(let sid): onRoomEnded?(sid)
        case .startMember(let m):
            guard let launch = memberLauncher else {
                return log.warn("\(m.feature.rawValue) requested but this server runs no members", ["session": m.session, "id": m.id])
            }
            launch(m)
        }
    }
}
