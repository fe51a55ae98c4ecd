import CallRoomTestSupport
import CallsCore
import CallsTransport
import Foundation
import XCTest

/// The client's bounds against a server (here a hostile one, in Python): one that streams one
/// message's fragments for ever (the client kept the connection, dropping what came, until a
/// final fragment that never comes), and one that stops reading (the client queued what it sent
/// without bound). Each now ends the connection and says why.
final class WebSocketClientLimitTests: XCTestCase {
    final class Ending: WebSocketClientDelegate, @unchecked Sendable {
        let lock = NSLock()
        var error: WebSocketClientError?
        var closed = false
        func webSocketDidOpen(_ client: WebSocketClient) {}
        func webSocket(_ client: WebSocketClient, didReceive message: [UInt8], binary: Bool) {}
        func webSocket(_ client: WebSocketClient, didCloseWith error: WebSocketClientError?) {
            lock.lock(); self.error = error; closed = true; lock.unlock()
        }
        var ended: (Bool, WebSocketClientError?) { lock.lock(); defer { lock.unlock() }; return (closed, error) }
    }

    /// Python that listens on a free port (printing `port N`), accepts one connection and
    /// completes its WebSocket upgrade: `c` is the connection. The servers below go on from it.
    static let acceptOne = #"""
    import base64, hashlib, socket, time
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
    print("port", s.getsockname()[1], flush=True)
    c, _ = s.accept()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = b""
    while b"\r\n\r\n" not in head: head += c.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()).decode()
    c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: callroom-signal\r\n\r\n" % accept).encode())

    """#

    /// Sends an unfinished text message, 16 KiB at a time, until the peer goes (printing
    /// `gone after N` last).
    static let endlessServer = acceptOne + #"""
    piece = b"a" * 16384
    frame = lambda op: bytes([op, 126]) + len(piece).to_bytes(2, "big") + piece
    sent = 0
    try:
        c.sendall(frame(1)); sent += 1
        while sent < 100000: c.sendall(frame(0)); sent += 1
    except OSError:
        pass
    print("gone after", sent, flush=True)
    """#

    /// Reads nothing.
    static let deafServer = acceptOne + #"""
    time.sleep(60)
    """#

    /// A server that reads (and drops) every message.
    final class Sink: WebServerDelegate, @unchecked Sendable {
        func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
            respond(HTTPResponse(status: 404, body: []))
        }
        func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {}
        func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {}
        func webServer(_ server: WebServer, didClose connection: UInt64) {}
    }

    /// 60,000 bytes every 5 ms (12 MB/s) for 3 s, or until the connection ends.
    func offer(_ client: WebSocketClient, until ending: Ending) {
        let message = [UInt8](repeating: 0x61, count: 60_000)
        paced(every: 0.005, for: 3) { _ in
            client.send(message, binary: true)
            return !ending.ended.0
        }
    }

    func testAServerThatStopsReadingEndsTheConnectionOnceTooMuchWaits() throws {
        let server = try ManagedProcess("/usr/bin/python3", ["-c", Self.deafServer])
        defer { server.signal(SIGKILL) }
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("port ") }, server.errorOutput)
        let port = try XCTUnwrap(Int(line.dropFirst(5)))
        let ending = Ending()
        let client = WebSocketClient(url: try XCTUnwrap(URL(string: "ws://127.0.0.1:\(port)/v1/signal")), maxQueuedBytes: 1 << 20, delegate: ending)
        try client.connect()
        defer { client.disconnect() }
        offer(client, until: ending)
        XCTAssertTrue(eventually(2) { ending.ended.0 }, "the client queued for ever")
        XCTAssertEqual(ending.ended.1, .peerNotReading)

        // The same stream to a server that reads is not cut.
        let sink = Sink()
        let web = WebServer(host: "127.0.0.1", delegate: sink)
        let webPort = try web.start(port: 0)
        defer { web.stop() }
        let reading = Ending()
        let fine = WebSocketClient(url: try XCTUnwrap(URL(string: "ws://127.0.0.1:\(webPort)/v1/signal")), maxQueuedBytes: 1 << 20, delegate: reading)
        try fine.connect()
        defer { fine.disconnect() }
        offer(fine, until: reading)
        XCTAssertFalse(reading.ended.0, "a server that reads kept up: \(String(describing: reading.ended.1))")
    }

    func testAMessageThatNeverEndsEndsTheConnectionOnceItPassesTheLimit() throws {
        let server = try ManagedProcess("/usr/bin/python3", ["-c", Self.endlessServer])
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("port ") }, server.errorOutput)
        let port = try XCTUnwrap(Int(line.dropFirst(5)))
        let ending = Ending()
        let client = WebSocketClient(url: try XCTUnwrap(URL(string: "ws://127.0.0.1:\(port)/v1/signal")), maxMessageBytes: 65_536, delegate: ending)
        try client.connect()
        defer { client.disconnect() }
        XCTAssertTrue(eventually(5) { ending.ended.0 }, "still open: \(server.output)")
        XCTAssertEqual(ending.ended.1, .messageTooBig)
        let gone = try XCTUnwrap(server.waitForLine(timeout: 5) { $0.hasPrefix("gone after ") }, "the server still sends")
        XCTAssertLessThan(Int(gone.dropFirst(11)) ?? .max, 100_000, "the connection was cut, not the message finished")
    }
}
