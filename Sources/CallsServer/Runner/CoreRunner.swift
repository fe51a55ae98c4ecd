import CallsCore
import CallsStore
import Foundation

/// A pure core a `CoreRunner` drives: `handle(input, now) -> [effect]`, nothing else.
protocol RunnableCore: AnyObject, SendableMetatype {
    associatedtype Input: Sendable
    associatedtype Effect
    func handle(_ input: Input, now: Int64) -> [Effect]
    /// Writes handed to the store writer whose receipt the core still waits for.
    var hasPendingWrites: Bool { get }
}

/// The runner both cores share (`RoomCore` for rooms, `RingCore` for ringing): it owns the serial
/// queue the core is confined to, the clock (`Scheduler`: real, or virtual in tests), the
/// core's timers by key, and its store writer, whose receipts come back as inputs. The owner
/// (`RoomRegistry`, `CallRegistry`) says what each effect does (`perform`) and adds its own
/// entry points; everything else about running a core is here, once.
///
/// ```
///  entry points (any thread) ─▶ queue: core.handle(input, now) ─▶ effects ─▶ perform (the owner's)
///  timers, heartbeat (Scheduler) ─▶ queue                                   ├─▶ submit ─▶ StoreWriter
///  store writer ─▶ receipts ─▶ stored(receipt) ─▶ queue ◀────────────────────┘
/// ```
/// Thread rules: `async`/`sync` and `settle` from any thread but the queue; `run`, `schedule`,
/// `cancel` and `submit` on the queue only (`dispatchPrecondition`). `perform` is set once,
/// before the first input.
final class CoreRunner<Core: RunnableCore, TimerKey: Hashable & Sendable>: @unchecked Sendable {
    let queue: DispatchQueue
    let core: Core
    let scheduler: any Scheduler
    private let timers: TimerTable<TimerKey>
    private var writer: StoreWriter!
    /// What each effect does (the owner's); set once before the first input.
    private var perform: ((Core.Effect) -> Void)?
    /// The repeating heartbeat (nil: not started, or stopped).
    private let heartbeat = Locked<RepeatingWork?>(nil)

    init(label: String, core: Core, store: CallStore, scheduler: any Scheduler, stored: @escaping @Sendable (StoreReceipt) -> Core.Input,
         committed: (@Sendable () -> Void)? = nil) {
        queue = DispatchQueue(label: label)
        self.core = core
        self.scheduler = scheduler
        timers = TimerTable(scheduler: scheduler, queue: queue)
        writer = StoreWriter(store: store) { [weak self] receipts in
            guard let self else { return }
            committed?()
            self.queue.async { for r in receipts { self.run(stored(r)) } }
        }
    }

    /// Sets what each effect does (once, before the first input).
    func setPerform(_ p: @escaping (Core.Effect) -> Void) { perform = p }

    // MARK: Any thread

    /// Feeds `input` on the queue, later.
    func async(_ input: Core.Input) { queue.async { self.run(input) } }

    /// Feeds `input` on the queue and waits for its effects to be done.
    func sync(_ input: Core.Input) { queue.sync { run(input) } }

    /// Reads the core on its queue.
    func read<T>(_ body: (Core) -> T) -> T { queue.sync { body(core) } }

    /// Blocks until the store writer is idle and every receipt it produced has been handled.
    func settle() { writer.settle(runner: queue) { core.hasPendingWrites } }

    /// Feeds `input` every `seconds` on the scheduler (the store heartbeat), until
    /// `stopHeartbeat`. The first beat is `seconds` after this call.
    func startHeartbeat(every seconds: Double, _ input: @escaping @Sendable () -> Core.Input) {
        let beat = RepeatingWork(on: scheduler, queue: queue, first: seconds, every: seconds) { [weak self] in self?.run(input()) }
        heartbeat.withLock { $0?.cancel(); $0 = beat }
    }

    func stopHeartbeat() { heartbeat.withLock { $0?.cancel(); $0 = nil } }

    // MARK: On the queue

    func run(_ input: Core.Input) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let perform else { return }
        for effect in core.handle(input, now: scheduler.nowMilliseconds()) { perform(effect) }
    }

    /// A timer for `key` (replacing one pending): `fired(key)` is fed when it runs out.
    func schedule(_ key: TimerKey, after seconds: Double, _ fired: @escaping @Sendable (TimerKey) -> Core.Input) {
        timers.schedule(key, after: seconds) { [weak self] k in self?.run(fired(k)) }
    }

    func cancel(_ key: TimerKey) { timers.cancel(key) }

    /// A durable write: its receipt comes back as `stored(receipt)`.
    func submit(_ request: StoreRequest) { writer.submit(request) }
}
