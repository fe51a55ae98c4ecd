import CallsCore
import CSRTP

/// An SRTP master key (key ‖ salt) and its epoch. The epoch travels in every packet as the
/// one-byte MKI (RFC 3711 §3.1), so a receiver picks the right key across a rotation.
public struct SRTPKey: Sendable, Equatable {
    public var epoch: UInt8
    public var material: [UInt8]
    public init(epoch: UInt8, material: [UInt8]) { self.epoch = epoch; self.material = material }

    /// A key as the signalling carries it; nil when it is not base64url of a master key.
    public init?(_ wire: WireMediaKey, profile: SRTPProfile = .aeadAES128GCM) {
        guard let m = Base64URL.decode(wire.key), m.count == profile.masterKeyLength else { return nil }
        self.init(epoch: wire.epoch, material: m)
    }
}

/// Why libsrtp refused a key, or a packet.
public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key material is not the profile's length.
    case badKeyLength(expected: Int, got: Int)
    /// libsrtp refused: the call and its `srtp_err_status_t`.
    case library(String, Int32)
    /// The tag did not verify (forged, tampered with, or another key).
    case authenticationFailed
    /// A packet seen before, or older than the replay window.
    case replayed
    /// No key for this sender (yet, or any more), or an epoch it does not hold.
    case unknownKey
    /// The buffer has no room for the trailer, or the packet is malformed.
    case badPacket

    public var description: String {
        switch self {
        case .badKeyLength(let e, let g): return "SRTP key is \(g) bytes; the profile needs \(e)"
        case .library(let call, let status): return "\(call) failed (srtp_err_status \(status))"
        case .authenticationFailed: return "SRTP authentication failed"
        case .replayed: return "SRTP replay"
        case .unknownKey: return "no SRTP key for this sender and epoch"
        case .badPacket: return "not an SRTP packet"
        }
    }

    init(status: srtp_err_status_t, call: String) {
        switch status {
        case srtp_err_status_auth_fail: self = .authenticationFailed
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: self = .replayed
        case srtp_err_status_no_ctx, srtp_err_status_bad_mki: self = .unknownKey
        case srtp_err_status_bad_param: self = .badPacket
        default: self = .library(call, Int32(bitPattern: status.rawValue))
        }
    }
}

extension SRTPProfile {
    fileprivate func apply(to policy: inout srtp_policy_t) {
        switch self {
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        }
    }
}

/// libsrtp's global state, initialised once for the process.
enum SRTPLibrary {
    static let ready: Bool = srtp_init() == srtp_err_status_ok

    /// Builds the policy for one SSRC holding `keys` (MKI = each key's epoch) and hands it to `body`.
    static func withPolicy<R>(profile: SRTPProfile, ssrc: UInt32, keys: [SRTPKey],
                              _ body: (UnsafePointer<srtp_policy_t>) -> R) -> R {
        var policy = srtp_policy_t()
        profile.apply(to: &policy)
        policy.ssrc.type = ssrc_specific
        policy.ssrc.value = ssrc
        policy.window_size = 1024  // 20 s of 20 ms frames: a jitter buffer's reordering never trips it
        policy.allow_repeat_tx = 0
        policy.next = nil
        // libsrtp copies the keys into the stream; these buffers live only for the call.
        let materials = keys.map { k -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: k.material.count)
            p.initialize(from: k.material, count: k.material.count)
            return p
        }
        let ids = keys.map { k -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
            p.initialize(to: k.epoch)
            return p
        }
        let masters = (0..<keys.count).map { i -> UnsafeMutablePointer<srtp_master_key_t> in
            let m = UnsafeMutablePointer<srtp_master_key_t>.allocate(capacity: 1)
            m.initialize(to: srtp_master_key_t(key: materials[i], mki_id: ids[i], mki_size: 1))
            return m
        }
        let list = UnsafeMutablePointer<UnsafeMutablePointer<srtp_master_key_t>?>.allocate(capacity: max(1, keys.count))
        for (i, m) in masters.enumerated() { (list + i).initialize(to: m) }
        defer {
            for p in materials { p.deallocate() }
            for p in ids { p.deallocate() }
            for m in masters { m.deallocate() }
            list.deallocate()
        }
        policy.keys = list
        policy.num_master_keys = UInt(keys.count)
        // The SSRC is specific: libsrtp learns each stream's direction from its first use.
        return withUnsafePointer(to: &policy) { body($0) }
    }
}

/// Protects the RTP one sender sends (one SSRC) with its current key.
///
/// Thread rules: any thread; an internal lock serialises `protect` (the capture thread) with
/// `rekey` (the signalling thread). The libsrtp session is owned and freed with the object.
public final class SRTPSender: @unchecked Sendable {
    public let profile: SRTPProfile
    public let ssrc: UInt32
    private let state: Locked<(session: OpaquePointer?, epoch: UInt8)>

    public init(profile: SRTPProfile = .aeadAES128GCM, ssrc: UInt32, key: SRTPKey) throws(SRTPError) {
        guard SRTPLibrary.ready else { throw .library("srtp_init", -1) }
        guard key.material.count == profile.masterKeyLength else {
            throw .badKeyLength(expected: profile.masterKeyLength, got: key.material.count)
        }
        var session: OpaquePointer?
        let status = SRTPLibrary.withPolicy(profile: profile, ssrc: ssrc, keys: [key]) { srtp_create(&session, $0) }
        guard status == srtp_err_status_ok, let session else { throw SRTPError(status: status, call: "srtp_create") }
        self.profile = profile
        self.ssrc = ssrc
        state = Locked((session, key.epoch))
    }

    deinit { state.withLock { s in if let p = s.session { srtp_dealloc(p) } } }

    /// The epoch of the key packets are protected with now.
    public var epoch: UInt8 { state.withLock { $0.epoch } }

    /// Switches to `key` from the next packet on (the sequence/ROC state carries over).
    public func rekey(_ key: SRTPKey) throws(SRTPError) {
        guard key.material.count == profile.masterKeyLength else {
            throw .badKeyLength(expected: profile.masterKeyLength, got: key.material.count)
        }
        let status = state.withLock { s -> srtp_err_status_t in
            let st = SRTPLibrary.withPolicy(profile: profile, ssrc: ssrc, keys: [key]) { srtp_update_stream(s.session, $0) }
            if st == srtp_err_status_ok { s.epoch = key.epoch }
            return st
        }
        guard status == srtp_err_status_ok else { throw SRTPError(status: status, call: "srtp_update_stream") }
    }

    /// Protects the RTP packet in `buffer[0..<length]` in place: the payload is encrypted and
    /// the MKI and tag appended. `buffer` needs `profile.overhead` bytes of room past `length`.
    /// Returns the protected length.
    public func protect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        guard length >= 12, buffer.count >= length + profile.overhead, let base = buffer.baseAddress else { throw .badPacket }
        var n = Int32(length)
        let status = state.withLock { s in srtp_protect_mki(s.session, base, &n, 1, 0) }
        guard status == srtp_err_status_ok else { throw SRTPError(status: status, call: "srtp_protect_mki") }
        return Int(n)
    }
}

/// Checks and decrypts the SRTP of every other sender in a room: one stream per SSRC, each
/// holding its sender's current key and the one before (a rotation is seamless: the MKI says
/// which key a packet used).
///
/// Thread rules: any thread; an internal lock serialises `unprotect` (the receive thread) with
/// key changes (the signalling thread). The libsrtp session is owned and freed with the object.
public final class SRTPReceiver: @unchecked Sendable {
    public let profile: SRTPProfile
    private struct State {
        var session: OpaquePointer?
        /// Per sender: its keys, oldest first (at most two).
        var keys: [UInt32: [SRTPKey]] = [:]
    }
    private let state: Locked<State>

    public init(profile: SRTPProfile = .aeadAES128GCM) throws(SRTPError) {
        guard SRTPLibrary.ready else { throw .library("srtp_init", -1) }
        var session: OpaquePointer?
        let status = srtp_create(&session, nil)
        guard status == srtp_err_status_ok, let session else { throw SRTPError(status: status, call: "srtp_create") }
        self.profile = profile
        state = Locked(State(session: session))
    }

    deinit { state.withLock { s in if let p = s.session { srtp_dealloc(p) } } }

    /// The epochs held for `ssrc`, oldest first.
    public func epochs(of ssrc: UInt32) -> [UInt8] { state.withLock { $0.keys[ssrc]?.map(\.epoch) ?? [] } }

    /// Adds `key` for sender `ssrc`; the sender's previous key is kept (packets in flight
    /// across a rotation still verify), anything older is dropped. Re-adding a held epoch is a
    /// no-op.
    public func setKey(_ key: SRTPKey, for ssrc: UInt32) throws(SRTPError) {
        guard key.material.count == profile.masterKeyLength else {
            throw .badKeyLength(expected: profile.masterKeyLength, got: key.material.count)
        }
        let (status, call) = state.withLock { s -> (srtp_err_status_t, String) in
            let held = s.keys[ssrc] ?? []
            if held.contains(key) { return (srtp_err_status_ok, "") }
            let next = Array((held.filter { $0.epoch != key.epoch } + [key]).suffix(2))
            let st = SRTPLibrary.withPolicy(profile: profile, ssrc: ssrc, keys: next) { p in
                held.isEmpty ? srtp_add_stream(s.session, p) : srtp_update_stream(s.session, p)
            }
            if st == srtp_err_status_ok { s.keys[ssrc] = next }
            return (st, held.isEmpty ? "srtp_add_stream" : "srtp_update_stream")
        }
        guard status == srtp_err_status_ok else { throw SRTPError(status: status, call: call) }
    }

    /// Forgets sender `ssrc` (it left): its packets no longer verify.
    public func remove(_ ssrc: UInt32) {
        state.withLock { s in
            guard s.keys.removeValue(forKey: ssrc) != nil else { return }
            _ = srtp_remove_stream(s.session, ssrc.bigEndian)
        }
    }

    /// Forgets every sender.
    public func removeAll() {
        state.withLock { s in
            for ssrc in s.keys.keys { _ = srtp_remove_stream(s.session, ssrc.bigEndian) }
            s.keys = [:]
        }
    }

    /// Verifies and decrypts the SRTP packet in `buffer[0..<length]` in place. Returns the RTP
    /// length (MKI and tag removed).
    public func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        guard length >= 12 + profile.overhead, let base = buffer.baseAddress, length <= buffer.count else { throw .badPacket }
        var n = Int32(length)
        let status = state.withLock { s in srtp_unprotect_mki(s.session, base, &n, 1) }
        guard status == srtp_err_status_ok else { throw SRTPError(status: status, call: "srtp_unprotect_mki") }
        return Int(n)
    }
}
