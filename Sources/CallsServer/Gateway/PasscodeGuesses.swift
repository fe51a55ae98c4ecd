import CallsCore
import CallsSupport
import CallsTransport

/// Wrong room passcodes per address, across users and sessions. The rooms ration each user's
/// guesses per session (`RoomCore+Passcode`), which someone with many accounts multiplies; the
/// address is what they cannot multiply as cheaply. This lives where the socket is — the node
/// that knows the address, whichever node holds the room: a `join` carrying a passcode goes on
/// only while its address has guesses left (else `ERR_RATE_LIMITED`, the passcode unchecked),
/// and an `ERR_PASSCODE` answered to such a join spends one. Loopback is exempt when
/// `exemptLoopback` (the operator's own, or a proxy in front that limits by itself).
///
/// Thread rules: any thread; its state is under its lock.
final class PasscodeGuesses: Sendable {
    /// Wrong guesses an address has at once, then one every `retrySeconds`.
    static let burst = 20.0
    static let retrySeconds = 30.0

    private struct State {
        var limiter = PeerLimiter(capacity: PasscodeGuesses.burst, perSecond: 1 / PasscodeGuesses.retrySeconds)
        /// Connections whose `join` carried a passcode and has not been answered: their address.
        var pending: [UInt64: String] = [:]
    }
    private let state = Locked(State())
    private let exemptLoopback: Bool

    init(exemptLoopback: Bool) { self.exemptLoopback = exemptLoopback }

    /// A `join` with a passcode arrived on `connection` from `peer`: nil lets it through (and
    /// watches for its answer), else the refusal's message.
    func admit(_ connection: UInt64, peer: String, now: UInt64 = monotonicNanoseconds()) -> String? {
        if exemptLoopback && WebServer.isLoopback(peer) { return nil }
        return state.withLock { s -> String? in
            let left = s.limiter.available(peer, now: now)
            guard left >= 1 else {
                let wait = Int(((1 - left) * Self.retrySeconds - 1e-6).rounded(.up))
                return "Too many wrong passcodes from this address: try again in \(max(1, wait)) s."
            }
            s.pending[connection] = peer
            return nil
        }
    }

    /// Whether `connection` waits for the answer to a join that carried a passcode.
    func isPending(_ connection: UInt64) -> Bool { state.withLock { $0.pending[connection] != nil } }

    /// What the server sent `connection`: for a join it watches, `ERR_PASSCODE` spends one of
    /// its address's guesses and being let in (`joined`, `resumed`, `lobbyWaiting`) ends the
    /// watch. (Other errors do not: a message sent behind the join may be answered first; every
    /// other refusal of a join closes the connection, which ends it.)
    func sent(_ message: ServerMessage, to connection: UInt64, now: UInt64 = monotonicNanoseconds()) {
        let wrong: Bool
        switch message {
        case .error(.passcodeWrong, _): wrong = true
        case .joined, .resumed, .lobbyWaiting: wrong = false
        default: return
        }
        state.withLock { s in
            guard let peer = s.pending.removeValue(forKey: connection) else { return }
            if wrong { _ = s.limiter.allow(peer, now: now) }
        }
    }

    func closed(_ connection: UInt64) { state.withLock { s in _ = s.pending.removeValue(forKey: connection) } }
}
