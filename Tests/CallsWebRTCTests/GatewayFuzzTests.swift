import CallRoomTestSupport
import CallsCore
import CallsSecurity
import CallsTransport
import CallsWebRTC
import CZlib
import Foundation
import Testing

/// The WebRTC port takes datagrams from anyone: random bytes, checks and responses mutated at
/// random (a fixed seed: the same datagrams every run; half of them with their FINGERPRINT made
/// right again, so that their MESSAGE-INTEGRITY is what refuses them), STUN headers over nonsense attributes,
/// DTLS- and RTP-shaped junk from a leg's own address. They reach libnice's STUN parser, the
/// ICE responder, OpenSSL's DTLS and libsrtp — C, all of it. The server keeps running, refuses
/// them, and the leg they were aimed at is untouched: its media stay where they went, and its
/// browser is answered as before.
@Suite("WebRTC gateway: hostile datagrams")
struct GatewayFuzzTests {
    /// `bytes` changed one to four ways: bytes flipped, cut short, grown, the STUN length
    /// rewritten, an attribute's length rewritten.
    static func mutate(_ bytes: [UInt8], _ g: inout SplitMix64) -> [UInt8] {
        var b = bytes
        for _ in 0..<Int.random(in: 1...4, using: &g) {
            switch Int.random(in: 0..<6, using: &g) {
            case 0 where !b.isEmpty: b[Int.random(in: 0..<b.count, using: &g)] ^= UInt8.random(in: 1...255, using: &g)
            case 1: b = Array(b.prefix(Int.random(in: 0...b.count, using: &g)))
            case 2: b += (0..<Int.random(in: 1...64, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
            case 3 where b.count >= 4:
                let n = UInt16.random(in: 0...UInt16.max, using: &g) & ~3
                b[2] = UInt8(n >> 8); b[3] = UInt8(n & 0xFF)
            case 4 where b.count >= 24:
                // The first attribute's length (after the 20-byte header).
                b[22] = UInt8.random(in: 0...255, using: &g); b[23] = UInt8.random(in: 0...255, using: &g)
            default: if !b.isEmpty { b.remove(at: Int.random(in: 0..<b.count, using: &g)) }
            }
        }
        return b
    }

    /// `bytes` with its FINGERPRINT made right again (when it ends in one), so that what
    /// refuses a mutation is the MESSAGE-INTEGRITY check, not the CRC in front of it.
    static func refingerprint(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= 28, Array(bytes[(bytes.count - 8)..<(bytes.count - 4)]) == [0x80, 0x28, 0x00, 0x04] else { return bytes }
        var b = bytes
        let crc = UInt32(truncatingIfNeeded: b.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count - 8)) }) ^ 0x5354_554E
        for i in 0..<4 { b[b.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * UInt32(i))) }
        return b
    }

    /// A STUN header (a Binding request, success or error response, an indication, or any type)
    /// with the magic cookie, then attributes of random types and lengths, the header's length
    /// matching them (so it passes the first look).
    static func nonsenseSTUN(_ g: inout SplitMix64) -> [UInt8] {
        var body: [UInt8] = []
        for _ in 0..<Int.random(in: 0...8, using: &g) {
            let type = [0x0006, 0x0008, 0x8028, 0x0024, 0x0025, 0x8029, 0x802A, 0x0020, 0x0009, 0x0014, 0x0015,
                        Int.random(in: 0...0xFFFF, using: &g)].randomElement(using: &g) ?? 0
            let length = Int.random(in: 0...48, using: &g)
            body += [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)]
            body += (0..<((length + 3) & ~3)).map { _ in UInt8.random(in: 0...255, using: &g) }
        }
        let type = [0x0001, 0x0101, 0x0111, 0x0011, Int.random(in: 0...0x3FFF, using: &g)].randomElement(using: &g) ?? 1
        return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(body.count >> 8), UInt8(body.count & 0xFF), 0x21, 0x12, 0xA4, 0x42]
            + (0..<12).map { _ in UInt8.random(in: 0...255, using: &g) } + body
    }

    @Test func junkFromAnyoneLeavesTheLegAsItWas() throws {
        let g = try GatewayAddressTests.Gateway()
        defer { g.stop() }
        let browser = try UDPSocket(host: "127.0.0.1", port: 0), other = try UDPSocket(host: "127.0.0.1", port: 0),
            stranger = try UDPSocket(host: "127.0.0.1", port: 0)
        defer { browser.close(); other.close(); stranger.close() }
        #expect(g.connect(browser))
        // Material to mutate: a valid check of the browser's, a server's check of another address
        // it nominated with the browser's valid answer (never sent: that check stays awaited, and
        // no mutation of its answer may move the media there), a ClientHello.
        let check = ICELiteResponderTests.Browser(password: g.serverPassword)
            .check(username: "\(g.ufrag):\(GatewayAddressTests.Gateway.browserUfrag)", nominate: true)
        #expect(g.check(from: other, nominate: true))
        let asked = try #require(g.serversCheck(at: other))
        let answer = try #require(ICELiteResponderTests.Browser(password: GatewayAddressTests.Gateway.browserPassword)
            .answer(asked, username: "\(GatewayAddressTests.Gateway.browserUfrag):\(g.ufrag)", from: g.address))
        let identity = try SelfSignedCertificate.generate(commonName: "fuzz", dnsNames: [], ipAddresses: [])
        let hello = try DTLSEndpoint(role: .client, identity: identity, remoteFingerprint: g.serverFingerprint).start()

        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["GATEWAY_FUZZ_SEED"] ?? "") ?? 37)
        let n = Int(ProcessInfo.processInfo.environment["GATEWAY_FUZZ_N"] ?? "") ?? 6000
        let refusedBefore = g.metric(#"callroom_webrtc_stun_total{outcome="refused"}"#)
        var mutatedValid = 0
        for i in 0..<n {
            let d: [UInt8]
            switch i % 6 {
            case 0: d = (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 1: d = Bool.random(using: &rng) ? Self.refingerprint(Self.mutate(check, &rng)) : Self.mutate(check, &rng)
            case 2: d = Self.nonsenseSTUN(&rng)
            case 3: d = Bool.random(using: &rng) ? Self.refingerprint(Self.mutate(answer, &rng)) : Self.mutate(answer, &rng)
            case 4: d = Self.mutate(hello, &rng)
            default: d = [UInt8.random(in: 0x80...0xBF, using: &rng), UInt8.random(in: 0...255, using: &rng)]
                + (0..<Int.random(in: 10...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            if d == check || d == answer { mutatedValid += 1; continue }  // (a mutation that changed nothing)
            // From the leg's own addresses (its DTLS and SRTP parse them) and from a stranger.
            let from = [browser, other, stranger][Int.random(in: 0..<3, using: &rng)]
            #expect(from.send(d, to: g.address))
            if i % 200 == 199 {
                for s in [browser, other, stranger] { while s.receiveCopy(timeoutMs: 0) != nil {} }
                usleep(2000)  // (the port's receive buffer is not the subject)
            }
        }
        // Still serving: a fresh valid check answered, the pending one still answerable, and the
        // junk refused, not taken for anything.
        #expect(g.check(from: browser, nominate: false), "the browser is answered after the junk")
        #expect(g.metric(#"callroom_webrtc_stun_total{outcome="refused"}"#) > refusedBefore + n / 10, "the junk is refused and counted")
        #expect(g.mediaAddresses == ["\(browser.localAddress)"], "no junk moved the leg's media: \(g.mediaAddresses)")
        #expect(g.h.server.metricsText().contains("callroom_webrtc_legs 1"))
        print("gateway fuzz: \(n) datagrams (\(mutatedValid) unchanged by their mutation, not sent)")
    }
}
