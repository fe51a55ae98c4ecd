import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on loopback that records every byte in both directions: what someone on the
/// path between a client and the server would see. Point the client at `port`.
public final class TCPRecorder: @unchecked Sendable {
    public let port: Int
    private let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var captured: [UInt8] = []
    private var running = true
    private var paused = false

    /// While paused nothing is forwarded either way (a stalled server: connections open, silent).
    public func pause(_ on: Bool) { lock.withLock { paused = on } }

    public init(forwardingTo targetPort: Int) throws {
        target = targetPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        guard bound == 0, listen(listener, 16) == 0 else { throw NSError(domain: "TCPRecorder", code: Int(errno)) }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Every byte relayed so far, both directions.
    public var bytes: [UInt8] { lock.withLock { captured } }

    /// Whether `text` crossed the relay in the clear.
    public func saw(_ text: String) -> Bool {
        let needle = Array(text.utf8), hay = bytes
        guard !needle.isEmpty, hay.count >= needle.count else { return false }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return true }
        return false
    }

    public func stop() {
        lock.withLock { running = false }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while lock.withLock({ running }) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(target).bigEndian
            let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard ok == 0 else { close(client); close(upstream); continue }
            Thread.detachNewThread { [self] in pump(client, upstream) }
        }
    }

    private func pump(_ a: Int32, _ b: Int32) {
        defer { close(a); close(b) }
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buf = [UInt8](repeating: 0, count: 65_536)
        while lock.withLock({ running }) {
            if lock.withLock({ paused }) {
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            guard poll(&fds, 2, 200) >= 0 else { return }
            for (i, f) in fds.enumerated() where f.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let n = read(f.fd, &buf, buf.count)
                if n <= 0 { return }
                lock.withLock { captured.append(contentsOf: buf[0..<n]) }
                let to = i == 0 ? b : a
                var off = 0
                while off < n {
                    let w = buf.withUnsafeBytes { write(to, $0.baseAddress! + off, n - off) }
                    if w <= 0 { return }
                    off += w
                }
            }
        }
    }
}
