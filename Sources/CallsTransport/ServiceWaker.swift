import CWebSockets
import Synchronization

/// A libwebsockets context as other threads see it: they may only wake its service thread
/// (`wake()`, i.e. `lws_cancel_service`), and only while the context lives. The service thread
/// `retire()`s it before `lws_context_destroy`, so a wake that races the teardown finds nothing
/// instead of freed memory.
///
/// Thread rules: `publish` and `retire` from the thread that owns the context (the service
/// thread, or the one creating it before the service thread starts); `wake` from any thread.
final class ServiceWaker: Sendable {
    private struct Handle: @unchecked Sendable { var context: OpaquePointer? }
    private let handle = Mutex(Handle(context: nil))

    /// Makes `context` wakeable.
    func publish(_ context: OpaquePointer) { handle.withLock { $0.context = context } }

    /// Wakes the service thread if the context still lives. Any thread.
    func wake() { handle.withLock { h in if let c = h.context { lws_cancel_service(c) } } }

    /// Ends wakes; after it returns no other thread is inside `lws_cancel_service` on the context.
    func retire() { handle.withLock { $0.context = nil } }
}
