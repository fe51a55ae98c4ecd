import Foundation

/// An IPv4 or IPv6 address, read from its text: a peer as the kernel or libwebsockets gives it,
/// or an entry of `X-Forwarded-For`. An IPv4 address written as IPv6 (`::ffff:192.0.2.7`) is
/// the IPv4 address, so one client is one address however its socket spelt it.
///
/// Thread rules: a value.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    public let bytes: [UInt8]

    /// `192.0.2.7`, `2001:db8::7` or `::ffff:192.0.2.7`; nil for anything else (a name, a port,
    /// brackets, a zone, surrounding spaces).
    public init?(_ text: String) {
        guard text.utf8.count <= 45, !text.isEmpty else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: v4.s_addr) { Array($0) })
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        self.init(ipv6: withUnsafeBytes(of: v6) { Array($0) })
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// 16 bytes of IPv6; an IPv4-mapped one (`::ffff:a.b.c.d`) is the IPv4 address.
    init(ipv6 b: [UInt8]) {
        let mapped = b[0..<10].allSatisfy { $0 == 0 } && b[10] == 0xff && b[11] == 0xff
        bytes = mapped ? Array(b[12..<16]) : b
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// The address's usual text (`inet_ntop`'s): IPv6 shortened and in lower case.
    public var description: String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if isIPv4 {
            var a = in_addr()
            withUnsafeMutableBytes(of: &a.s_addr) { $0.copyBytes(from: bytes) }
            _ = inet_ntop(AF_INET, &a, &buf, socklen_t(buf.count))
        } else {
            var a = in6_addr()
            withUnsafeMutableBytes(of: &a) { $0.copyBytes(from: bytes) }
            _ = inet_ntop(AF_INET6, &a, &buf, socklen_t(buf.count))
        }
        return String(cBuffer: buf)
    }

    /// The first `length` bits, the rest zero.
    func masked(to length: Int) -> IPAddress {
        IPAddress(bytes: bytes.enumerated().map { i, byte in
            let keep = max(0, min(8, length - i * 8))
            return keep == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xff << (8 - keep))
        })
    }

    /// What the per-address limits count a peer under: an IPv4 address itself; an IPv6 address
    /// by its /64, the block one subscriber is given (one host holds all of it: counted by the
    /// address, each of its 2⁶⁴ addresses would be a fresh allowance). Text that is no address
    /// is its own key.
    public static func limitKey(_ peer: String) -> String {
        guard let a = IPAddress(peer) else { return peer }
        return a.isIPv4 ? a.description : "\(a.masked(to: 64))/64"
    }
}

extension IPAddress {
    /// The addresses `host` resolves to for a TCP connection, in the resolver's order (blocking
    /// DNS: getaddrinfo); an address literal (brackets allowed) is itself, without a lookup.
    /// Throws the resolver's reason.
    public static func resolve(_ host: String) throws(ResolveError) -> [IPAddress] {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let literal = IPAddress(bare) { return [literal] }
        guard !bare.isEmpty, !bare.utf8.contains(0) else { throw ResolveError(host: host, reason: "not a host name") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(bare, nil, &hints, &res)
        guard rc == 0 else { throw ResolveError(host: host, reason: String(cString: gai_strerror(rc))) }
        defer { freeaddrinfo(res) }
        var found: [IPAddress] = []
        var next = res
        while let info = next {
            if let sa = info.pointee.ai_addr {
                switch Int32(sa.pointee.sa_family) {
                case AF_INET:
                    let sin = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in.self)
                    found.append(IPAddress(bytes: withUnsafeBytes(of: sin.sin_addr) { Array($0) }))
                case AF_INET6:
                    let sin6 = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in6.self)
                    found.append(IPAddress(ipv6: withUnsafeBytes(of: sin6.sin6_addr) { Array($0) }))
                default: break
                }
            }
            next = info.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        let unique = found.filter { seen.insert($0).inserted }
        guard !unique.isEmpty else { throw ResolveError(host: host, reason: "no address") }
        return unique
    }

    /// Why a name gave no address.
    public struct ResolveError: Error, Equatable, Sendable, CustomStringConvertible {
        public var host: String
        public var reason: String
        public var description: String { "cannot resolve \(host): \(reason)" }
    }
}
