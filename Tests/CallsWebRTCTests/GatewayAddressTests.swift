import CallRoomTestSupport
import CallsCore
import CallsTransport
import Foundation
import Testing

/// The gateway's port passes a datagram to a browser's leg only from an address a check of that
/// leg passed from, and holds a bounded number of those per leg: one browser that knows its
/// leg's password cannot grow the server's table by sending checks from port after port.
@Suite("WebRTC gateway: the addresses a leg's packets are taken from")
struct GatewayAddressTests {
    @Test func aLegKeepsItsNewestCheckedAddressesAndTheOneItsMediaGoTo() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let web = try SignalProbe(url: h.server.url)
        web.send(.join(.init(callToken: try h.callToken(uid: "web", session: "rtc"), sessionType: .video)))
        #expect(web.joined() != nil)
        web.send(.webrtcOffer(sdp: SDPOffers.chromium))
        guard case .webrtcAnswer(let sdp)? = web.wait(timeout: 5, { if case .webrtcAnswer = $0 { return true }; if case .error = $0 { return true }; return false }) else {
            Issue.record("no answer: \(web.all.suffix(3))")
            return
        }
        func attribute(_ name: String) -> String? {
            sdp.split(separator: "\r\n").first { $0.hasPrefix("a=\(name):") }.map { String($0.dropFirst(name.count + 3)) }
        }
        let ufrag = try #require(attribute("ice-ufrag")), password = try #require(attribute("ice-pwd"))
        let candidate = try #require(attribute("candidate")).split(separator: " ")
        let port = try #require(Int(candidate[5]))
        let gateway = try #require(SocketAddress(host: "127.0.0.1", port: port))

        // Twelve addresses (ports) each pass a check; the first carries the leg's media (no
        // nomination came), so it stays, with the seven newest.
        let sockets = try (0..<12).map { _ in try UDPSocket(host: "127.0.0.1", port: 0) }
        defer { for s in sockets { s.close() } }
        for (n, socket) in sockets.enumerated() {
            let browser = ICELiteResponderTests.Browser(password: password)
            #expect(socket.send(browser.check(username: "\(ufrag):4ZcD", nominate: false), to: gateway))
            let reply = try #require(socket.receiveCopy(timeoutMs: 3000), "check \(n) answered")
            #expect(browser.read(reply).valid)
        }
        // An RTP-shaped datagram from each in turn: from one of the leg's addresses it reaches the
        // leg (and is dropped there, before its handshake); from any other it is an unknown source.
        func dropped(_ reason: String) -> Int {
            h.server.metricsText().split(separator: "\n")
                .first { $0.hasPrefix(#"callroom_webrtc_packets_dropped_total{reason="\#(reason)"} "#) }
                .flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
        }
        var taken: [Int] = []
        for (n, socket) in sockets.enumerated() {
            #expect(socket.send([0x80, 0x6f] + [UInt8](repeating: 0, count: 10), to: gateway))
            #expect(eventually(3) { dropped("beforeHandshake") + dropped("unknown_source") == n + 1 })
            if dropped("beforeHandshake") > taken.count { taken.append(n) }
        }
        #expect(taken == [0, 5, 6, 7, 8, 9, 10, 11], "the address carrying media and the seven newest")
        web.send(.leave)
        #expect(web.waitClosed())
    }
}
