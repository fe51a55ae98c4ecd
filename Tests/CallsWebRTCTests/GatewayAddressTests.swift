import CallRoomTestSupport
import CallsCore
import CallsSecurity
import CallsServer
import CallsTransport
import CallsWebRTC
import Foundation
import Testing

/// The gateway's port passes a datagram to a browser's leg only from an address a check of that
/// leg passed from, and holds a bounded number of those per leg: one browser that knows its
/// leg's password cannot grow the server's table by sending checks from port after port.
@Suite("WebRTC gateway: the addresses a leg's packets are taken from")
struct GatewayAddressTests {
    /// A server whose log lines the test reads, and a browser leg's offer answered.
    final class Gateway {
        let h: ServerHarness
        let web: SignalProbe
        let ufrag: String, address: SocketAddress
        private let lines = Locked<[String]>([])
        /// The browser's side: its ICE credentials are the offer's (`SDPOffers.chromium`).
        static let browserUfrag = "4ZcD", browserPassword = "2/1muCWoOi3uLifh0NuRHlMJ"

        init(configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
            let lines = self.lines
            h = try ServerHarness { c in
                c.logLevel = .info
                c.logSink = { line in lines.withLock { $0.append(line) } }
                // No consent check of the browser's address within a test unless it asks for one:
                // the test's browser does not answer them, and they count among the checks sent.
                c.mediaConsentIntervalMs = 60_000
                c.mediaConsentTimeoutMs = 120_000
                configure(&c)
            }
            web = try SignalProbe(url: h.server.url)
            web.send(.join(.init(callToken: try h.callToken(uid: "web", session: "rtc"), sessionType: .video)))
            guard web.joined() != nil else { throw Failure("not joined: \(web.all.suffix(3))") }
            web.send(.webrtcOffer(sdp: SDPOffers.chromium))
            guard case .webrtcAnswer(let sdp)? = web.wait(timeout: 5, { if case .webrtcAnswer = $0 { return true }; if case .error = $0 { return true }; return false }) else {
                throw Failure("no answer: \(web.all.suffix(3))")
            }
            func attribute(_ name: String) -> String? {
                sdp.split(separator: "\r\n").first { $0.hasPrefix("a=\(name):") }.map { String($0.dropFirst(name.count + 3)) }
            }
            guard let ufrag = attribute("ice-ufrag"), let password = attribute("ice-pwd"), let candidate = attribute("candidate")?.split(separator: " "),
                  let port = Int(candidate[5]), let address = SocketAddress(host: "127.0.0.1", port: port) else { throw Failure("answer: \(sdp)") }
            self.ufrag = ufrag
            self.address = address
            serverPassword = password
            serverFingerprint = attribute("fingerprint").map { String($0.split(separator: " ").last ?? "") } ?? ""
        }
        let serverPassword: String, serverFingerprint: String

        struct Failure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }

        /// A check from `socket`, answered (true when the server's reply is valid).
        func check(from socket: UDPSocket, nominate: Bool) -> Bool {
            let browser = ICELiteResponderTests.Browser(password: serverPassword)
            guard socket.send(browser.check(username: "\(ufrag):\(Self.browserUfrag)", nominate: nominate), to: address) else { return false }
            return readSTUN(socket) { browser.read($0).valid } != nil
        }

        /// The server's own check, if one comes to `socket` within `timeoutMs`: it is the
        /// browser's to answer (its ufrag first, signed with its password).
        func serversCheck(at socket: UDPSocket, timeoutMs: Int32 = 2000) -> [UInt8]? {
            readSTUN(socket, timeoutMs: timeoutMs) { bytes in
                ICELiteResponderTests.Browser(password: Self.browserPassword).answer(bytes, username: "\(Self.browserUfrag):\(ufrag)", from: address) != nil
            }
        }

        /// Answers the server's check as the browser.
        func answer(_ request: [UInt8], from socket: UDPSocket) -> Bool {
            guard let response = ICELiteResponderTests.Browser(password: Self.browserPassword)
                .answer(request, username: "\(Self.browserUfrag):\(ufrag)", from: address) else { return false }
            return socket.send(response, to: address)
        }

        /// The first datagram on `socket` that `matches` (others are skipped).
        private func readSTUN(_ socket: UDPSocket, timeoutMs: Int32 = 3000, _ matches: ([UInt8]) -> Bool) -> [UInt8]? {
            let deadline = Date().addingTimeInterval(Double(timeoutMs) / 1000)
            while Date() < deadline {
                guard let bytes = socket.receiveCopy(timeoutMs: Int32(max(1, deadline.timeIntervalSinceNow * 1000))) else { return nil }
                if matches(bytes) { return bytes }
            }
            return nil
        }

        /// A browser at `socket` that nominates it and answers the server's check: the leg's
        /// media go there (true once the log says so).
        func connect(_ socket: UDPSocket) -> Bool {
            guard check(from: socket, nominate: true), mediaAddresses.isEmpty, let asked = serversCheck(at: socket),
                  answer(asked, from: socket) else { return false }
            return eventually(3) { mediaAddresses == ["\(socket.localAddress)"] }
        }

        /// The first datagram on `socket` within `timeoutMs` that is no STUN message (nil: none).
        func nonSTUN(at socket: UDPSocket, timeoutMs: Int32) -> [UInt8]? {
            readSTUN(socket, timeoutMs: timeoutMs) { bytes in !bytes.withUnsafeBytes { ICELiteResponder.isSTUN($0) } }
        }

        /// The addresses the log says the leg's media went to, in order.
        var mediaAddresses: [String] {
            lines.withLock { $0 }.filter { $0.contains("browser leg's media go to") }.compactMap { line in
                line.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("to=") }.map { String($0.dropFirst(3)) }
            }
        }

        /// How many log lines contain `text`.
        func logged(_ text: String) -> Int { lines.withLock { $0 }.filter { $0.contains(text) }.count }

        func metric(_ prefix: String) -> Int {
            h.server.metricsText().split(separator: "\n").first { $0.hasPrefix(prefix + " ") }
                .flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
        }

        func stop() {
            web.send(.leave)
            _ = web.waitClosed()
            h.stop()
            h.removeData()
        }
    }

    @Test func aLegKeepsItsNewestCheckedAddressesAndTheOneItsMediaGoTo() throws {
        let g = try Gateway()
        defer { g.stop() }
        // Twelve addresses (ports) each pass a check; the first answers the server's own check
        // and carries the leg's media (no nomination came), so it stays, with the seven newest.
        let sockets = try (0..<12).map { _ in try UDPSocket(host: "127.0.0.1", port: 0) }
        defer { for s in sockets { s.close() } }
        #expect(g.check(from: sockets[0], nominate: false))
        let asked = try #require(g.serversCheck(at: sockets[0]), "the server checks the address before media go there")
        #expect(g.answer(asked, from: sockets[0]))
        #expect(eventually(3) { g.mediaAddresses == ["\(sockets[0].localAddress)"] }, "\(g.mediaAddresses)")
        for (n, socket) in sockets.enumerated().dropFirst() { #expect(g.check(from: socket, nominate: false), "check \(n) answered") }
        // An RTP-shaped datagram from each in turn: from one of the leg's addresses it reaches the
        // leg (and is dropped there, before its handshake); from any other it is an unknown source.
        func dropped(_ reason: String) -> Int { g.metric(#"callroom_webrtc_packets_dropped_total{reason="\#(reason)"}"#) }
        var taken: [Int] = []
        for (n, socket) in sockets.enumerated() {
            #expect(socket.send([0x80, 0x6f] + [UInt8](repeating: 0, count: 10), to: g.address))
            #expect(eventually(3) { dropped("beforeHandshake") + dropped("unknown_source") == n + 1 })
            if dropped("beforeHandshake") > taken.count { taken.append(n) }
        }
        #expect(taken == [0, 5, 6, 7, 8, 9, 10, 11], "the address carrying media and the seven newest")
        #expect(g.mediaAddresses.count == 1, "no other address took the media: \(g.mediaAddresses)")
    }

    /// A DTLS handshake's first flight (the certificate: several times the ClientHello that asks
    /// for it) goes only to an address that answered a check of ours: to another it waits for
    /// that answer, so a forged ClientHello reflects nothing larger than the check.
    @Test func aHandshakeFlightWaitsForItsAddressToAnswer() throws {
        let g = try Gateway()
        defer { g.stop() }
        let browser = try UDPSocket(host: "127.0.0.1", port: 0), other = try UDPSocket(host: "127.0.0.1", port: 0)
        defer { browser.close(); other.close() }
        #expect(g.connect(browser))
        // Another address passes a check (not nominated: nothing asked of it yet), then sends a ClientHello.
        #expect(g.check(from: other, nominate: false))
        let identity = try SelfSignedCertificate.generate(commonName: "browser", dnsNames: [], ipAddresses: [])
        let client = try DTLSEndpoint(role: .client, identity: identity, remoteFingerprint: g.serverFingerprint)
        #expect(other.send(try client.start(), to: g.address))
        let asked = try #require(g.serversCheck(at: other), "the ClientHello's address is asked")
        #expect(g.nonSTUN(at: other, timeoutMs: 700) == nil, "no flight before it answers")
        #expect(g.answer(asked, from: other))
        let flight = try #require(g.nonSTUN(at: other, timeoutMs: 3000), "the flight, once it answered")
        #expect((20...63).contains(flight[0]), "a DTLS record")
        #expect(g.mediaAddresses == ["\(browser.localAddress)"], "answering moves no media where none was nominated")
    }

    /// ICE-lite answers checks and runs none: a browser that can forge its source address could
    /// nominate a third party's, and the room's media would go there. The server asks every
    /// address itself before media go to it; the third party never answers (it never saw a
    /// check of the browser's), so media stay where they were.
    @Test func aNominationFromAnAddressThatCannotAnswerMovesNoMedia() throws {
        let g = try Gateway()
        defer { g.stop() }
        let browser = try UDPSocket(host: "127.0.0.1", port: 0), victim = try UDPSocket(host: "127.0.0.1", port: 0)
        defer { browser.close(); victim.close() }
        #expect(g.connect(browser), "media go to the address once it answered, not before: \(g.mediaAddresses)")
        // The forged nomination (here: from a socket that stays silent, as the third party would).
        #expect(g.check(from: victim, nominate: true))
        let asked = try #require(g.serversCheck(at: victim), "asked, not trusted")
        #expect(g.serversCheck(at: victim, timeoutMs: 1000) != nil, "asked again when no answer came")
        #expect(g.mediaAddresses == ["\(browser.localAddress)"], "media stay with the address that answered")
        // (Counted just after the send: the copy can be read first.)
        #expect(eventually(3) { g.metric(#"callroom_webrtc_address_checks_total{outcome="sent"}"#) >= 3 })
        // A browser that really moved there answers, and its media follow.
        #expect(g.answer(asked, from: victim))
        #expect(eventually(3) { g.mediaAddresses == ["\(browser.localAddress)", "\(victim.localAddress)"] }, "\(g.mediaAddresses)")
        #expect(eventually(3) { g.metric(#"callroom_webrtc_address_checks_total{outcome="answered"}"#) == 2 })
    }

    /// A check forged from someone else's address earns that address the server's check (sent six
    /// times over 3 s, unanswered); more forged checks from it within 10 s earn it no more checks.
    @Test func anAddressThatNeverAnsweredIsNotAskedAgainForAWhile() throws {
        let g = try Gateway()
        defer { g.stop() }
        let browser = try UDPSocket(host: "127.0.0.1", port: 0), victim = try UDPSocket(host: "127.0.0.1", port: 0)
        defer { browser.close(); victim.close() }
        #expect(g.connect(browser))
        #expect(g.check(from: victim, nominate: true))
        var asked = 0
        while g.serversCheck(at: victim, timeoutMs: 4000) != nil { asked += 1 }
        #expect(asked == 6, "six sends, then given up")
        let unanswered = #"callroom_webrtc_address_checks_total{outcome="unanswered"}"#, sent = #"callroom_webrtc_address_checks_total{outcome="sent"}"#
        #expect(eventually(3) { g.metric(unanswered) == 1 })
        let sentBefore = g.metric(sent)
        for _ in 0..<3 { #expect(g.check(from: victim, nominate: true), "its checks are still answered (1:1)") }
        #expect(g.serversCheck(at: victim, timeoutMs: 1000) == nil, "not asked again so soon")
        #expect(g.metric(sent) == sentBefore)
        #expect(g.mediaAddresses == ["\(browser.localAddress)"])
    }

    /// Consent freshness (RFC 7675): the address a leg's media go to is asked again every
    /// interval. While it answers, the media stay; when it stops answering for the timeout they
    /// stop — said once, and the address is asked no more — and its old answers no longer count:
    /// the browser's next nomination of it is asked again before the media return.
    @Test func mediaStopWhenTheirAddressStopsAnsweringConsentChecks() throws {
        let g = try Gateway { $0.mediaConsentIntervalMs = 300; $0.mediaConsentTimeoutMs = 1500 }
        defer { g.stop() }
        let browser = try UDPSocket(host: "127.0.0.1", port: 0)
        defer { browser.close() }
        let here = "\(browser.localAddress)", expired = "callroom_webrtc_consent_expired_total"
        #expect(g.connect(browser))
        // Every check answered for twice the timeout: consent kept.
        var answered = 0
        let until = Date().addingTimeInterval(3)
        while Date() < until {
            if let asked = g.serversCheck(at: browser, timeoutMs: 700), g.answer(asked, from: browser) { answered += 1 }
        }
        #expect(answered >= 6, "asked about every 0.3 s: \(answered) in 3 s")
        #expect(g.metric(expired) == 0 && g.logged("browser leg's media stop") == 0, "consent kept while it answers")
        // Silent from now: its media stop once the timeout has passed since its last answer.
        let silentFrom = Date()
        #expect(eventually(4) { g.metric(expired) == 1 })
        #expect(Date().timeIntervalSince(silentFrom) > 1.0, "not before the timeout")
        #expect(g.logged("browser leg's media stop") == 1)
        // The checks still on their way end; after them nothing more is asked of it.
        while g.serversCheck(at: browser, timeoutMs: 1000) != nil {}
        #expect(g.serversCheck(at: browser, timeoutMs: 1500) == nil, "an address without consent is asked no more")
        // The browser nominates it again: asked first, and once it answers the media return.
        #expect(g.check(from: browser, nominate: true))
        let asked = try #require(g.serversCheck(at: browser), "its old answers no longer count")
        #expect(g.mediaAddresses == [here])
        #expect(g.answer(asked, from: browser))
        #expect(eventually(3) { g.mediaAddresses == [here, here] }, "\(g.mediaAddresses)")
        #expect(g.metric(expired) == 1)
    }
}
