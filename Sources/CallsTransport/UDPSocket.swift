import CSocketBatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 socket address, hashable so the relay can key tables by it. A value; any thread.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// Address in network byte order, as in `sockaddr_in.sin_addr.s_addr`.
    public var ip: UInt32
    /// Port in host byte order.
    public var port: UInt16

    public init(ip: UInt32, port: UInt16) { self.ip = ip; self.port = port }

    /// Parses a dotted IPv4 address (`localhost` means 127.0.0.1).
    public init?(host: String, port: Int) {
        let h = host == "localhost" ? "127.0.0.1" : host
        var a = in_addr()
        guard inet_pton(AF_INET, h, &a) == 1, (0...65535).contains(port) else { return nil }
        self.ip = a.s_addr
        self.port = UInt16(port)
    }

    package init(_ sin: sockaddr_in) {
        ip = sin.sin_addr.s_addr
        port = UInt16(bigEndian: sin.sin_port)
    }

    package var sockaddr: sockaddr_in {
        var s = sockaddr_in()
        s.sin_family = sa_family_t(AF_INET)
        s.sin_port = port.bigEndian
        s.sin_addr.s_addr = ip
        return s
    }

    public var description: String {
        let b = withUnsafeBytes(of: ip) { Array($0) }
        return "\(b[0]).\(b[1]).\(b[2]).\(b[3]):\(port)"
    }
}

/// Errors from UDP sockets.
public enum UDPSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    case badAddress(String)
    case system(call: String, errno: Int32)

    /// As people read it: `bind: Address already in use`.
    public var description: String {
        switch self {
        case .badAddress(let a): return "'\(a)' is not an IPv4 address"
        case .system(let call, let errno): return "\(call): \(String(cString: strerror(errno)))"
        }
    }
}

/// A non-blocking IPv4 UDP socket that owns its file descriptor (closed on deinit or `close()`).
///
/// Thread rules: one thread receives; `send` may be called from any thread (sendto is atomic
/// per datagram).
public final class UDPSocket: @unchecked Sendable {
    public let fd: Int32
    public private(set) var localAddress: SocketAddress
    private var closed = false

    /// Binds to `host:port` (port 0 picks a free one). With `reusePort`, several sockets of this
    /// process may bind the same port (`SO_REUSEPORT`) and the kernel spreads senders across
    /// them by address hash, each sender always to the same socket.
    public init(host: String, port: Int, receiveBufferBytes: Int = 4 << 20, reusePort: Bool = false) throws(UDPSocketError) {
        guard let addr = SocketAddress(host: host, port: port) else { throw .badAddress("\(host):\(port)") }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", errno: errno) }
        var size = Int32(receiveBufferBytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        if reusePort {
            var on: Int32 = 1
            guard setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                let e = errno
                Glibc.close(fd)
                throw .system(call: "setsockopt(SO_REUSEPORT)", errno: e)
            }
        }
        var sin = addr.sockaddr
        let rc = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .system(call: "bind", errno: e)
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        self.fd = fd
        self.localAddress = SocketAddress(bound)
    }

    deinit { close() }

    /// Asks the kernel to stamp every datagram with its arrival time (`SO_TIMESTAMPNS`), which
    /// `UDPBatchReceiver(timestamps: true)` reads. Returns false if the kernel refused.
    @discardableResult
    public func enableReceiveTimestamps() -> Bool { callroom_enable_receive_timestamps(fd) == 0 }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Sends one datagram. Returns false when the kernel refused it (buffer full, unreachable).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) -> Bool {
        var sin = address.sockaddr
        let n = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return n == bytes.count
    }

    @discardableResult
    public func send(_ bytes: [UInt8], to address: SocketAddress) -> Bool {
        bytes.withUnsafeBytes { send($0, to: address) }
    }

    /// Waits up to `timeoutMs` for the socket to become readable. Returns false on timeout.
    public func waitReadable(timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, timeoutMs) > 0
    }

    /// Waits up to `timeoutMs` for one datagram and returns a copy of it (control paths: binds,
    /// handshakes; it allocates). Nil on timeout.
    public func receiveCopy(timeoutMs: Int32) -> [UInt8]? {
        guard waitReadable(timeoutMs: timeoutMs) else { return nil }
        var buf = [UInt8](repeating: 0, count: 2048)
        guard let r = buf.withUnsafeMutableBytes({ receive(into: $0) }) else { return nil }
        return Array(buf.prefix(r.count))
    }

    /// Receives one datagram into `buffer` without blocking. Nil when none is waiting.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: SocketAddress)? {
        var sin = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = withUnsafeMutablePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &len)
            }
        }
        guard n >= 0 else { return nil }
        return (n, SocketAddress(sin))
    }
}

extension SocketAddress {
    /// Resolves a host name or dotted address to its first IPv4 address (blocking DNS).
    public static func resolve(host: String, port: Int) -> SocketAddress? {
        if let a = SocketAddress(host: host, port: port) { return a }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &res) == 0, let first = res else { return nil }
        defer { freeaddrinfo(res) }
        guard let sa = first.pointee.ai_addr else { return nil }
        let sin = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
        return SocketAddress(ip: sin.sin_addr.s_addr, port: UInt16(port))
    }
}
