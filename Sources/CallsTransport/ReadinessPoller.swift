import CSocketBatch
#if canImport(Glibc)
import Glibc
#endif

/// Waits for any of many descriptors to become readable (`epoll`), reporting the tag each was
/// registered with. Owns its epoll descriptor (closed on deinit).
/// Thread rules: `wait` from one thread (it fills the tag buffer); `add` and `remove` from any
/// thread (`epoll_ctl` beside a running `epoll_wait` is safe).
public final class ReadinessPoller: @unchecked Sendable {
    private let ep: Int32
    private let tags: UnsafeMutablePointer<UInt64>
    private let capacity = 256

    /// Nil when the kernel refuses an epoll instance (out of descriptors).
    public init?() {
        ep = callroom_epoll_create()
        guard ep >= 0 else { return nil }
        tags = .allocate(capacity: capacity)
    }

    deinit {
        tags.deallocate()
        close(ep)
    }

    /// Watches `fd` for input; `tag` comes back from `wait` when it is readable.
    @discardableResult
    public func add(_ fd: Int32, tag: UInt64) -> Bool { callroom_epoll_add(ep, fd, tag) == 0 }

    /// Stops watching `fd` (before closing it).
    @discardableResult
    public func remove(_ fd: Int32) -> Bool { callroom_epoll_del(ep, fd) == 0 }

    /// Waits up to `timeoutMs` and calls `body` with the tag of each readable descriptor.
    public func wait(timeoutMs: Int32, _ body: (UInt64) -> Void) {
        let n = Int(callroom_epoll_wait(ep, tags, Int32(capacity), timeoutMs))
        for i in 0..<n { body(tags[i]) }
    }
}
