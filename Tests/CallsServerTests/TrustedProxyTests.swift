import CallRoomTestSupport
import CallsCore
@testable import CallsServer
import CallsTransport
import Foundation
import XCTest

/// Behind a proxy every client arrives from the proxy's address: the per-address limits held
/// them all to one allowance (or, with the proxy on loopback, to none). With the proxy named in
/// `trustedProxies`, each client is counted as the `X-Forwarded-For` entry the proxy appended.
final class TrustedProxyTests: XCTestCase {
    // The proxy is 127.0.0.2; 127.0.0.3 is a client that writes the header itself.

    private static func status(port: Int, from source: String, forwardedFor: [String]) -> String {
        let headers = forwardedFor.map { "X-Forwarded-For: \($0)\r\n" }.joined()
        let r = RawHTTP.exchange(port: port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\(headers)Connection: close\r\n\r\n".utf8),
                                 from: source, timeout: 2)
        return String(r.text.prefix(12))
    }

    /// Through `callroomd --config` as an operator sets it up.
    func testEachClientBehindATrustedProxyHasItsOwnRESTAllowance() throws {
        let tmp = TemporaryDirectory("callroom-proxy")
        defer { tmp.remove() }
        let config = tmp.file("config.json")
        try Data(#"{"trustedProxies": ["127.0.0.2"], "restRequestsPerSecond": 1}"#.utf8).write(to: URL(fileURLWithPath: config))
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--config", config])
        defer { _ = server.stop() }
        let port = try XCTUnwrap(URLComponents(string: server.url)?.port)
        XCTAssertTrue(server.process.errorOutput.contains("counted by X-Forwarded-For trusted_proxies=127.0.0.2/32"), "said at start")
        func status(from source: String, forwardedFor: [String]) -> String { Self.status(port: port, from: source, forwardedFor: forwardedFor) }
        /// Requests from `source` naming the clients in turn until the first 429: how many were
        /// served (the burst is 2; a token comes back each second, so a slow run may see 3).
        func servedUntilRefused(from source: String, _ clients: [String]) -> Int {
            (0..<12).first { status(from: source, forwardedFor: [clients[$0 % clients.count]]) == "HTTP/1.1 429" } ?? 12
        }
        XCTAssertTrue((2...3).contains(servedUntilRefused(from: "127.0.0.2", ["203.0.113.7"])), "the client's burst")
        // What a client writes itself sits left of what the proxy appends: it changes nothing.
        XCTAssertEqual(status(from: "127.0.0.2", forwardedFor: ["198.51.100.1, 203.0.113.7"]), "HTTP/1.1 429")
        XCTAssertEqual(status(from: "127.0.0.2", forwardedFor: ["198.51.100.1", "203.0.113.7"]), "HTTP/1.1 429",
                       "two headers are one list, in order")
        // Another client behind the same proxy is served.
        XCTAssertEqual(status(from: "127.0.0.2", forwardedFor: ["203.0.113.8"]), "HTTP/1.1 200")
        // An IPv6 client is counted by its /64: another address in it is no fresh allowance
        // (three addresses counted apart would be served 6 times).
        XCTAssertTrue((2...3).contains(servedUntilRefused(from: "127.0.0.2", ["2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:1:ffff::3"])))
        XCTAssertEqual(status(from: "127.0.0.2", forwardedFor: ["2001:db8:0:2::1"]), "HTTP/1.1 200", "the next /64 is another client")
        // From a peer that is no proxy the header is ignored: a new one per request buys nothing.
        XCTAssertTrue((2...3).contains(servedUntilRefused(from: "127.0.0.3", ["192.0.2.1", "192.0.2.2", "192.0.2.3"])))
        // The refusals name the client, not the proxy.
        func refused() -> [Substring] { server.process.errorOutput.split(separator: "\n").filter { $0.contains("refused cause=rate_limited") } }
        XCTAssertTrue(eventually(3) { refused().count == 3 }, server.process.errorOutput)
        let peers = refused().map { String($0.split(separator: " ").last ?? "") }
        XCTAssertEqual(peers.count, 3, "one line per client (and per /64) a minute: \(peers)")
        XCTAssertEqual(peers.first, "peer=203.0.113.7", "naming the client, never the proxy")
        XCTAssertTrue(peers.dropFirst().first?.hasPrefix("peer=2001:db8:0:1:") == true, "\(peers)")
        XCTAssertEqual(peers.last, "peer=127.0.0.3")
    }

    /// `/metrics` says how busy the server is: only the addresses in `metricsAllow` read it (by
    /// default loopback and the private networks), judged by the client's address — behind a
    /// trusted proxy, the one `X-Forwarded-For` names.
    func testMetricsAreServedOnlyToTheAddressesAllowed() throws {
        let defaults = ServerConfiguration(dataDir: "/nonexistent").metricsAllow
        for (address, allowed) in [("127.0.0.1", true), ("::1", true), ("10.1.2.3", true), ("172.31.0.1", true), ("192.168.1.1", true),
                                   ("fd12::1", true), ("203.0.113.7", false), ("172.32.0.1", false), ("2001:db8::1", false)] {
            let a = try XCTUnwrap(IPAddress(address))
            XCTAssertEqual(defaults.contains { $0.contains(a) }, allowed, address)
        }
        let tmp = TemporaryDirectory("callroom-metrics")
        defer { tmp.remove() }
        let config = tmp.file("config.json")
        try Data(#"{"trustedProxies": ["127.0.0.2"], "metricsAllow": ["127.0.0.3", "10.0.0.0/8"]}"#.utf8).write(to: URL(fileURLWithPath: config))
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--config", config])
        defer { _ = server.stop() }
        let port = try XCTUnwrap(URLComponents(string: server.url)?.port)
        func metrics(from source: String, forwardedFor: String? = nil) -> String {
            let header = forwardedFor.map { "X-Forwarded-For: \($0)\r\n" } ?? ""
            return RawHTTP.exchange(port: port, Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\(header)Connection: close\r\n\r\n".utf8),
                                    from: source, timeout: 2).text
        }
        XCTAssertTrue(metrics(from: "127.0.0.3").contains("callroom_rooms 0"), "an allowed address")
        let refused = metrics(from: "127.0.0.1")
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 403") && refused.contains("ERR_FORBIDDEN") && !refused.contains("callroom_rooms"),
                      "loopback is not in this list: \(refused)")
        XCTAssertTrue(metrics(from: "127.0.0.2", forwardedFor: "10.9.8.7").contains("callroom_rooms 0"), "a client the proxy names, allowed")
        XCTAssertTrue(metrics(from: "127.0.0.2", forwardedFor: "203.0.113.7").hasPrefix("HTTP/1.1 403"), "the proxy's own address opens nothing")
        XCTAssertTrue(metrics(from: "127.0.0.4", forwardedFor: "10.9.8.7").hasPrefix("HTTP/1.1 403"), "a header from no proxy is not read")
        XCTAssertTrue(eventually(3) { server.process.errorOutput.contains("GET /metrics → 403 (not in metricsAllow)") }, server.process.errorOutput)
    }

    func testWebSocketsAreCountedPerClientBehindAProxyAndTheProxyIsNotCappedAtAccept() throws {
        let h = try ServerHarness {
            $0.trustedProxies = [IPNetwork("127.0.0.2")].compactMap { $0 }
            $0.maxConnectionsPerAddress = 2
            $0.addressLimitsExemptLoopback = false
        }
        defer { h.stop(); h.removeData() }
        func open(_ client: String, from source: String = "127.0.0.2") throws -> RawWebSocket {
            try RawWebSocket(port: h.server.port, subprotocol: signallingSubprotocol, from: source, headers: [("X-Forwarded-For", client)])
        }
        let first = try (0..<2).map { _ in try open("203.0.113.7") }
        let third = try open("203.0.113.7")
        XCTAssertNotNil(third.closeStatus(within: 3), "the client's third WebSocket is closed")
        XCTAssertTrue(third.texts.contains { $0.contains("ERR_TOO_MANY_CONNECTIONS") }, "\(third.texts)")
        let other = try open("203.0.113.8")
        XCTAssertNil(other.closeStatus(within: 0.5), "another client behind the proxy is let in")
        XCTAssertFalse(first.contains { $0.serverClosed })
        // The proxy's TCP connections are not capped at accept (2 + 32 for anyone else).
        var held: [Int32] = []
        defer { held.forEach { _ = close($0) } }
        for _ in 0..<40 { held.append(RawHTTP.connect(port: h.server.port, from: "127.0.0.2")) }
        for _ in 0..<40 { held.append(RawHTTP.connect(port: h.server.port, from: "127.0.0.3")) }
        eventually(2) { held.suffix(40).filter { RawHTTP.closedByPeer($0, timeout: 0) }.count >= 6 }
        XCTAssertEqual(held.prefix(40).filter { RawHTTP.closedByPeer($0, timeout: 0) }.count, 0, "the proxy's are all held")
        XCTAssertEqual(held.suffix(40).filter { RawHTTP.closedByPeer($0, timeout: 0) }.count, 6, "another address's past 34 are not")
    }
}
