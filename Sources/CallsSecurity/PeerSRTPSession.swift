import CallsCore
import CSRTP

/// SRTP and SRTCP with one WebRTC peer (a browser), keyed by its DTLS handshake (RFC 5764): two
/// libsrtp sessions (libsrtp holds one any-SSRC template per session) — everything we send to
/// the peer under our key (`ssrc_any_outbound`), everything it sends under its key
/// (`ssrc_any_inbound`) — with no MKI, as browsers send. (Native CallRoom clients' keys come
/// over signalling and carry an MKI per epoch: `SRTPSender`/`SRTPReceiver`.) The sessions are
/// owned and freed with the object.
///
/// Thread rules: one thread at a time (the worker serving that peer); not Sendable.
public final class PeerSRTPSession {
    public let profile: DTLSSRTPKeys.Profile
    private let outbound: OpaquePointer
    private let inbound: OpaquePointer

    /// Bytes `protect` may add to an RTP packet (the tag; AES-CM's is 10, GCM's 16).
    public static let maxRTPOverhead = 16
    /// Bytes `protectRTCP` may add (the tag and the 4-byte SRTCP index).
    public static let maxRTCPOverhead = 20

    public init(keys: DTLSSRTPKeys) throws(SRTPError) {
        guard SRTPLibrary.ready else { throw .library("srtp_init", -1) }
        let length = keys.profile.keyLength + keys.profile.saltLength
        guard keys.local.count == length, keys.remote.count == length else {
            throw .badKeyLength(expected: length, got: keys.local.count == length ? keys.remote.count : keys.local.count)
        }
        let out = try Self.session(keys.profile, key: keys.local, direction: ssrc_any_outbound)
        do { inbound = try Self.session(keys.profile, key: keys.remote, direction: ssrc_any_inbound) } catch {
            srtp_dealloc(out)
            throw error
        }
        outbound = out
        profile = keys.profile
    }

    deinit {
        srtp_dealloc(outbound)
        srtp_dealloc(inbound)
    }

    /// Encrypts the RTP packet in `buffer[0..<length]` in place and appends its tag; `buffer`
    /// needs `maxRTPOverhead` bytes of room past `length`. Returns the protected length.
    public func protect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try Self.apply(srtp_protect, "srtp_protect", outbound, buffer, length: length, minimum: 12, room: Self.maxRTPOverhead)
    }

    /// Verifies and decrypts the peer's SRTP packet in `buffer[0..<length]` in place; returns
    /// the RTP length.
    public func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try Self.apply(srtp_unprotect, "srtp_unprotect", inbound, buffer, length: length, minimum: 12, room: 0)
    }

    /// `protect` for an RTCP compound packet (receiver reports, NACK, PLI, REMB).
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try Self.apply(srtp_protect_rtcp, "srtp_protect_rtcp", outbound, buffer, length: length, minimum: 8, room: Self.maxRTCPOverhead)
    }

    /// `unprotect` for the peer's SRTCP.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try Self.apply(srtp_unprotect_rtcp, "srtp_unprotect_rtcp", inbound, buffer, length: length, minimum: 8, room: 0)
    }

    /// Runs one of libsrtp's in-place calls on `buffer[0..<length]` (at least `minimum` bytes,
    /// `room` more past it for what the call adds); returns the new length.
    private static func apply(_ call: (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t,
                              _ name: String, _ session: OpaquePointer, _ buffer: UnsafeMutableRawBufferPointer,
                              length: Int, minimum: Int, room: Int) throws(SRTPError) -> Int {
        guard length >= minimum, length <= buffer.count, buffer.count >= length + room, let base = buffer.baseAddress else { throw .badPacket }
        var n = Int32(length)
        let status = call(session, base, &n)
        guard status == srtp_err_status_ok else { throw SRTPError(status: status, call: name) }
        return Int(n)
    }

    /// A session with one any-SSRC stream in `direction` under `key` (key ‖ salt).
    private static func session(_ profile: DTLSSRTPKeys.Profile, key: [UInt8], direction: srtp_ssrc_type_t) throws(SRTPError) -> OpaquePointer {
        var material = key
        var session: OpaquePointer?
        let status = material.withUnsafeMutableBufferPointer { k -> srtp_err_status_t in
            var p = policy(profile, key: k.baseAddress, direction: direction)
            return srtp_create(&session, &p)  // libsrtp copies the key
        }
        guard status == srtp_err_status_ok, let session else { throw SRTPError(status: status, call: "srtp_create") }
        return session
    }

    private static func policy(_ profile: DTLSSRTPKeys.Profile, key: UnsafeMutablePointer<UInt8>?, direction: srtp_ssrc_type_t) -> srtp_policy_t {
        var p = srtp_policy_t()
        switch profile {
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&p.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&p.rtcp)
        case .aes128CMSHA1_80:
            srtp_crypto_policy_set_rtp_default(&p.rtp)
            srtp_crypto_policy_set_rtcp_default(&p.rtcp)
        }
        p.ssrc.type = direction
        p.ssrc.value = 0
        p.key = key
        p.window_size = 1024
        // A retransmission (NACK) repeats a packet as it was: allowed on what we send.
        p.allow_repeat_tx = direction == ssrc_any_outbound ? 1 : 0
        p.next = nil
        return p
    }
}
