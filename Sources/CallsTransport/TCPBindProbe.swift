import CSocketBatch
import Foundation
import Glibc

/// Whether a TCP address can be bound, asked before libwebsockets binds it: its only word for a
/// port in use is "Failed to create default vhost"; this finds the system's
/// (`Address already in use`). Any thread.
enum TCPBindProbe {
    /// Why `host:port` cannot be bound (as libwebsockets binds it, `SO_REUSEADDR`), or nil when
    /// it can — or when `host` is not an IPv4 address this can try.
    static func failure(host: String, port: Int) -> String? {
        guard var address = SocketAddress(host: host.isEmpty ? "0.0.0.0" : host, port: port)?.sockaddr else { return nil }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0 ? nil : String(cString: strerror(errno))
    }
}
