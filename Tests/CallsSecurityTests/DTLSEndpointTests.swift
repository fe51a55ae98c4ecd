import CallsSecurity
import Foundation
import Testing

@Suite("DTLS-SRTP: a handshake over datagrams, the peer's fingerprint checked, the SRTP keys exported")
struct DTLSEndpointTests {
    static func identity(_ name: String) throws -> TLSIdentity {
        try SelfSignedCertificate.generate(commonName: name, dnsNames: [], ipAddresses: [])
    }

    /// Carries each side's output to the other until both are connected (or `rounds` pass).
    static func handshake(_ client: DTLSEndpoint, _ server: DTLSEndpoint, rounds: Int = 10) throws -> Int {
        var toServer = try client.start()
        var datagrams = 0
        for _ in 0..<rounds where !(client.isConnected && server.isConnected) {
            let toClient = toServer.isEmpty ? [] : try server.receive(toServer)
            datagrams += toServer.isEmpty ? 0 : 1
            toServer = toClient.isEmpty ? [] : try client.receive(toClient)
            datagrams += toClient.isEmpty ? 0 : 1
        }
        return datagrams
    }

    @Test func bothSidesAgreeOnTheProfileAndEachOthersKeys() throws {
        let a = try Self.identity("browser"), b = try Self.identity("callroomd")
        let client = try DTLSEndpoint(role: .client, identity: a, remoteFingerprint: b.fingerprint.lowercased())
        let server = try DTLSEndpoint(role: .server, identity: b, remoteFingerprint: a.fingerprint)
        #expect(try server.receive([]) == [], "nothing to say before a ClientHello")
        let datagrams = try Self.handshake(client, server)
        #expect(client.isConnected && server.isConnected)
        #expect(datagrams <= 4, "two round trips (\(datagrams) datagrams)")
        let c = try client.srtpKeys(), s = try server.srtpKeys()
        #expect(c.profile == .aeadAES128GCM, "AES-GCM preferred when both offer it")
        #expect(c.local.count == 28 && c.remote.count == 28, "16-byte key and 12-byte salt each")
        #expect(c.local == s.remote && c.remote == s.local, "each side's sending key is the other's receiving key")
        #expect(c.local != c.remote)
        // A second association never repeats the keys.
        let client2 = try DTLSEndpoint(role: .client, identity: a, remoteFingerprint: b.fingerprint)
        let server2 = try DTLSEndpoint(role: .server, identity: b, remoteFingerprint: a.fingerprint)
        _ = try Self.handshake(client2, server2)
        #expect(try client2.srtpKeys().local != c.local)
    }

    @Test func aCertificateOtherThanTheDescribedOneFailsTheHandshake() throws {
        let a = try Self.identity("browser"), b = try Self.identity("callroomd"), mallory = try Self.identity("mallory")
        let client = try DTLSEndpoint(role: .client, identity: mallory, remoteFingerprint: b.fingerprint)
        let server = try DTLSEndpoint(role: .server, identity: b, remoteFingerprint: a.fingerprint)
        let outcome = Result { try Self.handshake(client, server) }
        #expect(throws: DTLSError.fingerprintMismatch(expected: a.fingerprint, got: mallory.fingerprint)) { try outcome.get() }
        #expect(!server.isConnected)
        #expect(throws: DTLSError.notConnected) { try server.srtpKeys() }
    }

    @Test func garbageIsAHandshakeErrorNotACrash() throws {
        let a = try Self.identity("browser"), b = try Self.identity("callroomd")
        let server = try DTLSEndpoint(role: .server, identity: b, remoteFingerprint: a.fingerprint)
        var rng = SystemRandomNumberGenerator()
        for size in [1, 13, 25, 200, 1500] {
            // A DTLS handshake record's header, then noise.
            let junk = [0x16, 0xFE, 0xFD] + (0..<max(0, size - 3)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let result = Result { () throws(DTLSError) -> [UInt8] in try server.receive(Array(junk.prefix(size))) }
            if case .failure(let e) = result, !e.isHandshake { Issue.record("\(e)") }
        }
        #expect(!server.isConnected)
    }
}

extension DTLSError {
    var isHandshake: Bool { if case .handshake = self { return true }; return false }
}

@Suite("SRTP with a browser: keys from the DTLS handshake, no MKI, RTP and RTCP both ways")
struct PeerSRTPSessionTests {
    /// An RTP packet: version 2, payload type 111, `seq`, a timestamp, SSRC, 20 payload bytes.
    static func rtp(seq: UInt16, ssrc: UInt32 = 0x1234_5678) -> [UInt8] {
        [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0x03, 0xC0] +
            [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)] + (0..<20).map { UInt8($0) }
    }

    /// A receiver report with no blocks (RTCP PT 201), from `ssrc`.
    static func rtcp(ssrc: UInt32 = 0x0A0B_0C0D) -> [UInt8] {
        [0x80, 201, 0, 1, UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
    }

    static func connectedPair() throws -> (client: DTLSSRTPKeys, server: DTLSSRTPKeys) {
        let a = try DTLSEndpointTests.identity("browser"), b = try DTLSEndpointTests.identity("callroomd")
        let client = try DTLSEndpoint(role: .client, identity: a, remoteFingerprint: b.fingerprint)
        let server = try DTLSEndpoint(role: .server, identity: b, remoteFingerprint: a.fingerprint)
        _ = try DTLSEndpointTests.handshake(client, server)
        return (try client.srtpKeys(), try server.srtpKeys())
    }

    /// Protects `packet` on `from` and unprotects it on `to`; returns what came out.
    static func roundTrip(_ packet: [UInt8], _ from: PeerSRTPSession, _ to: PeerSRTPSession, rtcp: Bool = false) throws -> (wire: Int, out: [UInt8]) {
        var buffer = packet + [UInt8](repeating: 0, count: 32)
        let wire = try buffer.withUnsafeMutableBytes { b in
            rtcp ? try from.protectRTCP(b, length: packet.count) : try from.protect(b, length: packet.count)
        }
        #expect(wire > packet.count, "a tag was added")
        if !rtcp { #expect(Array(buffer[12..<packet.count]) != Array(packet[12...]), "the payload is encrypted") }
        let n = try buffer.withUnsafeMutableBytes { b in
            rtcp ? try to.unprotectRTCP(b, length: wire) : try to.unprotect(b, length: wire)
        }
        return (wire, Array(buffer.prefix(n)))
    }

    @Test func mediaAndReportsGoBothWaysUnderTheHandshakesKeys() throws {
        let (c, s) = try Self.connectedPair()
        let browser = try PeerSRTPSession(keys: c), gateway = try PeerSRTPSession(keys: s)
        for seq in UInt16(1)...5 {
            let sent = Self.rtp(seq: seq)
            let up = try Self.roundTrip(sent, browser, gateway)
            #expect(up.out == sent && up.wire == sent.count + 16, "AES-GCM: a 16-byte tag, no MKI")
            let down = try Self.roundTrip(Self.rtp(seq: seq, ssrc: 0x5555_0001), gateway, browser)
            #expect(down.out == Self.rtp(seq: seq, ssrc: 0x5555_0001))
        }
        let report = Self.rtcp()
        #expect(try Self.roundTrip(report, browser, gateway, rtcp: true).out == report)
        #expect(try Self.roundTrip(report, gateway, browser, rtcp: true).out == report)
    }

    @Test func aTamperedOrReplayedPacketIsRefused() throws {
        let (c, s) = try Self.connectedPair()
        let browser = try PeerSRTPSession(keys: c), gateway = try PeerSRTPSession(keys: s)
        let packet = Self.rtp(seq: 9)
        var buffer = packet + [UInt8](repeating: 0, count: 32)
        let wire = try buffer.withUnsafeMutableBytes { try browser.protect($0, length: packet.count) }
        let protected = Array(buffer.prefix(wire))
        var tampered = protected
        tampered[20] ^= 1
        #expect(throws: SRTPError.authenticationFailed) { try tampered.withUnsafeMutableBytes { try gateway.unprotect($0, length: wire) } }
        var once = protected
        _ = try once.withUnsafeMutableBytes { try gateway.unprotect($0, length: wire) }
        var again = protected
        #expect(throws: SRTPError.replayed) { try again.withUnsafeMutableBytes { try gateway.unprotect($0, length: wire) } }
        // The gateway's own sending key does not open what the browser sends (the directions are keyed apart).
        let mirror = try PeerSRTPSession(keys: DTLSSRTPKeys(profile: c.profile, local: c.remote, remote: c.remote))
        var other = protected
        #expect(throws: SRTPError.authenticationFailed) { try other.withUnsafeMutableBytes { try mirror.unprotect($0, length: wire) } }
    }

    @Test func theAESCMProfileWorksTooWithItsTenByteTag() throws {
        let k = (0..<30).map { UInt8($0) }, r = (0..<30).map { UInt8(100 + $0) }
        let a = try PeerSRTPSession(keys: DTLSSRTPKeys(profile: .aes128CMSHA1_80, local: k, remote: r))
        let b = try PeerSRTPSession(keys: DTLSSRTPKeys(profile: .aes128CMSHA1_80, local: r, remote: k))
        let sent = Self.rtp(seq: 1)
        let trip = try Self.roundTrip(sent, a, b)
        #expect(trip.out == sent && trip.wire == sent.count + 10)
        #expect(throws: SRTPError.badKeyLength(expected: 30, got: 28)) {
            try PeerSRTPSession(keys: DTLSSRTPKeys(profile: .aes128CMSHA1_80, local: Array(k.prefix(28)), remote: r))
        }
    }
}
