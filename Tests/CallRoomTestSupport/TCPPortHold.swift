import Foundation

/// A loopback TCP port held without listening: connections to it are refused (as to a port
/// nobody uses), and no other process is given it meanwhile — unlike a port found free and let
/// go, which the next ephemeral bind can take. Bound with `SO_REUSEADDR`, so a server that binds
/// it the same way (Python's `http.server` does) may start on it before the hold is let go.
public final class TCPPortHold {
    public let port: Int
    private var fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            Foundation.close(fd)
            throw TestFailure("bind: \(errno)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: a.sin_port))
    }

    /// Lets the port go.
    public func close() {
        guard fd >= 0 else { return }
        Foundation.close(fd)
        fd = -1
    }

    deinit { close() }
}
