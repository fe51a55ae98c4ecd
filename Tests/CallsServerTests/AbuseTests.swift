@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import XCTest

/// Issue #15's abuse findings, each reproduced: sockets held forever without joining, a rate
/// limiter reset by spraying addresses, refusals that left no trace, rooms without limits.
final class AbuseTests: XCTestCase {
    func testAConnectionThatNeverJoinsIsClosedAndCounted() throws {
        let h = try ServerHarness { $0.joinTimeoutSeconds = 0.5 }
        defer { h.stop(); h.removeData() }
        let idle = try SignalProbe(url: h.server.url)
        let member = try SignalProbe(url: h.server.url)
        member.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "idle"))))
        XCTAssertNotNil(member.joined())
        XCTAssertTrue(idle.waitClosed(timeout: 3), "held forever before")
        XCTAssertTrue(idle.all.contains { if case .error(.joinTimeout, _) = $0 { return true }; return false })
        XCTAssertTrue(holds(for: 0.6) { !member.closed }, "a joined connection stays")
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="idle_connection"} 1"#), h.server.metricsText())
    }

    /// The attack (#34): a `hello` with a wrong token, a join that is refused, or keep-alives
    /// alone kept a connection past the join timeout for ever. Only being let in counts.
    func testSayingHelloWithAWrongTokenDoesNotExemptAConnection() throws {
        let h = try ServerHarness { $0.joinTimeoutSeconds = 0.5 }
        defer { h.stop(); h.removeData() }
        let liar = try SignalProbe(url: h.server.url)
        liar.send(.hello(authToken: "not-a-token"))
        XCTAssertNotNil(liar.wait { if case .error = $0 { return true }; return false }, "the hello is refused")
        let pinger = try SignalProbe(url: h.server.url)
        let user = try SignalProbe(url: h.server.url)
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"ann","authKey":"\#(h.server.keys.authKey)"}"#)
        user.send(.hello(authToken: try XCTUnwrap(login.data["authToken"] as? String)))
        XCTAssertNotNil(user.wait { if case .welcome = $0 { return true }; return false })
        paced(every: 0.05, for: 3) { i in
            guard !pinger.isClosed else { return false }
            pinger.send(.ping(i))
            return true
        }
        XCTAssertTrue(liar.waitClosed(timeout: 3), "a refused hello held the connection for ever before")
        XCTAssertTrue(pinger.isClosed, "keep-alives alone do not keep a connection")
        XCTAssertTrue(liar.all.contains { if case .error(.joinTimeout, _) = $0 { return true }; return false })
        XCTAssertFalse(user.isClosed, "a welcomed connection stays")
    }

    /// The attack: a message that never ends — fragments streamed for ever, its final one never
    /// sent. The buffer was dropped past 64 KiB but the connection stayed open (for any number of
    /// bytes) until a final fragment: now it closes with 1009 as soon as the message passes the
    /// limit, as a whole frame over it does, and both are counted.
    func testAMessagePastTheLimitClosesTheConnectionAtOnceEvenUnfinished() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let endless = try RawWebSocket(port: h.server.port, subprotocol: signallingSubprotocol, receiveBuffer: 65_536)
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 16_384)
        try endless.send(frame: piece, opcode: 1, fin: false)
        for _ in 0..<4 { try endless.send(frame: piece, opcode: 0, fin: false) }  // 80 KiB, never finished
        XCTAssertEqual(endless.closeStatus(within: 3), 1009, "closed before the last fragment")
        let whole = try RawWebSocket(port: h.server.port, subprotocol: signallingSubprotocol, receiveBuffer: 65_536)
        try whole.send(frame: [UInt8](repeating: UInt8(ascii: "b"), count: 70_000))
        XCTAssertEqual(whole.closeStatus(within: 3), 1009)
        let fine = try SignalProbe(url: h.server.url)
        fine.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "big"))))
        XCTAssertNotNil(fine.joined(), "the server goes on")
        XCTAssertTrue(eventually(3) { h.server.metricsText().contains(#"callroom_refused_total{cause="oversized_message"} 2"#) },
                      h.server.metricsText())
    }

    /// A presenter shares a busy terminal (150 frames of 54 KB, paced under the signalling rate
    /// limit) to a member who reads and `nonReaders` who never do. Checks that the reader gets
    /// every frame, every non-reader is closed, and the presenter and the reader stay.
    private func shareToNonReaders(_ h: ServerHarness, nonReaders: Int) throws {
        let presenter = try SignalProbe(url: h.server.url)
        presenter.send(.join(.init(callToken: try h.callToken(uid: "pat", session: "slow"))))
        XCTAssertNotNil(presenter.joined())
        presenter.send(.setPresenting(true))
        let viewer = try SignalProbe(url: h.server.url)
        viewer.send(.join(.init(callToken: try h.callToken(uid: "vic", session: "slow"))))
        XCTAssertNotNil(viewer.joined())
        let slow = try (0..<nonReaders).map { n in
            let ws = try RawWebSocket(port: h.server.port, subprotocol: signallingSubprotocol)
            try ws.send(text: ClientMessage.join(.init(callToken: try h.callToken(uid: "sam\(n)", session: "slow"))).json())
            XCTAssertNotNil(viewer.wait { if case .participantJoined(let p) = $0 { return p.uid == "sam\(n)" }; return false })
            return ws
        }
        let row = String(repeating: "é", count: 300)
        let frames = 150
        paced(every: 0.022, for: 10) { tick in
            let seq = tick + 1
            presenter.send(.screenShare(ScreenShareFrame(seq: seq, full: seq == 1, columns: 300, rows: 90, cursor: nil, styles: [.plain],
                                                         runs: (0..<90).map { .init(x: 0, y: $0, text: row, style: 0) })))
            return seq < frames
        }
        XCTAssertNotNil(viewer.wait(timeout: 10) { if case .screenShare(_, let f) = $0 { return f.seq == frames }; return false },
                        "a reading member gets every frame")
        XCTAssertTrue(eventually(5) { slow.allSatisfy(\.serverClosed) }, "every member that never read is closed")
        XCTAssertFalse(viewer.isClosed)
        XCTAssertFalse(presenter.isClosed)
    }

    /// The attack (#34): a member that never reads while a presenter shares a busy terminal;
    /// its queue grew without bound on the server. Now it is closed (4008) once 64 KiB wait,
    /// and the rest of the room goes on.
    func testAPeerThatDoesNotReadIsClosedAndTheRoomGoesOn() throws {
        let h = try ServerHarness { $0.maxQueuedBytesPerConnection = 65_536 }
        defer { h.stop(); h.removeData() }
        try shareToNonReaders(h, nonReaders: 1)
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="slow_consumer"} 1"#), h.server.metricsText())
    }

    /// Each WebSocket's queue is bounded, but not their sum: many members that never read, each
    /// under its own limit, could hold 4 MiB apiece. Past `maxQueuedBytesTotal` over all of
    /// them, the one with the most waiting goes (4008), until the rest fit; readers stay.
    func testTheQueuesOfAllConnectionsTogetherAreBounded() throws {
        let h = try ServerHarness {
            $0.maxQueuedBytesTotal = 512 * 1024
            $0.maxQueuedBytesPerConnection = 64 * 1024 * 1024  // (never reached here: 150 frames are 8 MB)
        }
        defer { h.stop(); h.removeData() }
        try shareToNonReaders(h, nonReaders: 3)
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="slow_consumer"} 3"#), h.server.metricsText())
    }

    /// A chunked request body was never answered (the connection hung until the idle close).
    /// Now: 411 at once, and the connection closes (the chunks are not read as requests).
    func testAChunkedBodyIsAnsweredNotDropped() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let body = #"{"uid":"x","authKey":"k"}"#
        let request = "POST /v3/sdk/login HTTP/1.1\r\nHost: x\r\nappId: \(h.server.keys.appId)\r\nContent-Type: application/json\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n" + String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
        let (answer, closed) = RawHTTP.exchange(port: h.server.port, Array(request.utf8))
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 411"), answer)
        XCTAssertTrue(answer.contains("ERR_LENGTH_REQUIRED"), answer)
        XCTAssertTrue(closed)
        XCTAssertEqual(h.request("GET", "/healthz").status, 200)
    }

    /// A `Content-Length` that is not one whole number — letters, a sign, more digits than any
    /// body, two that differ — was read as 0, and the bytes behind the head as the next request
    /// (a request smuggled past anything in front that reads the length otherwise); a negative
    /// one held the connection. Each is now 400 at once and the connection closed, nothing
    /// behind it read; a length past the body limit is 413 at once, before any body.
    func testALengthThatIsNotOneNumberIsRefusedAndNothingBehindItIsRead() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        for (lengths, status, code) in [(["abc"], 400, "ERR_BAD_REQUEST"), (["-5"], 400, "ERR_BAD_REQUEST"),
                                         (["99999999999999999999999"], 400, "ERR_BAD_REQUEST"), (["0", "38"], 400, "ERR_BAD_REQUEST"),
                                         (["70000"], 413, "ERR_BODY_TOO_LARGE")] {
            let head = "POST /v3/users HTTP/1.1\r\nHost: x\r\n" + lengths.map { "Content-Length: \($0)\r\n" }.joined()
                + "apikey: \(h.server.keys.apiKey)\r\n\r\n"
            let (answer, closed) = RawHTTP.exchange(port: h.server.port, Array((head + smuggled).utf8))
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 \(status)"), "\(lengths): \(answer)")
            XCTAssertTrue(answer.contains(code), "\(lengths): \(answer)")
            XCTAssertFalse(answer.contains(#"{"status":"ok"}"#), "\(lengths): the bytes behind the head were read as a request: \(answer)")
            XCTAssertTrue(closed, "\(lengths): closed at once")
        }
        let created = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"fine"}"#)
        XCTAssertEqual(created.status, 200, "a request with its length is answered")
        XCTAssertTrue(eventually(2) { h.server.metricsText().contains(#"callroom_refused_total{cause="request_head"} 5"#) },
                      "each refusal counted")
    }

    /// A refusal answered from the head while the client is still sending its body (a 413 to a
    /// client mid-upload): the client sends the rest without the connection being reset, then
    /// reads the answer and the server's end. Before, the server closed at once and the bytes
    /// still coming were answered with a reset — curl, mid-upload under CI's load, reported
    /// "connection reset" instead of the 413 (RESTTests, once).
    func testARefusedBodyCanBeSentToItsEndAndTheAnswerRead() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let fd = RawHTTP.connect(port: h.server.port)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        func send(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        let length = 300_000
        XCTAssertGreaterThan(send(Array("POST /v3/users HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\napikey: \(h.server.keys.apiKey)\r\n\r\n".utf8)
                                  + [UInt8](repeating: 0x78, count: 1_000)), 0)
        // The answer and the server's end (its FIN) come while the body is still on its way
        // (this client waits for both before it sends the rest).
        var ended = pollfd(fd: fd, events: 0x2000, revents: 0)  // POLLRDHUP (Glibc hides it without _GNU_SOURCE)
        XCTAssertEqual(poll(&ended, 1, 3_000), 1, "the 413 comes from the head, then the server's end")
        var sent = 1_000, failure: Int32 = 0
        while sent < length {
            let n = send([UInt8](repeating: 0x78, count: min(16_384, length - sent)))
            if n <= 0 { failure = errno; break }
            sent += n
            if sent == 1_000 + n {
                // A reset, if one comes, comes back for these first bytes: wait for it (or 300 ms).
                var reset = pollfd(fd: fd, events: Int16(POLLERR | POLLHUP), revents: 0)
                _ = poll(&reset, 1, 300)
            }
        }
        XCTAssertEqual(sent, length, "the rest of the body went out without a reset (errno \(failure))")
        var answer: [UInt8] = [], buf = [UInt8](repeating: 0, count: 4096), end = -1
        var tv = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { end = n == 0 ? 0 : Int(errno); break }
            answer += buf[0..<n]
        }
        XCTAssertTrue(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 413"), String(decoding: answer, as: UTF8.self))
        XCTAssertEqual(end, 0, "the server's end, not a reset")
        XCTAssertEqual(h.request("GET", "/healthz").status, 200)
    }

    /// The attack: `CONNECT`. libwebsockets makes a `CONNECT` request a raw connection (a proxy's
    /// tunnel) before any HTTP callback, and nothing answered or timed it out: each was held for
    /// as long as the client liked — an address's whole connection allowance held for ever. Now
    /// 405 at once (with `Allow`), counted, and closed once the linger is over though the client
    /// keeps it open: the address is served again.
    func testCONNECTIsAnsweredAndItsConnectionLetGo() throws {
        let h = try ServerHarness {
            $0.maxConnectionsPerAddress = 3
            $0.addressLimitsExemptLoopback = false
        }
        defer { h.stop(); h.removeData() }
        let connect = Array("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n".utf8)
        let (answer, closed) = RawHTTP.exchange(port: h.server.port, connect + [0x16, 0x03, 0x01], from: "127.0.0.11")
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 405"), answer)
        XCTAssertTrue(answer.contains("ERR_METHOD_NOT_ALLOWED") && answer.lowercased().contains("allow: get"), answer)
        XCTAssertTrue(closed, "the server's side ends after the answer")
        // The address's whole allowance (3 + 32 at accept), each a CONNECT its client keeps open.
        var held: [Int32] = []
        defer { held.forEach { _ = close($0) } }
        for _ in 0..<(3 + 32) {
            let fd = RawHTTP.connect(port: h.server.port, from: "127.0.0.12")
            _ = connect.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            held.append(fd)
        }
        let served = eventually(8, poll: 0.2) {
            RawHTTP.exchange(port: h.server.port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), from: "127.0.0.12", timeout: 0.5)
                .text.hasPrefix("HTTP/1.1 200")
        }
        XCTAssertTrue(served, "the CONNECTs' connections are let go after the linger (2 s), their client's still open")
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="request_head"} 36"#), h.server.metricsText())
    }

    /// The attack: a NUL byte in a header — `apikey: KEY\0anything` was read up to the NUL, as
    /// C reads it, and authenticated as the key: what the server acted on was not what came. A
    /// head holding a NUL is now refused whole, and the connection closed.
    func testANULInTheHeadIsRefusedNotCutShort() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let key = h.server.keys.apiKey
        for (name, header) in [("apikey", "apikey: \(key)\0junk"), ("content-type", "apikey: \(key)\r\nContent-Type: a\0b")] {
            let head = "GET /v3/users HTTP/1.1\r\nHost: x\r\n\(header)\r\n\r\n"
            let (answer, closed) = RawHTTP.exchange(port: h.server.port, Array(head.utf8))
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 400"), "\(name): \(answer)")
            XCTAssertTrue(answer.contains("ERR_BAD_REQUEST") && answer.contains("NUL"), "\(name): \(answer)")
            XCTAssertFalse(answer.contains(#""data""#), "\(name): answered as if the head were clean: \(answer)")
            XCTAssertTrue(closed, "\(name): closed at once")
        }
        let clean = "GET /v3/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\napikey: \(key)\r\n\r\n"
        XCTAssertTrue(RawHTTP.exchange(port: h.server.port, Array(clean.utf8)).0.hasPrefix("HTTP/1.1 200"), "the same head without the NUL")
        XCTAssertTrue(eventually(2) { h.server.metricsText().contains(#"callroom_refused_total{cause="request_head"} 2"#) },
                      "each refusal counted (and logged once a minute per peer)")
    }

    /// The attack: a request body sent a byte at a time. libwebsockets' 20 s timeout starts
    /// again with every chunk, so a `Content-Length` of 60,000 at a byte a second held the
    /// connection for 16 hours. The body now has `requestBodyTimeoutSeconds` from the head,
    /// counted and logged; a body that comes in time is answered.
    func testABodySentSlowlyIsCutAtItsDeadline() throws {
        let h = try ServerHarness { $0.requestBodyTimeoutSeconds = 2 }
        defer { h.stop(); h.removeData() }
        let fd = RawHTTP.connect(port: h.server.port)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let head = "POST /v3/sdk/login HTTP/1.1\r\nHost: x\r\nappId: \(h.server.keys.appId)\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
        _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let start = Date()
        var cut: TimeInterval?
        paced(every: 0.25, for: 6) { _ in
            var byte = UInt8(ascii: " ")
            if send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) != 1 || RawHTTP.closedByPeer(fd, timeout: 0) {
                cut = Date().timeIntervalSince(start)
                return false
            }
            return true
        }
        let seconds = try XCTUnwrap(cut, "still open after 6 s of a byte every 250 ms")
        XCTAssertGreaterThan(seconds, 1.5, "not before its deadline")
        XCTAssertLessThan(seconds, 3.5)
        XCTAssertTrue(eventually(2) { h.server.metricsText().contains(#"callroom_refused_total{cause="slow_request"} 1"#) }, h.server.metricsText())
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"ann","authKey":"\#(h.server.keys.authKey)"}"#)
        XCTAssertEqual(login.status, 200, "a body in time is answered")
    }

    /// Deadlines shorter than libwebsockets' idle hang-up (25 s) fire on time when nothing comes
    /// to wake the server: a body that stops half-way is cut at `requestBodyTimeoutSeconds`, a
    /// connection that never says a word within about 10 s. libwebsockets' libev plugin missed
    /// every deadline earlier than the one it had armed (it re-arms a running libev timer, which
    /// libev ignores), so both were held 28 s; the server now wakes its loop every second.
    func testConnectionsThatGoQuietAreClosedAtTheirOwnDeadlines() throws {
        let h = try ServerHarness { $0.requestBodyTimeoutSeconds = 2 }
        defer { h.stop(); h.removeData() }
        let body = RawHTTP.connect(port: h.server.port), silent = RawHTTP.connect(port: h.server.port)
        XCTAssertGreaterThanOrEqual(min(body, silent), 0)
        defer { close(body); close(silent) }
        let head = "POST /v3/sdk/login HTTP/1.1\r\nHost: x\r\nappId: \(h.server.keys.appId)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"uid\":"
        _ = Array(head.utf8).withUnsafeBytes { send(body, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let start = Date()
        var closedAfter: [String: TimeInterval] = [:]
        eventually(14, poll: 0.05) {
            for (name, fd) in [("body", body), ("silent", silent)] where closedAfter[name] == nil && RawHTTP.closedByPeer(fd, timeout: 0) {
                closedAfter[name] = Date().timeIntervalSince(start)
            }
            return closedAfter.count == 2
        }
        let bodyCut = try XCTUnwrap(closedAfter["body"], "a body that stopped half-way was still held 14 s after its head")
        XCTAssertGreaterThan(bodyCut, 1.5, "not before its deadline")
        XCTAssertLessThan(bodyCut, 3.5, "at its deadline (2 s), give or take the loop's one-second wake")
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="slow_request"} 1"#), "counted once: \(h.server.metricsText())")
        let silentCut = try XCTUnwrap(closedAfter["silent"], "a connection that said nothing was still held after 14 s")
        XCTAssertLessThan(silentCut, 12)
    }

    /// The attack (#34): one address opens TCP connections and says nothing (each held for
    /// libwebsockets' 20 s), taking the whole descriptor budget from everyone else. Now an
    /// address holds at most maxConnectionsPerAddress + 32 connections, counted from accept.
    func testOneAddressCannotTakeEveryConnection() throws {
        let h = try ServerHarness {
            $0.maxConnectionsPerAddress = 3
            $0.addressLimitsExemptLoopback = false
        }
        defer { h.stop(); h.removeData() }
        let cap = 3 + 32
        var held: [Int32] = []
        defer { held.forEach { _ = close($0) } }
        for _ in 0..<(cap + 10) { held.append(RawHTTP.connect(port: h.server.port, from: "127.0.0.9")) }
        // (Hung up at accept: the end is there at once.)
        eventually(3) { held.filter { RawHTTP.closedByPeer($0, timeout: 0) }.count >= 10 }
        let refused = held.filter { RawHTTP.closedByPeer($0, timeout: 0) }
        XCTAssertEqual(refused.count, 10, "the ones over \(cap) are hung up at once")
        // Another address is served meanwhile.
        let other = RawHTTP.exchange(port: h.server.port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), from: "127.0.0.10", timeout: 1)
        XCTAssertTrue(other.text.hasPrefix("HTTP/1.1 200"), other.text)
        // A connection closed is a slot again.
        for fd in held.prefix(5) { _ = close(fd) }
        held.removeFirst(5)
        // (The server sees the closes within its next turn; an attempt before that is refused too, and counted.)
        var early = 0
        let again = eventuallyValue(3, poll: 0.05) { () -> (text: String, closed: Bool)? in
            let r = RawHTTP.exchange(port: h.server.port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), from: "127.0.0.9", timeout: 1)
            if r.text.hasPrefix("HTTP/1.1 200") { return r }
            early += 1
            return nil
        }
        XCTAssertNotNil(again, "a connection closed is a slot again")
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="connections_per_address"} \#(10 + early)"#), h.server.metricsText())
    }

    func testOpenWebSocketsArePerAddressBounded() throws {
        let h = try ServerHarness {
            $0.maxConnectionsPerAddress = 3
            $0.addressLimitsExemptLoopback = false
        }
        defer { h.stop(); h.removeData() }
        // One at a time, each known open (a pong) before the next: the fourth is the one over.
        let held = try (0..<3).map { i -> SignalProbe in
            let p = try SignalProbe(url: h.server.url)
            p.send(.ping(i))
            XCTAssertNotNil(p.wait { if case .pong(i) = $0 { return true }; return false })
            return p
        }
        let extra = try SignalProbe(url: h.server.url)
        XCTAssertTrue(extra.waitClosed(), "the fourth from one address is closed")
        XCTAssertTrue(extra.all.contains { if case .error(.tooManyConnections, _) = $0 { return true }; return false })
        XCTAssertFalse(held.contains { $0.closed })
        held[0].client.disconnect()
        let again = try XCTUnwrap(eventuallyValue(5) { () -> SignalProbe? in
            guard let p = try? SignalProbe(url: h.server.url), let token = try? h.callToken(uid: "ann", session: "cap") else { return nil }
            p.send(.join(.init(callToken: token)))
            if p.joined(timeout: 1) != nil { return p }
            p.disconnect()
            return nil
        }, "a slot freed is a slot")
        XCTAssertNotNil(again.all.first { if case .joined = $0 { return true }; return false })
    }

    /// The attack: exhaust one address's bucket, then make requests from 10,000+ others — the
    /// old table was wiped past 10,000 peers and the exhausted address refilled.
    func testSprayingAddressesDoesNotRefillAnExhaustedOne() {
        var l = PeerLimiter(capacity: 2, perSecond: 1, maxPeers: 1000)
        let t0: UInt64 = 1_000_000_000
        XCTAssertTrue(l.allow("203.0.113.7", now: t0))
        XCTAssertTrue(l.allow("203.0.113.7", now: t0))
        XCTAssertFalse(l.allow("203.0.113.7", now: t0))
        for i in 0..<20_000 { _ = l.allow("10.\(i / 65536).\(i / 256 % 256).\(i % 256)", now: t0 + UInt64(i)) }
        XCTAssertLessThanOrEqual(l.count, 1000, "the table stays bounded")
        XCTAssertFalse(l.allow("203.0.113.7", now: t0 + 20_000), "still exhausted")
        XCTAssertTrue(l.allow("203.0.113.7", now: t0 + 1_100_000_000), "and refills with time, as a bucket does")
    }

    /// Every refusal is counted; the log has one line per cause per peer per minute.
    func testRefusalsAreCountedAndLoggedOncePerCausePerPeer() throws {
        let tmp = TemporaryDirectory("callroom-abuse")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "warn"])
        defer { _ = server.stop() }
        for _ in 0..<40 { _ = BlockingHTTP.request("GET", server.url + "/v3/users", headers: ["apikey": "wrong"]) }
        // First, a client that sends a wrong token and hangs up at once: its refusal is answered
        // after the socket closed, and its line still names the peer (it said `peer=?`).
        do {
            let port = try XCTUnwrap(URLComponents(string: server.url)?.port)
            let gone = try RawWebSocket(port: port, subprotocol: signallingSubprotocol)
            try gone.send(text: #"{"type":"join","v":1,"callToken":"not-a-token","audioMuted":false,"videoPaused":false,"sessionType":"voice"}"#)
        }
        XCTAssertTrue(eventually(3) { server.process.errorOutput.contains("signal_auth") }, "the hung-up client's refusal is logged")
        for _ in 0..<5 {
            let p = try SignalProbe(url: server.url)
            p.send(.join(.init(callToken: "not-a-token")))
            XCTAssertEqual(p.error(), "AUTH_ERR_TOKEN_INVALID")
        }
        let metrics = BlockingHTTP.request("GET", server.url + "/metrics").text
        XCTAssertTrue(metrics.contains(#"callroom_refused_total{cause="rest_auth"} 40"#), metrics)
        XCTAssertTrue(metrics.contains(#"callroom_refused_total{cause="signal_auth"} 6"#), metrics)
        eventually(3) { server.process.errorOutput.contains("signal_auth") && server.process.errorOutput.contains("rest_auth") }
        let lines = server.process.errorOutput.split(separator: "\n").filter { $0.contains("refused") }
        XCTAssertEqual(lines.filter { $0.contains("rest_auth") }.count, 1, "40 refusals, one line: \(lines)")
        XCTAssertEqual(lines.filter { $0.contains("signal_auth") }.count, 1)
        XCTAssertTrue(lines.allSatisfy { $0.contains("127.0.0.1") }, "the line names the peer")
    }

    func testRoomsAreLimitedPerServerAndPerUser() throws {
        let h = try ServerHarness { $0.maxRooms = 2; $0.maxRoomsPerUser = 1 }
        defer { h.stop(); h.removeData() }
        func join(_ uid: String, _ session: String) throws -> SignalProbe {
            let p = try SignalProbe(url: h.server.url)
            p.send(.join(.init(callToken: try h.callToken(uid: uid, session: session))))
            return p
        }
        XCTAssertNotNil(try join("ann", "one").joined())
        XCTAssertEqual(try join("ann", "two").error(), "ERR_TOO_MANY_ROOMS", "one room at a time for ann")
        XCTAssertNotNil(try join("ben", "two").joined())
        XCTAssertEqual(try join("cat", "three").error(), "ERR_TOO_MANY_ROOMS", "two rooms on this server")
        XCTAssertNotNil(try join("cat", "one").joined(), "an open room still takes people")
    }
}
