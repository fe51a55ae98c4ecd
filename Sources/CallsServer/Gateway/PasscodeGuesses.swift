import CallsCore
import CallsSupport
import CallsTransport
import Dispatch

/// Wrong room passcodes per address, across users and sessions. The rooms ration each user's
/// guesses per session (`RoomCore+Passcode`), which someone with many accounts multiplies; the
/// address is what they cannot multiply as cheaply. This lives where the socket is — the node
/// that knows the address, whichever node holds the room: a `join` carrying a passcode goes on
/// only while its address has guesses left (else `ERR_RATE_LIMITED`, the passcode unchecked),
/// and an `ERR_PASSCODE` answered to such a join spends one. Loopback is exempt when
/// `addresses` says so (the operator's own); an IPv6 client is counted by its /64.
///
/// In a cluster (`redis`) each wrong guess is also counted in Redis
/// (`callroom:rate:passcode:{address}`, the same ration), off the caller's thread: once the
/// address's guesses over all nodes are spent, this node refuses it for `retrySeconds` — so
/// behind a balancer one address has about 20 over the cluster (one more per node that has not
/// yet seen it spent), not 20 per node.
///
/// Thread rules: any thread; its state is under its lock; Redis is asked on its own queue.
final class PasscodeGuesses: Sendable {
    /// Wrong guesses an address has at once, then one every `retrySeconds`.
    static let burst = 20.0
    static let retrySeconds = 30.0

    private struct State {
        var limiter = PeerLimiter(capacity: PasscodeGuesses.burst, perSecond: 1 / PasscodeGuesses.retrySeconds)
        /// Connections with joins that carried a passcode and have not been answered: their
        /// address and how many (a client may send several before the first is answered — the
        /// rooms check each).
        var pending: [UInt64: (peer: String, joins: Int)] = [:]
        /// Those joins per address: each may yet spend a guess, so none is let through past
        /// what the address has left.
        var inFlight: [String: Int] = [:]
        /// Addresses whose guesses over the cluster are spent, until when (bounded: pruned of
        /// the past when it grows).
        var spentInCluster: [String: UInt64] = [:]

        mutating func settle(_ connection: UInt64, joins: Int) {
            guard let p = pending[connection] else { return }
            let left = p.joins - joins
            pending[connection] = left > 0 ? (p.peer, left) : nil
            let flying = inFlight[p.peer, default: 0] - min(joins, p.joins)
            inFlight[p.peer] = flying > 0 ? flying : nil
        }
    }
    private let state = Locked(State())
    private let addresses: ClientAddresses
    private let shared: SharedRateLimiter?
    private let sharedQueue = DispatchQueue(label: "callroom.passcodes.shared")

    init(addresses: ClientAddresses, redis: String? = nil) {
        self.addresses = addresses
        shared = redis.map { SharedRateLimiter(redis: $0, name: "passcode", capacity: Self.burst, perSecond: 1 / Self.retrySeconds) }
    }

    /// A `join` with a passcode arrived on `connection` from `peer`: nil lets it through (and
    /// watches for its answer), else the refusal's message.
    func admit(_ connection: UInt64, peer: String, now: UInt64 = monotonicNanoseconds()) -> String? {
        if addresses.isExempt(peer) { return nil }
        let peer = IPAddress.limitKey(peer)
        return state.withLock { s -> String? in
            if let until = s.spentInCluster[peer], now < until {
                return "Too many wrong passcodes from this address: try again in \(Int(((until - now) / 1_000_000_000) + 1)) s."
            }
            let left = s.limiter.available(peer, now: now) - Double(s.inFlight[peer, default: 0])
            guard left >= 1 else {
                let wait = RateLimiter.secondsUntilOne(tokens: left, perSecond: 1 / Self.retrySeconds)
                return "Too many wrong passcodes from this address: try again in \(wait) s."
            }
            s.pending[connection] = (peer, (s.pending[connection]?.joins ?? 0) + 1)
            s.inFlight[peer, default: 0] += 1
            return nil
        }
    }

    /// Whether `connection` waits for the answer to a join that carried a passcode.
    func isPending(_ connection: UInt64) -> Bool { state.withLock { $0.pending[connection] != nil } }

    /// What the server sent `connection`: for a join it watches, `ERR_PASSCODE` spends one of
    /// its address's guesses and being let in (`joined`, `resumed`, `lobbyWaiting`) settles
    /// one. (Other errors do not: a message sent behind the join may be answered first; every
    /// other refusal of a join closes the connection, which settles the rest: `closed`.)
    func sent(_ message: ServerMessage, to connection: UInt64, now: UInt64 = monotonicNanoseconds()) {
        let wrong: Bool
        switch message {
        case .error(.passcodeWrong, _): wrong = true
        case .joined, .resumed, .lobbyWaiting: wrong = false
        default: return
        }
        let spent = state.withLock { s -> String? in
            guard let peer = s.pending[connection]?.peer else { return nil }
            s.settle(connection, joins: 1)
            guard wrong else { return nil }
            _ = s.limiter.allow(peer, now: now)
            return peer
        }
        if let spent { spendInCluster(spent, guesses: 1) }
    }

    /// Counts `guesses` wrong guesses of `peer` over the cluster; when its ration there is spent
    /// this node refuses it for `retrySeconds`. (Redis unreachable: the node's own count stands.)
    private func spendInCluster(_ peer: String, guesses: Int) {
        guard let shared else { return }
        sharedQueue.async { [state] in
            var spentOut = false
            for _ in 0..<guesses {
                if shared.allow(peer) == false { spentOut = true }
            }
            guard spentOut else { return }
            let now = monotonicNanoseconds()
            state.withLock { s in
                if s.spentInCluster.count >= 100_000 { s.spentInCluster = s.spentInCluster.filter { $0.value > now } }
                s.spentInCluster[peer] = now + UInt64(Self.retrySeconds * 1e9)
            }
        }
    }

    /// The connection closed: each of its joins still unanswered spends a guess. (A client sends
    /// one join at a time; joins sent behind a refused one are not looked at by the rooms, but
    /// one who sends them is guessing, and pays for them here.)
    func closed(_ connection: UInt64, now: UInt64 = monotonicNanoseconds()) {
        let unanswered = state.withLock { s -> (peer: String, joins: Int)? in
            guard let p = s.pending[connection] else { return nil }
            s.settle(connection, joins: p.joins)
            for _ in 0..<p.joins { _ = s.limiter.allow(p.peer, now: now) }
            return p
        }
        if let unanswered { spendInCluster(unanswered.peer, guesses: unanswered.joins) }
    }
}
