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
