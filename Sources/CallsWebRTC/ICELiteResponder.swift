import CNice
import CallsTransport
import Glibc

/// The server's side of ICE as an ICE-lite agent (RFC 8445 §2.5): it answers. A browser's STUN
/// Binding request whose USERNAME is `ourUfrag:theirUfrag` and whose MESSAGE-INTEGRITY is made
/// with our `ice-pwd` gets a success response carrying the address it came from
/// (XOR-MAPPED-ADDRESS), MESSAGE-INTEGRITY and FINGERPRINT; the same requests, every few seconds,
/// are the browser's consent (RFC 7675). A lite agent runs no checks of its own, but before media
/// go to an address this one asks it once (`check`): a Binding request the browser answers, so
/// only an address that can read what is sent to it gets media — not one a browser that forges
/// its source address named. Built on libnice's STUN library (its agent validates and matches
/// responses to requests, its ICE usage writes requests and replies). Thread-confined: one
/// reader thread owns it.
public final class ICELiteResponder {
    /// What to do with a datagram that looked like STUN.
    public enum Outcome: Equatable {
        /// Send `reply` to the request's source. `localUfrag` names the peer it was for;
        /// `nominated` when the browser put USE-CANDIDATE on it (that address carries the media).
        case reply([UInt8], localUfrag: String, nominated: Bool)
        /// The browser's response to one of our `check`s: a success, or an error response.
        case answered(Transaction, success: Bool)
        /// Not answered.
        case refused(Refusal)
    }

    /// One of our own checks, to match its response.
    public struct Transaction: Hashable, Sendable {
        let id: [UInt8]
    }

    /// Checks of our own awaiting their response, at most (libnice's agent tracks 200).
    public static let maxOutstandingChecks = 150

    /// Why a STUN message was not answered (the caller counts these).
    public enum Refusal: String, Sendable, Equatable {
        /// Not a well-formed STUN message (or one of another length than the datagram).
        case malformed
        /// Not a Binding request (an indication, another method), nor the response to one of our
        /// checks still awaited.
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
    /// The password each outstanding check was signed with: libnice keeps a pointer to it, to
    /// verify the response's integrity, until the response comes or the check is forgotten.
    private var outstanding: [Transaction: UnsafeMutableBufferPointer<UInt8>] = [:]

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
        for key in outstanding.values { key.deallocate() }
        agent.deallocate()
        known.deallocate()
    }

    /// Writes a check of our own to a browser (RFC 8445 §7.2.2): USERNAME `theirUfrag:ourUfrag`,
    /// MESSAGE-INTEGRITY made with *their* `ice-pwd`, ICE-CONTROLLED (a lite agent is controlled),
    /// PRIORITY, FINGERPRINT. Its response comes back through `respond` as `.answered`. nil when
    /// `maxOutstandingChecks` are awaited already. Resend the same bytes to retry; `forget` it
    /// when no response came.
    public func check(username: String, password: String) -> (request: [UInt8], transaction: Transaction)? {
        guard outstanding.count < Self.maxOutstandingChecks, !password.isEmpty else { return nil }
        let key = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: password.utf8.count)
        _ = key.initialize(from: password.utf8)
        let user = Array(username.utf8)
        var message = StunMessage()
        var out = [UInt8](repeating: 0, count: 548)
        // (The priority a peer-reflexive candidate of ours would have: type preference 110.)
        let length = out.withUnsafeMutableBufferPointer { buffer in
            stun_usage_ice_conncheck_create(agent, &message, buffer.baseAddress, buffer.count, user, user.count, key.baseAddress, key.count,
                                            false, false, (110 << 24) | (65_535 << 8) | 255, tieBreaker, nil, STUN_USAGE_ICE_COMPATIBILITY_RFC5245)
        }
        guard length > 0, length <= out.count else {
            key.deallocate()
            return nil
        }
        let transaction = Transaction(id: Array(out[4..<20]))
        outstanding[transaction] = key
        return (Array(out[0..<length]), transaction)
    }

    /// A check that got no response: the agent stops waiting for it.
    public func forget(_ transaction: Transaction) {
        guard let key = outstanding.removeValue(forKey: transaction) else { return }
        var id = transaction.id
        _ = id.withUnsafeMutableBufferPointer { stun_agent_forget_transaction(agent, $0.baseAddress) }
        key.deallocate()
    }

    /// Checks awaiting their response.
    public var outstandingChecks: Int { outstanding.count }

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
            let kind = stun_message_get_class(&request)
            if kind == STUN_RESPONSE || kind == STUN_ERROR {
                // Matched to one of our checks and its integrity verified with the password it was
                // signed with (libnice has let go of it now).
                let transaction = Transaction(id: Array(buffer[4..<20]))
                guard let key = outstanding.removeValue(forKey: transaction) else { return .refused(.notBindingRequest) }
                key.deallocate()
                return .answered(transaction, success: kind == STUN_RESPONSE)
            }
            guard stun_message_get_class(&request) == STUN_REQUEST, stun_message_get_method(&request) == STUN_BINDING else {
                return .refused(.notBindingRequest)
            }
            // A request without integrity passes libnice's validation (no key to check): refuse it here.
            guard let ufrag = lookup.ufrag, stun_message_has_attribute(&request, STUN_ATTRIBUTE_MESSAGE_INTEGRITY) else {
                return .refused(lookup.ufrag == nil ? .unknownUser : .badIntegrity)
            }
            // ROLE_CONFLICT has written a 487 error response: it goes back too (RFC 8445 §7.3.1.1).
            let (made, reply) = Self.reply(agent: agent, to: &request, from: source, controlling: false, tieBreaker: tieBreaker)
            guard made == STUN_USAGE_ICE_RETURN_SUCCESS || made == STUN_USAGE_ICE_RETURN_ROLE_CONFLICT, let reply else {
                return .refused(.malformed)
            }
            return .reply(reply, localUfrag: ufrag,
                          nominated: made == STUN_USAGE_ICE_RETURN_SUCCESS && stun_usage_ice_conncheck_use_candidate(&request))
        }
    }

    /// libnice's ICE usage writes the response to a validated Binding `request` from `source`
    /// (XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY with the request's key, FINGERPRINT) in `agent`'s
    /// role; nil bytes when it wrote none.
    static func reply(agent: UnsafeMutablePointer<StunAgent>, to request: inout StunMessage, from source: SocketAddress,
                      controlling: Bool, tieBreaker: UInt64) -> (StunUsageIceReturn, [UInt8]?) {
        var storage = sockaddr_storage()
        var sin = source.sockaddr
        withUnsafeBytes(of: &sin) { s in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: s) } }
        var reply = StunMessage()
        var out = [UInt8](repeating: 0, count: 548)
        var length = out.count
        var role = controlling
        let made = stun_usage_ice_conncheck_create_reply(agent, &request, &reply, &out, &length, &storage,
                                                         socklen_t(MemoryLayout<sockaddr_in>.size), &role, tieBreaker,
                                                         STUN_USAGE_ICE_COMPATIBILITY_RFC5245)
        return (made, length > 0 && length <= out.count ? Array(out[0..<length]) : nil)
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
