import Foundation

/// Writes whole buffers to a file descriptor with `write(2)`, retrying short writes and EINTR,
/// and says whether everything went out. Where `FileHandle.write(_: Data)` traps (its `try!`)
/// when the reader is gone — `callroom … --headless | head -1`, a closed terminal, a full disk —
/// the caller gets `false` and decides (leave the call, drop a log line).
///
/// Thread rules: any thread; concurrent writers to one descriptor may interleave their buffers.
public enum DescriptorWriter {
    /// Writes `bytes` to `fd`; false on EPIPE, EIO, ENOSPC or any other error.
    @discardableResult
    public static func write(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let buffer = Array(bytes)
        var offset = 0
        return buffer.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return true }
            while offset < raw.count {
                let n = Foundation.write(fd, base + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }
    }

    /// Writes `text` as UTF-8.
    @discardableResult
    public static func write(_ fd: Int32, _ text: String) -> Bool { write(fd, text.utf8) }

    /// Whether the other end of `fd` is gone, asked without waiting (`poll(2)` for `events`
    /// reports POLLHUP, POLLERR or POLLNVAL): a terminal that hung up, a pipe whose reader closed.
    public static func isHungUp(_ fd: Int32, events: Int16) -> Bool {
        var p = pollfd(fd: fd, events: events, revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
    }
}
