#if canImport(Glibc)
import Glibc
#endif

/// Sends UDP datagrams with a forged IPv4 source address and port (a raw socket with
/// `IP_HDRINCL`), to reproduce spoofing attacks on loopback. Needs root (CAP_NET_RAW); tests
/// check `isAvailable` and say so when it is not.
public enum SpoofedUDP {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether this process may open raw sockets.
    public static var isAvailable: Bool {
        let fd = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_RAW))
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// Sends `payload` to `toPort` on 127.0.0.1 as if from `fromIP:fromPort` (dotted quad).
    public static func send(_ payload: [UInt8], fromIP: String = "127.0.0.1", fromPort: UInt16, toPort: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_RAW))
        guard fd >= 0 else { throw Failure(description: "raw socket: errno \(errno) (needs root)") }
        defer { close(fd) }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_IP), IP_HDRINCL, &on, socklen_t(MemoryLayout<Int32>.size))
        var src = in_addr(), dst = in_addr()
        guard inet_pton(AF_INET, fromIP, &src) == 1, inet_pton(AF_INET, "127.0.0.1", &dst) == 1 else {
            throw Failure(description: "bad address \(fromIP)")
        }
        let total = 20 + 8 + payload.count
        var p = [UInt8](repeating: 0, count: total)
        p[0] = 0x45  // IPv4, 5-word header
        p[2] = UInt8(total >> 8); p[3] = UInt8(total & 0xFF)
        p[8] = 64  // TTL
        p[9] = UInt8(IPPROTO_UDP)
        withUnsafeBytes(of: src.s_addr) { for i in 0..<4 { p[12 + i] = $0[i] } }  // already network order
        withUnsafeBytes(of: dst.s_addr) { for i in 0..<4 { p[16 + i] = $0[i] } }
        // The kernel fills in the IP checksum (and the id); a zero UDP checksum means "none" on IPv4.
        p[20] = UInt8(fromPort >> 8); p[21] = UInt8(fromPort & 0xFF)
        p[22] = UInt8(toPort >> 8); p[23] = UInt8(toPort & 0xFF)
        let udpLength = 8 + payload.count
        p[24] = UInt8(udpLength >> 8); p[25] = UInt8(udpLength & 0xFF)
        for (i, b) in payload.enumerated() { p[28 + i] = b }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_addr = dst
        let sent = p.withUnsafeBytes { bytes in
            withUnsafePointer(to: &to) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == total else { throw Failure(description: "sendto: errno \(errno)") }
    }
}
