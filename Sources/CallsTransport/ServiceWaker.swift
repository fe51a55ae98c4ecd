import CWebSockets
import Foundation

/// A libwebsockets context as other threads see it: they may only wake its service thread
/// (`wake()`, i.e. `lws_cancel_service`), and only while the context lives. The service thread
/// `retire()`s it before `lws_context_destroy`, so a wake that races the teardown finds nothing
/// instead of freed memory.
///
/// Thread rules: `publish` and `retire` from the thread that owns the context (the service
/// thread, or the one creating it before the service thread starts); `wake` from any thread.
/// `context` is only touched under `lock` — an `NSLock` (pthread), which ThreadSanitizer sees;
/// it does not see `Synchronization.Mutex` (see docs/architecture.md, "Thread rules").
final class ServiceWaker: @unchecked Sendable {
    private let lock = NSLock()
    private var context: OpaquePointer?

    /// Makes `context` wakeable.
    func publish(_ context: OpaquePointer) { lock.withLock { self.context = context } }

    /// Wakes the service thread if the context still lives. Any thread.
    func wake() { lock.withLock { if let c = context { lws_cancel_service(c) } } }

    /// Ends wakes; after it returns no other thread is inside `lws_cancel_service` on the context.
    func retire() { lock.withLock { context = nil } }
}
