import CallsCore
import CallsRelay
import CallsSecurity
import CallsSignalling
import CallsStore
import Foundation

/// Runs the rooms: a `CoreRunner` drives `RoomCore` (its queue, clock, timers and store
/// writer); this type does the core's effects — messages and closes through the `SignalOutbox`,
/// membership patches to the relay, server members, log and audit lines — and gives the rooms
/// their entry points.
///
/// ```
///  router ─▶ received/connectionClosed ─┐
///  relay ──▶ dominant speaker ──────────┤        ┌─▶ send / close ─▶ SignalOutbox
///  timers, heartbeat (Scheduler) ─▶ fired ┼─▶ runner queue: core.handle(input, now) ─▶ effects ─┼─▶ persist ─▶ StoreWriter ─┐
///  store writer ─▶ receipts ────────────┘        ├─▶ relay patch ─▶ MediaRelay          │
///         ▲                                      └─▶ schedule / cancel / log             │
///         └──────────────────────────────────────────────────────────────────────────────┘
/// ```
/// Thread rules: entry points from any thread hop onto the runner's queue; the core, its timers
/// and the effects run only there (`dispatchPrecondition`). The `var` hooks are set before start.
final class RoomRegistry: SignalHandler, @unchecked Sendable {
    private let runner: CoreRunner<RoomCore, RoomTimer>
    var queue: DispatchQueue { runner.queue }
    var core: RoomCore { runner.core }
    let store: CallStore
    let relay: MediaRelay
    let log: ServerLog
    weak var outboxRef: (any SignalOutbox)?
    /// Told (on `queue`) when a room empties; set before start.
    var onRoomEnded: (@Sendable (String) -> Void)?

    /// Told (on the writer's queue) after each batch of writes commits: the webhook deliverer
    /// looks at the outbox then. Set before start.
    var onCommitted: (@Sendable () -> Void)? {
        get { committedHook.withLock { $0 } }
        set { committedHook.withLock { $0 = newValue } }
    }
    /// Where moderators' actions are recorded (set before the server listens).
    var audit: AuditLog?
    /// Browsers' media (set before the server listens; nil: no WebRTC gateway).
    var webrtc: WebRTCGateway? {
        didSet { let on = webrtc != nil; queue.sync { core.webrtcAvailable = on } }
    }
    /// Applies a moderator's ban for good (or its lifting): stored, in the rules, every node told
    /// (the same as the REST endpoint). Set before the server listens; called off this queue.
    var setBan: (@Sendable (String, String, Bool) -> Void)?

    init(store: CallStore, signer: CallTokenSigner, appID: String, relay: MediaRelay, log: ServerLog, limits: RoomLimits = RoomLimits(),
         outbox: WebhookOutbox = .none, publicURL: String? = nil, mediaPublicAddress: (host: String, port: Int?)? = nil,
         revocations: TokenRevocations = TokenRevocations(),
         roomRules: RoomRulesDirectory = RoomRulesDirectory(defaultModeration: .firstJoiner),
         scheduler: any Scheduler = DispatchScheduler.shared) {
        self.store = store
        self.relay = relay
        self.log = log
        let core = RoomCore(signer: signer, appID: appID, limits: limits, mediaPort: relay.port, publicURL: publicURL,
                            mediaHost: mediaPublicAddress?.host, mediaPublicPort: mediaPublicAddress?.port, revocations: revocations,
                            roomRules: roomRules, outbox: outbox)
        let committed = Locked<(@Sendable () -> Void)?>(nil)
        runner = CoreRunner(label: "callroom.rooms", core: core, store: store, scheduler: scheduler, stored: { .stored($0) },
                            committed: { committed.withLock { $0 }?() })
        committedHook = committed
        runner.setPerform { [unowned self] effect in self.perform(effect) }
    }

    private let committedHook: Locked<(@Sendable () -> Void)?>

    func attach(outbox: any SignalOutbox) {
        outboxRef = outbox
        relay.onDominantSpeaker = { [weak self] room, key in
            self?.runner.async(.dominantSpeaker(room: room, key: key))
        }
    }

    /// Starts the store heartbeat that bounds how much end time a crash can lose (on the scheduler).
    func startHeartbeat(every seconds: Double = 5) { runner.startHeartbeat(every: seconds) { .heartbeat } }

    func stopHeartbeat() { runner.stopHeartbeat() }

    var roomCount: Int { runner.read { $0.rooms.count } }
    var participantCount: Int { runner.read { $0.participantCount } }
    /// The rooms this node holds (their session ids), and its participants, in one look.
    var load: (rooms: [String], participants: Int) { runner.read { (Array($0.rooms.keys), $0.participantCount) } }

    // MARK: Entry points (any thread)

    /// A room-family message from the router (rate-limited there already).
    func received(_ message: ClientMessage, from connection: ConnectionID) { runner.async(.message(message, from: connection)) }

    func connectionClosed(_ connection: ConnectionID) {
        webrtc?.remove(connection)
        runner.async(.connectionClosed(connection))
    }

    /// `uid`'s tokens were revoked: they leave every room now (any thread).
    func revoke(_ r: Revocation) { runner.async(.revoked(r)) }
    /// Recordings a crash cut start again as their sessions come back (`RoomInput.resumeRecordings`).
    func resumeRecordings(in sessions: [String]) { runner.async(.resumeRecordings(sessions)) }

    /// A room's rules changed (here or on another node): any thread.
    func rulesChanged(session: String, liftedBan: String?) { runner.async(.rulesChanged(session: session, liftedBan: liftedBan)) }

    /// Ends every call (server shutdown) and returns once every leave is on disk and its
    /// `left` handed to the outbox.
    func closeAll(reason: LeaveReason) {
        runner.sync(.shutdown(reason))
        settle()
    }

    /// Blocks until the store writer is idle and every receipt it produced has been handled
    /// (tests use it after each input; shutdown uses it once).
    func settle() { runner.settle() }

    // MARK: The effects (on the queue)

    /// Starts a server member for a room (on the queue; it must only hand off).
    private var memberLauncher: (@Sendable (MemberLaunch) -> Void)?

    /// A member could not start (any thread); `code` when the failure has its own (a language
    /// with no model).
    func memberFailed(_ launch: MemberLaunch, code: SignalErrorCode? = nil, reason: String) {
        runner.async(.memberFailed(session: launch.session, feature: launch.feature, id: launch.id, code: code, reason: reason))
    }

    /// Sets how members start and which features they offer (the server, once it listens).
    func setMemberLauncher(offering features: Set<SessionFeature>, _ launch: @escaping @Sendable (MemberLaunch) -> Void) {
        queue.sync {
            memberLauncher = launch
            core.offeredFeatures = features
        }
    }

    private func perform(_ effect: RoomEffect) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch effect {
        case .send(let m, let c):
            webrtc?.observe(m, to: c)
            outboxRef?.send(m, to: c)
        case .webrtcOffer(let request):
            let reply = webrtc?.answer(request) ?? .error(code: .webrtcOfferRefused, message: "This server has no WebRTC gateway.")
            outboxRef?.send(reply, to: request.connection)
        case .close(let c): outboxRef?.close(c)
        case .persist(let request): runner.submit(request)
        case .relay(let patch): relay.apply(patch)
        case .schedule(let timer, let seconds): runner.schedule(timer, after: seconds) { .timerFired($0) }
        case .cancel(let timer): runner.cancel(timer)
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

extension RoomCore: RunnableCore {
    var hasPendingWrites: Bool { !pendingWrites.isEmpty }
}
