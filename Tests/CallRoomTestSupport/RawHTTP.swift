import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Bytes written to a TCP port as they are and everything read back until the server closes or
/// `timeout` passes: for requests no HTTP client would send.
public enum RawHTTP {
    /// A TCP connection to `127.0.0.1:port` from `source` (another loopback address: another
    /// peer as the server sees it), with `receiveBuffer` bytes of receive buffer when given (set
    /// before connecting, so the window the server sees stays that small); -1 when it cannot
    /// connect. The caller closes it.
    public static func connect(port: Int, from source: String = "127.0.0.1", receiveBuffer: Int32? = nil) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, ok == 0 else { close(fd); return -1 }
        return fd
    }

    /// Whether the server has closed `fd` (end of stream or reset), waiting up to `timeout`.
    public static func closedByPeer(_ fd: Int32, timeout: TimeInterval = 1) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
    }

    /// The answer's bytes as text, and whether the server closed the connection.
    public static func exchange(port: Int, _ request: [UInt8], from source: String = "127.0.0.1", timeout: TimeInterval = 3) -> (text: String, closed: Bool) {
        let fd = connect(port: port, from: source)
        guard fd >= 0 else { return ("", false) }
        defer { close(fd) }
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        let deadline = Date() + timeout
        while Date() < deadline {
            let n = recv(fd, &buf, buf.count, 0)
            if n == 0 { return (String(decoding: out, as: UTF8.self), true) }
            if n > 0 { out += buf[0..<n] }
        }
        return (String(decoding: out, as: UTF8.self), false)
    }
}
