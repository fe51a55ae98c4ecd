import CallRoomTestSupport
import CallsCore
import CallsTransport
import Foundation
import Synchronization
import XCTest

/// Tearing a libwebsockets context down while other threads send to it: sends, closes and
/// stops race the service thread's `lws_context_destroy`, which must never be touched after.
/// (Before the waker, `send` could call `lws_cancel_service` on a destroyed context.)
final class TransportTeardownTests: XCTestCase {
    final class Echo: WebServerDelegate, @unchecked Sendable {
        weak var server: WebServer?
        func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
            respond(HTTPResponse(status: 404, body: []))
        }
        func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {}
        func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {
            server.send(message, binary: binary, to: connection)
        }
        func webServer(_ server: WebServer, didClose connection: UInt64) {}
    }

    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    final class Counter: WebSocketClientDelegate, @unchecked Sendable {
        let lock = NSLock()
        var opened = 0, closed = 0, received = 0
        func webSocketDidOpen(_ client: WebSocketClient) { lock.lock(); opened += 1; lock.unlock() }
        func webSocket(_ client: WebSocketClient, didReceive message: [UInt8], binary: Bool) { lock.lock(); received += 1; lock.unlock() }
        func webSocket(_ client: WebSocketClient, didCloseWith error: WebSocketClientError?) { lock.lock(); closed += 1; lock.unlock() }
    }

    /// 1,000 client connections, each closed while three threads keep sending to it.
    func testClientTeardownWhileOtherThreadsSend() throws {
        let echo = Echo()
        let server = WebServer(host: "127.0.0.1", delegate: echo)
        echo.server = server
        let port = try server.start(port: 0)
        defer { server.stop() }
        let counter = Counter()
        let url = try XCTUnwrap(URL(string: "ws://127.0.0.1:\(port)/v1/signal"))
        let senders = DispatchQueue(label: "senders", attributes: .concurrent)
        for cycle in 0..<1000 {
            let client = WebSocketClient(url: url, delegate: counter)
            try client.connect()
            let stop = Flag()
            let group = DispatchGroup()
            for _ in 0..<3 {
                senders.async(group: group) {
                    var n = 0
                    while !stop.isSet && n < 200 { client.send(text: "x\(cycle)"); n += 1 }
                    // Keep sending after the close too: those are dropped, never a crash.
                    for _ in 0..<50 { client.send(text: "late") }
                }
            }
            if cycle % 2 == 0 { usleep(UInt32.random(in: 0...400)) }
            cycle % 3 == 0 ? client.abort() : client.disconnect()
            stop.set()
            XCTAssertEqual(group.wait(timeout: .now() + 5), .success, "senders finish (cycle \(cycle))")
        }
        counter.lock.lock(); defer { counter.lock.unlock() }
        XCTAssertEqual(counter.closed, 1000, "every connection reported its end exactly once")
        XCTAssertGreaterThan(counter.opened, 0)
    }

    /// A server stopped while threads send to its connections (and keep sending after).
    func testServerStopWhileOtherThreadsSend() throws {
        for round in 0..<40 {
            let echo = Echo()
            let server = WebServer(host: "127.0.0.1", delegate: echo)
            echo.server = server
            let port = try server.start(port: 0)
            let counter = Counter()
            let client = WebSocketClient(url: try XCTUnwrap(URL(string: "ws://127.0.0.1:\(port)/v1/signal")), delegate: counter)
            try client.connect()
            let stop = Flag()
            let group = DispatchGroup()
            for t in 0..<3 {
                DispatchQueue.global().async(group: group) {
                    var n = 0
                    while !stop.isSet && n < 2_000 { server.send(text: "s\(round)", to: UInt64(t + 1)); n += 1 }
                    for _ in 0..<50 { server.send(text: "late", to: 1); server.close(1) }
                }
            }
            usleep(UInt32.random(in: 0...2_000))
            server.stop()
            stop.set()
            XCTAssertEqual(group.wait(timeout: .now() + 5), .success)
            client.disconnect()
        }
    }

    /// A connection that ends from the other side lets go of its thread and libwebsockets
    /// context (an eventfd, /dev/urandom, the socket) by itself: owners that replace a lost
    /// socket with a new one (every reconnect) and never call `disconnect()` on the old one
    /// leak nothing. (Before, each such client kept them until the process ended; the suite's
    /// test process reached ~1,000 descriptors and the PostgreSQL it started refused to run.)
    func testAConnectionClosedByThePeerLetsGoOfItsThreadAndContext() throws {
        let warm = Echo()
        let warmServer = WebServer(host: "127.0.0.1", delegate: warm)
        _ = try warmServer.start(port: 0)
        warmServer.stop()
        let before = openDescriptorCount()
        let echo = Echo()
        let server = WebServer(host: "127.0.0.1", delegate: echo)
        echo.server = server
        let port = try server.start(port: 0)
        let counter = Counter()
        let url = try XCTUnwrap(URL(string: "ws://127.0.0.1:\(port)/v1/signal"))
        var clients: [WebSocketClient] = []
        for _ in 0..<30 {
            let c = WebSocketClient(url: url, delegate: counter)
            try c.connect()
            clients.append(c)
        }
        XCTAssertTrue(eventually(5) { counter.lock.lock(); defer { counter.lock.unlock() }; return counter.opened == 30 }, "30 connections open")
        XCTAssertGreaterThan(openDescriptorCount(), before + 30, "each open connection holds descriptors")
        server.stop()
        XCTAssertTrue(eventually(5) { counter.lock.lock(); defer { counter.lock.unlock() }; return counter.closed == 30 }, "each hears its end")
        let after = eventuallyValue(5) { () -> Int? in
            let n = openDescriptorCount()
            return n <= before + 2 ? n : nil
        } ?? openDescriptorCount()
        XCTAssertLessThanOrEqual(after, before + 2, "30 connections closed by the server, never disconnect()ed: \(before) descriptors before, \(after) after")
        withExtendedLifetime(clients) {}
    }
}
