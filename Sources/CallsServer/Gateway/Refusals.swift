import CallsCore
import CallsTransport
import Foundation

/// Why a request was refused, for `/metrics` and the log.
enum RefusalCause: String, Sendable, CaseIterable {
    /// REST: a missing or wrong key or token (401/403).
    case restAuth = "rest_auth"
    /// REST: over the per-address rate.
    case rateLimited = "rate_limited"
    /// Signalling: a call or auth token refused (invalid, expired, revoked, not for this server).
    case signalAuth = "signal_auth"
    /// Signalling: a room's rules said no (removed, allow-list, passcode, token in use, full).
    case roomAccess = "room_access"
    /// Signalling: a moderator action by someone who is not one.
    case moderation
    /// Signalling: over the per-connection message rate.
    case signalRate = "signal_rate"
    /// A WebSocket that never joined within the timeout.
    case idleConnection = "idle_connection"
    /// Too many WebSockets from one address.
    case connectionsPerAddress = "connections_per_address"
    /// A `hello` for a user online on as many devices as a user may be.
    case devicesPerUser = "devices_per_user"
    /// A WebSocket that did not read what it was sent (`maxQueuedBytesPerConnection`).
    case slowConsumer = "slow_consumer"
    /// An HTTP request whose body did not arrive within `requestBodyTimeoutSeconds` of its head.
    case slowRequest = "slow_request"
    /// An HTTP request refused from its head alone: a body sent chunked (411), a `Content-Length`
    /// that is not one number (400) or past 64 KiB (413), a NUL in the head (400) — answered
    /// and closed, nothing behind the head read.
    case requestHead = "request_head"
    /// A WebSocket message over the size limit (64 KiB), whole or in fragments: closed 1009.
    case oversizedMessage = "oversized_message"
    /// A TCP connection hung up at accept: the server's descriptors are spent (`maxConnections`).
    case descriptorBudget = "descriptor_budget"
    /// A browser's offer the WebRTC gateway could not answer (not SDP, nothing it speaks, too
    /// many offers, its leg limit).
    case webrtcOffer = "webrtc_offer"
}

/// Counts every refusal and logs it once per cause per peer (an IPv6 peer: per /64) per
/// interval (so 1,500 refusals from one attacker are one line a minute, and a second peer is
/// its own line).
///
/// Thread rules: any thread (a lock).
final class Refusals: Sendable {
    private let counts = Locked<[RefusalCause: UInt64]>([:])
    private let lastLogged = Locked<[String: UInt64]>([:])
    private let log: ServerLog
    let intervalNanoseconds: UInt64

    init(log: ServerLog, intervalSeconds: Double = 60) {
        self.log = log
        intervalNanoseconds = UInt64(intervalSeconds * 1e9)
    }

    func refused(_ cause: RefusalCause, peer: String, detail: String) {
        counts.withLock { $0[cause, default: 0] += 1 }
        let now = monotonicNanoseconds()
        let key = cause.rawValue + "|" + IPAddress.limitKey(peer)
        let due = lastLogged.withLock { l -> Bool in
            if l.count > 100_000 { l = l.filter { now &- $0.value < intervalNanoseconds } }
            if let t = l[key], now &- t < intervalNanoseconds { return false }
            l[key] = now
            return true
        }
        if due { log.warn("refused", ["cause": cause.rawValue, "peer": peer, "detail": detail]) }
    }

    func count(_ cause: RefusalCause) -> UInt64 { counts.withLock { $0[cause] ?? 0 } }
    var all: [(RefusalCause, UInt64)] { RefusalCause.allCases.map { ($0, count($0)) } }
}
