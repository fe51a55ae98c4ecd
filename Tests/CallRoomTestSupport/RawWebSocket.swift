import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client written on a bare TCP socket, for attacks a real client would not make:
/// it completes the upgrade, sends text frames, and reads only when asked — so a test can
/// play a peer that never reads what the server sends it.
public final class RawWebSocket {
    public let fd: Int32


    /// Connects to `127.0.0.1:port` from `source` (another loopback address: another peer as the
    /// server sees it) with a small receive buffer (set before connecting, so the window the
    /// server sees stays small) and upgrades on `path` with `subprotocol`, sending `headers` too.
    public init(port: Int, path: String = "/v1/signal", subprotocol: String, receiveBuffer: Int32 = 4096,
                from source: String = "127.0.0.1", headers: [(String, String)] = []) throws {
        fd = RawHTTP.connect(port: port, from: source, receiveBuffer: receiveBuffer)
        guard fd >= 0 else { throw TestFailure("connect from \(source): \(errno)") }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: \(subprotocol)\r\n"
            + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
        try write(Array(request.utf8))
        // The 101 and its headers, byte by byte: nothing after them is consumed.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(fd, &byte, 1, 0) == 1, head.count < 8192 else { close(fd); throw TestFailure("no upgrade: \(String(decoding: head, as: UTF8.self))") }
            head.append(byte)
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            close(fd)
            throw TestFailure("refused: \(String(decoding: head, as: UTF8.self))")
        }
    }

    deinit { close(fd) }

    /// Sends one masked text frame.
    public func send(text: String) throws { try send(frame: Array(text.utf8)) }

    /// Sends one masked frame: `opcode` 1 text, 0 a continuation, 2 binary; `fin` false leaves
    /// the message open for continuations.
    public func send(frame payload: [UInt8], opcode: UInt8 = 1, fin: Bool = true) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for i in (0..<8).reversed() { frame.append(UInt8((payload.count >> (8 * i)) & 0xFF)) }
        }
        let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try write(frame)
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send: \(errno)") }
            sent += n
        }
    }

    /// The text messages read by `closeStatus` before the close frame.
    public private(set) var texts: [String] = []

    /// The status of the close frame the server sends within `timeout` (text frames before it
    /// are kept in `texts`, others skipped); nil when none came — the connection stayed open or
    /// ended without one.
    public func closeStatus(within timeout: TimeInterval) -> UInt16? {
        let deadline = Date().addingTimeInterval(timeout)
        func read(_ count: Int) -> [UInt8]? {
            var out: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: count)
            while out.count < count {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
                guard poll(&p, 1, left) == 1 else { return nil }
                let n = recv(fd, &buf, count - out.count, 0)
                guard n > 0 else { return nil }
                out += buf[0..<n]
            }
            return out
        }
        while let head = read(2) {
            var length = Int(head[1] & 0x7F)
            if length >= 126, let ext = read(length == 126 ? 2 : 8) { length = ext.reduce(0) { $0 << 8 | Int($1) } }
            guard let payload = read(length) else { return nil }
            if head[0] & 0x0F == 8 { return payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : 1005 }
            if head[0] & 0x0F == 1 { texts.append(String(decoding: payload, as: UTF8.self)) }
        }
        return nil
    }

    /// Whether the server has closed the connection (reset it, or sent FIN after whatever is
    /// buffered): drains what is readable without waiting.
    public var serverClosed: Bool {
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
            if n == 0 { return true }
            if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        }
    }
}
