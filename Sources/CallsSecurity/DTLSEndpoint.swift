import CallsCore
import COpenSSL

/// One DTLS-SRTP association (RFC 5764), as a browser's WebRTC media needs (issue #37): a DTLS
/// 1.2 handshake with OpenSSL over datagrams the caller carries (memory BIOs: no socket here),
/// the `use_srtp` extension choosing the SRTP profile, the peer's certificate checked against
/// the fingerprint its session description gave, and the SRTP master keys exported from the
/// handshake (`EXTRACTOR-dtls_srtp`).
///
/// ```
///  peer's datagram ─▶ receive ─▶ OpenSSL (handshake) ─▶ datagrams to send back
///                                   └─ finished: fingerprint checked ─▶ keys (ours, theirs)
/// ```
/// Owns its OpenSSL context and connection (freed on deinit).
///
/// Thread rules: one thread at a time (the worker serving that peer); not Sendable.
public final class DTLSEndpoint {
    public enum Role: Sendable, Equatable {
        /// Waits for the peer's ClientHello (`a=setup:passive`, what a gateway answers).
        case server
        /// Starts the handshake (`a=setup:active`).
        case client
    }

    /// The SRTP profiles offered, in preference order (RFC 7714's AES-GCM first).
    public static let profiles = "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80"
    /// Records sized for datagrams of this many bytes (under any path's MTU with room for ICE/TURN).
    public static let mtu = 1200

    public let role: Role
    private let context: OpaquePointer
    private let connection: OpaquePointer
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    private let expectedFingerprint: String
    private var finished = false

    /// - Parameters:
    ///   - identity: our certificate and key (`SelfSignedCertificate.generate`); its fingerprint
    ///     is what our session description says.
    ///   - remoteFingerprint: the peer's SHA-256 fingerprint from its session description
    ///     (`AB:CD:…`, any case); a handshake with any other certificate fails.
    public init(role: Role, identity: TLSIdentity, remoteFingerprint: String) throws(DTLSError) {
        guard let ctx = SSL_CTX_new(DTLS_method()) else { throw .library("SSL_CTX_new") }
        var ok = false
        defer { if !ok { SSL_CTX_free(ctx) } }
        guard callroom_dtls_require_1_2(ctx) == 1 else { throw .library("DTLS 1.2") }
        let cert = try Self.load(identity)
        defer { X509_free(cert.certificate); EVP_PKEY_free(cert.key) }
        guard SSL_CTX_use_certificate(ctx, cert.certificate) == 1, SSL_CTX_use_PrivateKey(ctx, cert.key) == 1,
              SSL_CTX_check_private_key(ctx) == 1 else { throw .library("the certificate and key") }
        // (0 is success for this one.)
        guard SSL_CTX_set_tlsext_use_srtp(ctx, Self.profiles) == 0 else { throw .library("use_srtp") }
        callroom_dtls_require_peer_certificate(ctx)
        guard let ssl = SSL_new(ctx) else { throw .library("SSL_new") }
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else { SSL_free(ssl); throw .library("BIO_new") }
        SSL_set_bio(ssl, rbio, wbio)  // the connection owns both now
        _ = callroom_dtls_set_mtu(ssl, Self.mtu)
        switch role {
        case .server:
            SSL_set_accept_state(ssl)
            callroom_dtls_use_server_timer(ssl)
        case .client: SSL_set_connect_state(ssl)
        }
        self.role = role
        context = ctx
        connection = ssl
        incoming = rbio
        outgoing = wbio
        expectedFingerprint = remoteFingerprint.uppercased()
        ok = true
    }

    deinit {
        SSL_free(connection)
        SSL_CTX_free(context)
    }

    /// Whether the handshake finished (and the peer's certificate matched).
    public var isConnected: Bool { finished }

    /// The client's first flight (a server sends nothing until it hears one).
    public func start() throws(DTLSError) -> [UInt8] {
        try advance()
    }

    /// One datagram from the peer: handshake records advance the handshake; returns what to send
    /// back (empty: nothing). After the handshake, application data is not expected (media is
    /// SRTP, demultiplexed before it reaches here) and is dropped.
    /// - Throws: `DTLSError.handshake` for records OpenSSL refuses, `.fingerprintMismatch` when
    ///   the peer's certificate is not the one its description named.
    public func receive(_ datagram: [UInt8]) throws(DTLSError) -> [UInt8] {
        guard !datagram.isEmpty, datagram.count <= 65_535 else { return [] }
        _ = datagram.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        return try advance()
    }

    /// Runs the handshake as far as it goes and collects what OpenSSL wrote.
    private func advance() throws(DTLSError) -> [UInt8] {
        if !finished {
            let r = SSL_do_handshake(connection)
            if r == 1 {
                try checkPeer()
                finished = true
            } else {
                let e = SSL_get_error(connection, r)
                if e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE {
                    let reason = Self.openSSLError()
                    throw .handshake(reason)
                }
            }
        } else {
            var sink = [UInt8](repeating: 0, count: 2048)
            while sink.withUnsafeMutableBytes({ SSL_read(connection, $0.baseAddress, Int32($0.count)) }) > 0 {}
            ERR_clear_error()
        }
        return written()
    }

    /// The last flight again when its retransmission timer ran out, else nothing (RFC 6347
    /// §4.2.4). A server's timer starts at 100 ms and doubles to 4 s; a client's is OpenSSL's
    /// (1 s). Call it now and then until the handshake finishes: without it a lost flight is
    /// resent only when the peer resends its own.
    /// - Throws: `DTLSError.handshake` when OpenSSL gives up (too many timeouts).
    public func retransmitIfDue() throws(DTLSError) -> [UInt8] {
        guard !finished else { return [] }
        if callroom_dtls_handle_timeout(connection) < 0 { throw .handshake(Self.openSSLError()) }
        return written()
    }

    /// What OpenSSL wrote for the peer since the last call.
    private func written() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(outgoing))
        guard pending > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: pending)
        let n = out.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress, Int32($0.count)) }
        return n > 0 ? Array(out.prefix(Int(n))) : []
    }

    private func checkPeer() throws(DTLSError) {
        guard let peer = SSL_get1_peer_certificate(connection) else { throw .fingerprintMismatch(expected: expectedFingerprint, got: "none") }
        defer { X509_free(peer) }
        let got: String
        do { got = try SelfSignedCertificate.fingerprint(peer) } catch { throw .library("X509_digest") }
        guard Crypto.constantTimeEqual(Array(got.utf8), Array(expectedFingerprint.utf8)) else {
            throw .fingerprintMismatch(expected: expectedFingerprint, got: got)
        }
    }

    /// The SRTP profile the handshake chose and the master keys (key ‖ salt) each side protects
    /// its packets with; after the handshake only.
    public func srtpKeys() throws(DTLSError) -> DTLSSRTPKeys {
        guard finished else { throw .notConnected }
        guard let chosen = SSL_get_selected_srtp_profile(connection) else { throw .noSRTPProfile }
        let profile: DTLSSRTPKeys.Profile
        switch chosen.pointee.id {
        case UInt(SRTP_AEAD_AES_128_GCM): profile = .aeadAES128GCM
        case UInt(SRTP_AES128_CM_SHA1_80): profile = .aes128CMSHA1_80
        default: throw .noSRTPProfile
        }
        let k = profile.keyLength, s = profile.saltLength
        var material = [UInt8](repeating: 0, count: 2 * (k + s))
        let label = "EXTRACTOR-dtls_srtp"
        let ok = material.withUnsafeMutableBytes { out in
            SSL_export_keying_material(connection, out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count,
                                       label, label.utf8.count, nil, 0, 0)
        }
        guard ok == 1 else { throw .library("SSL_export_keying_material") }
        // RFC 5764 §4.2: client key ‖ server key ‖ client salt ‖ server salt.
        let client = Array(material[0..<k]) + Array(material[(2 * k)..<(2 * k + s)])
        let server = Array(material[k..<(2 * k)]) + Array(material[(2 * k + s)..<(2 * k + 2 * s)])
        return DTLSSRTPKeys(profile: profile, local: role == .client ? client : server, remote: role == .client ? server : client)
    }

    private static func load(_ identity: TLSIdentity) throws(DTLSError) -> (certificate: OpaquePointer, key: OpaquePointer) {
        let cert: OpaquePointer
        do { cert = try SelfSignedCertificate.readCertificate(identity.certificatePEM) } catch { throw .library("the certificate is not PEM") }
        guard let key = SelfSignedCertificate.withBIO(identity.privateKeyPEM, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            X509_free(cert)
            ERR_clear_error()
            throw .library("the private key is not PEM")
        }
        return (cert, key)
    }

    private static func openSSLError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "the handshake failed" }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// What a DTLS-SRTP handshake gives the media path: the profile and the two master keys.
public struct DTLSSRTPKeys: Sendable, Equatable {
    public enum Profile: Sendable, Equatable {
        /// RFC 7714: 16-byte key, 12-byte salt.
        case aeadAES128GCM
        /// RFC 3711: 16-byte key, 14-byte salt.
        case aes128CMSHA1_80

        public var keyLength: Int { 16 }
        public var saltLength: Int {
            switch self {
            case .aeadAES128GCM: return 12
            case .aes128CMSHA1_80: return 14
            }
        }
    }

    public var profile: Profile
    /// Key ‖ salt we protect what we send with.
    public var local: [UInt8]
    /// Key ‖ salt the peer protects what it sends with.
    public var remote: [UInt8]

    public init(profile: Profile, local: [UInt8], remote: [UInt8]) {
        self.profile = profile
        self.local = local
        self.remote = remote
    }
}

/// Why a DTLS-SRTP association failed. Messages carry no key material.
public enum DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    case library(String)
    case handshake(String)
    case fingerprintMismatch(expected: String, got: String)
    case noSRTPProfile
    case notConnected

    public var description: String {
        switch self {
        case .library(let what): return "DTLS: OpenSSL refused \(what)"
        case .handshake(let why): return "DTLS handshake failed: \(why)"
        case .fingerprintMismatch(let e, let g): return "DTLS: the peer's certificate is \(g), its description said \(e)"
        case .noSRTPProfile: return "DTLS: no SRTP profile in common"
        case .notConnected: return "DTLS: the handshake has not finished"
        }
    }
}
