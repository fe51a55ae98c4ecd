import Foundation

/// Reads a file descriptor — standard input, a child's pipe — on a thread of its own with
/// blocking `read`s, and hands each chunk to `deliver` on that thread; then nil, once, at its end
/// (or on an error), and the thread ends. `owner` (the `FileHandle` the descriptor belongs to,
/// if any) is kept alive until then, so the descriptor is not closed under the read.
///
/// Instead of a dispatch read source or `readabilityHandler`: tearing one of those down at a
/// pipe's end can crash libdispatch's epoll manager thread on Linux (a freed muxnote,
/// swift-corelibs-libdispatch#949) — a headless client hit it as a SIGSEGV in
/// `_dispatch_event_loop_drain` when its input closed.
public enum DescriptorReader {
    public static func start(_ fd: Int32, name: String, keeping owner: FileHandle? = nil,
                             _ deliver: @escaping @Sendable ([UInt8]?) -> Void) {
        let t = Thread {
            ThreadName.set(name)
            var buf = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &buf, buf.count)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { break }
                deliver(Array(buf[0..<n]))
            }
            deliver(nil)
            withExtendedLifetime(owner) {}
        }
        t.name = name
        t.stackSize = 256 << 10
        t.start()
    }

    /// What `startLines` hands on: a whole line (without its newline), or the end — with
    /// whatever followed the last newline, which callers may keep or ignore.
    public enum LineEvent: Sendable {
        case line(String)
        case end(tail: String)
    }

    /// `start`, split into lines on the reading thread (UTF-8, `\n`-terminated).
    public static func startLines(_ fd: Int32, name: String, keeping owner: FileHandle? = nil,
                                  _ deliver: @escaping @Sendable (LineEvent) -> Void) {
        nonisolated(unsafe) var pending: [UInt8] = []  // touched only by the reading thread
        start(fd, name: name, keeping: owner) { chunk in
            guard let chunk else { return deliver(.end(tail: String(decoding: pending, as: UTF8.self))) }
            pending.append(contentsOf: chunk)
            while let nl = pending.firstIndex(of: 0x0A) {
                deliver(.line(String(decoding: pending[..<nl], as: UTF8.self)))
                pending.removeSubrange(...nl)
            }
        }
    }
}
