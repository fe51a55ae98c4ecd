import CallsCore
import Dispatch

/// The timers a runner keeps for its core, by key: scheduling a key that is pending replaces
/// it, and only a key's current scheduling fires (a replaced one may already be queued).
///
/// Thread rules: confined to the runner's queue (`queue`), where the timers fire too.
final class TimerTable<Key: Hashable & Sendable>: @unchecked Sendable {
    private final class Token: Sendable {}
    private var timers: [Key: (token: Token, work: ScheduledWork)] = [:]
    private let scheduler: any Scheduler
    private let queue: DispatchQueue

    init(scheduler: any Scheduler, queue: DispatchQueue) {
        self.scheduler = scheduler
        self.queue = queue
    }

    func schedule(_ key: Key, after seconds: Double, fire: @escaping @Sendable (Key) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        timers[key]?.work.cancel()
        let token = Token()
        let work = scheduler.schedule(after: seconds, on: queue) { [weak self] in
            guard let self, self.timers[key]?.token === token else { return }
            self.timers[key] = nil
            fire(key)
        }
        timers[key] = (token, work)
    }

    func cancel(_ key: Key) {
        dispatchPrecondition(condition: .onQueue(queue))
        timers.removeValue(forKey: key)?.work.cancel()
    }
}
