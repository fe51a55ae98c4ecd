import CNice
import CallsTransport
import Glibc

/// The server's side of ICE as an ICE-lite agent (RFC 8445 §2.5): it never checks, it answers.
/// A browser's STUN Binding request whose USERNAME is `ourUfrag:theirUfrag` and whose
/// MESSAGE-INTEGRITY is made with our `ice-pwd` gets a success response carrying the address it
/// came from (XOR-MAPPED-ADDRESS), MESSAGE-INTEGRITY and FINGERPRINT; the same requests, every few
/// seconds, are the browser's consent (RFC 7675). Built on libnice's STUN library (its agent
/// validates, its ICE usage writes the reply). Thread-confined: one reader thread owns it.
public final class ICELiteResponder {
    /// What to do with a datagram that looked like STUN.
    public enum Outcome: Equatable {
        /// Send `reply` to the request's source. `localUfrag` names the peer it was for;
        /// `nominated` when the browser put USE-CANDIDATE on it (that address carries the media).
        case reply([UInt8], localUfrag: String, nominated: Bool)
        /// Not answered.
        case refused(Refusal)
    }

    /// Why a STUN message was not answered (the caller counts these).
    public enum Refusal: String, Sendable, Equatable {
        /// Not a well-formed STUN message (or one of another length than the datagram).
        case malformed
        /// Not a Binding request (a response, an indication, another method).
        case notBindingRequest
        /// Its USERNAME names no peer we answer (or it had none).
        case unknownUser
        /// Its MESSAGE-INTEGRITY is not made with that peer's password (or is missing).
        case badIntegrity
        /// A comprehension-required attribute libnice does not know.
        case unknownAttribute
    }

    private let agent: UnsafeMutablePointer<StunAgent>
    private let known: UnsafeMutablePointer<UInt16>
    private let tieBreaker: UInt64

    public init() {
        // libnice keeps the pointer to the known-attribute list: it lives as long as the agent.
        let attributes: [StunAttribute] = [STUN_ATTRIBUTE_USERNAME, STUN_ATTRIBUTE_MESSAGE_INTEGRITY, STUN_ATTRIBUTE_FINGERPRINT,
                                           STUN_ATTRIBUTE_PRIORITY, STUN_ATTRIBUTE_USE_CANDIDATE, STUN_ATTRIBUTE_ICE_CONTROLLED,
                                           STUN_ATTRIBUTE_ICE_CONTROLLING, STUN_ATTRIBUTE_XOR_MAPPED_ADDRESS]
        known = .allocate(capacity: attributes.count + 1)
        for (i, a) in attributes.enumerated() { known[i] = UInt16(a.rawValue) }
        known[attributes.count] = 0
        agent = .allocate(capacity: 1)
        agent.initialize(to: StunAgent())
        stun_agent_init(agent, known, STUN_COMPATIBILITY_RFC5389,
                        StunAgentUsageFlags(rawValue: STUN_AGENT_USAGE_SHORT_TERM_CREDENTIALS.rawValue | STUN_AGENT_USAGE_USE_FINGERPRINT.rawValue))
        tieBreaker = UInt64.random(in: 1...UInt64.max)
    }

    deinit {
        agent.deallocate()
        known.deallocate()
    }

    /// Whether `datagram` is a whole STUN message (RFC 5389 header, its length, the cookie).
    public static func isSTUN(_ datagram: UnsafeRawBufferPointer) -> Bool {
        guard datagram.count >= 20, let base = datagram.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        return stun_message_validate_buffer_length(base, datagram.count, true) == datagram.count
    }

    /// Answers one datagram from `source`. `password` gives the `ice-pwd` of the peer whose local
    /// ufrag the request names (nil: no such peer).
    public func respond(to datagram: [UInt8], from source: SocketAddress, password: (String) -> String?) -> Outcome {
        guard datagram.withUnsafeBytes({ Self.isSTUN($0) }) else { return .refused(.malformed) }
        return withoutActuallyEscaping(password) { answer(datagram, from: source, lookup: CredentialLookup($0)) }
    }

    private func answer(_ datagram: [UInt8], from source: SocketAddress, lookup: CredentialLookup) -> Outcome {
        defer { lookup.release() }
        let context = Unmanaged.passUnretained(lookup).toOpaque()
        return datagram.withUnsafeBufferPointer { buffer -> Outcome in
            var request = StunMessage()
            let validity = stun_agent_validate(agent, &request, buffer.baseAddress, buffer.count, { _, _, username, length, password, passwordLength, context in
                guard let username, let context, let password, let passwordLength else { return false }
                let lookup = Unmanaged<CredentialLookup>.fromOpaque(context).takeUnretainedValue()
                let name = String(decoding: UnsafeBufferPointer(start: username, count: Int(length)), as: UTF8.self)
                guard let bytes = lookup.find(name) else { return false }
                password.pointee = bytes.baseAddress
                passwordLength.pointee = bytes.count
                return true
            }, context)
            switch validity {
            case STUN_VALIDATION_SUCCESS: break
            case STUN_VALIDATION_UNAUTHORIZED, STUN_VALIDATION_UNAUTHORIZED_BAD_REQUEST:
                return .refused(lookup.ufrag == nil ? .unknownUser : .badIntegrity)
            case STUN_VALIDATION_UNKNOWN_REQUEST_ATTRIBUTE: return .refused(.unknownAttribute)
            case STUN_VALIDATION_UNMATCHED_RESPONSE: return .refused(.notBindingRequest)
            default: return .refused(.malformed)
            }
            guard stun_message_get_class(&request) == STUN_REQUEST, stun_message_get_method(&request) == STUN_BINDING else {
                return .refused(.notBindingRequest)
            }
            // A request without integrity passes libnice's validation (no key to check): refuse it here.
            guard let ufrag = lookup.ufrag, stun_message_has_attribute(&request, STUN_ATTRIBUTE_MESSAGE_INTEGRITY) else {
                return .refused(lookup.ufrag == nil ? .unknownUser : .badIntegrity)
            }
            var storage = sockaddr_storage()
            var sin = source.sockaddr
            withUnsafeBytes(of: &sin) { s in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: s) } }
            var reply = StunMessage()
            var out = [UInt8](repeating: 0, count: 548)
            var length = out.count
            var controlling = false
            // ROLE_CONFLICT has written a 487 error response: it goes back too (RFC 8445 §7.3.1.1).
            let made = stun_usage_ice_conncheck_create_reply(agent, &request, &reply, &out, &length, &storage,
                                                             socklen_t(MemoryLayout<sockaddr_in>.size), &controlling, tieBreaker,
                                                             STUN_USAGE_ICE_COMPATIBILITY_RFC5245)
            guard made == STUN_USAGE_ICE_RETURN_SUCCESS || made == STUN_USAGE_ICE_RETURN_ROLE_CONFLICT, length <= out.count else {
                return .refused(.malformed)
            }
            return .reply(Array(out[0..<length]), localUfrag: ufrag,
                          nominated: made == STUN_USAGE_ICE_RETURN_SUCCESS && stun_usage_ice_conncheck_use_candidate(&request))
        }
    }
}

/// The validater's view of the peers for one request: finds the password for `ourUfrag:theirs`
/// and keeps its bytes alive until the reply is written (libnice signs the reply with them).
private final class CredentialLookup {
    let password: (String) -> String?
    var ufrag: String?
    var bytes: UnsafeMutableBufferPointer<UInt8>?

    init(_ password: @escaping (String) -> String?) { self.password = password }

    func find(_ username: String) -> UnsafeMutableBufferPointer<UInt8>? {
        guard let colon = username.firstIndex(of: ":") else { return nil }
        let local = String(username[..<colon])
        guard let pwd = password(local) else { return nil }
        release()
        let b = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(pwd.utf8.count, 1))
        _ = b.initialize(from: pwd.utf8)
        bytes = UnsafeMutableBufferPointer(rebasing: b[0..<pwd.utf8.count])
        ufrag = local
        return bytes
    }

    func release() {
        bytes?.deallocate()
        bytes = nil
    }
}
