import Foundation
import Synchronization

/// The thread an outbox sender (webhooks, push) runs on: its body loops while `isRunning`,
/// calling `idle()` when nothing is due (it returns at a `poke`, or after 100 ms).
///
/// Thread rules: `start`/`stop` from the owner; `poke` and `isRunning` from any thread; the
/// body runs on the thread alone.
final class OutboxThread: Sendable {
    let name: String
    private let running = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    init(name: String) { self.name = name }

    var isRunning: Bool { running.load(ordering: .acquiring) }

    /// Starts `body` on a new thread (once; later calls do nothing).
    func start(_ body: @escaping @Sendable () -> Void) {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let t = Thread { [self] in
            body()
            stopped.signal()
        }
        t.name = name
        t.start()
    }

    /// Waits for a poke, or 100 ms.
    func idle() { _ = wake.wait(timeout: .now() + 0.1) }

    /// Looks at the outbox now (new rows were committed).
    func poke() { wake.signal() }

    /// Stops after the body's current step and waits for it.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        stopped.wait()
    }
}
