import CallsTransport
import CallsWebRTC

/// The gateway's own checks of browsers' addresses, each awaiting its response before media go
/// there (`ICELiteResponder.check`): which leg and address it was for, whether the address is to
/// carry the leg's media once it answers, the DTLS replies held for it until then, when to send it
/// again and when to give up. A value owned by the gateway's reader thread (no lock).
struct AddressChecks {
    struct Pending {
        let tunnel: UInt64
        let address: SocketAddress
        let request: [UInt8]
        var sentAt: UInt64
        var sends = 1
        /// A consent check of the leg's media address (`ConsentFreshness`): sent `consentSends`
        /// times, not `maxSends`, and it neither sets nor heeds an address's quiet.
        var consent = false
        var limit: Int { consent ? AddressChecks.consentSends : AddressChecks.maxSends }
        /// The leg's media go to the address once it answers (the browser nominated it, or the
        /// leg had no media address yet).
        var nominate: Bool
        /// DTLS datagrams for the address, sent once it answers (a handshake flight is several
        /// times the ClientHello that asked for it: not for an address that may be forged).
        var held: [[UInt8]] = []
        var heldBytes = 0
    }

    /// DTLS held for one address, at most (a flight with the certificate is about 1.5 KB; its
    /// retransmissions replace nothing, they queue).
    static let maxHeldBytes = 16_384

    private struct Target: Hashable {
        let tunnel: UInt64
        let address: SocketAddress
    }

    /// Sent again 100 ms after the first time, then at doubling intervals: six sends over 3.1 s,
    /// given up 3.2 s after the last (the browser's next check starts another).
    static let firstResendNanoseconds: UInt64 = 100_000_000
    static let maxSends = 6
    /// A consent check (`ConsentFreshness`) is sent four times, given up after 1.5 s: the next
    /// one comes within the interval, and an address asked of every leg every few seconds must
    /// not hold the agent's outstanding checks for long.
    static let consentSends = 4

    /// An address that let a check go unanswered is not asked again for the same leg for 10 s
    /// (whatever the checks from it say): a check forged from someone else's address earns that
    /// address six of ours once, not six for every forged one. Consent checks (`consentSends`)
    /// neither set nor heed it: one lost burst must not stop the next. At most `maxQuiet` held.
    static let quietNanoseconds: UInt64 = 10_000_000_000
    static let maxQuiet = 4096

    private var pending: [ICELiteResponder.Transaction: Pending] = [:]
    private var byTarget: [Target: ICELiteResponder.Transaction] = [:]
    private var quietUntil: [Target: UInt64] = [:]

    var count: Int { pending.count }

    /// Whether a check of `address` for `tunnel` awaits its response; if so, `nominate` is added to it.
    mutating func awaiting(_ address: SocketAddress, for tunnel: UInt64, nominate: Bool) -> Bool {
        guard let t = byTarget[Target(tunnel: tunnel, address: address)] else { return false }
        if nominate { pending[t]?.nominate = true }
        return true
    }

    mutating func add(_ transaction: ICELiteResponder.Transaction, _ check: Pending) {
        pending[transaction] = check
        byTarget[Target(tunnel: check.tunnel, address: check.address)] = transaction
    }

    /// Holds `datagrams` for `address` of `tunnel` until its check is answered; false when no check
    /// of it awaits (or its bound is reached: they are dropped, as a lossy path would).
    mutating func hold(_ datagrams: [[UInt8]], for address: SocketAddress, of tunnel: UInt64) -> Bool {
        guard let t = byTarget[Target(tunnel: tunnel, address: address)], var check = pending[t] else { return false }
        for d in datagrams where check.heldBytes + d.count <= Self.maxHeldBytes {
            check.held.append(d)
            check.heldBytes += d.count
        }
        pending[t] = check
        return true
    }

    /// The check a response answers (it awaits no longer).
    mutating func take(_ transaction: ICELiteResponder.Transaction) -> Pending? {
        guard let check = pending.removeValue(forKey: transaction) else { return nil }
        byTarget[Target(tunnel: check.tunnel, address: check.address)] = nil
        return check
    }

    /// Whether `address` let a check for `tunnel`'s leg go unanswered within `quietNanoseconds`.
    mutating func isQuiet(_ address: SocketAddress, for tunnel: UInt64, now: UInt64) -> Bool {
        let target = Target(tunnel: tunnel, address: address)
        guard let until = quietUntil[target] else { return false }
        if now < until { return true }
        quietUntil[target] = nil
        return false
    }

    private mutating func quiet(_ check: Pending, now: UInt64) {
        if quietUntil.count >= Self.maxQuiet { quietUntil = quietUntil.filter { now < $0.value } }
        guard quietUntil.count < Self.maxQuiet else { return }
        quietUntil[Target(tunnel: check.tunnel, address: check.address)] = now + Self.quietNanoseconds
    }

    /// At `now`: the checks to send again, and those given up (for the responder to forget).
    mutating func due(now: UInt64) -> (resend: [Pending], givenUp: [ICELiteResponder.Transaction]) {
        var resend: [Pending] = [], givenUp: [ICELiteResponder.Transaction] = []
        for (t, check) in pending where now - check.sentAt >= Self.firstResendNanoseconds << UInt64(check.sends - 1) {
            if check.sends >= check.limit {
                givenUp.append(t)
                _ = take(t)
                if !check.consent { quiet(check, now: now) }
            } else {
                var next = check
                next.sends += 1
                next.sentAt = now
                pending[t] = next
                resend.append(next)
            }
        }
        return (resend, givenUp)
    }
}
