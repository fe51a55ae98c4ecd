import CallsTransport

/// Consent freshness for browser legs (RFC 7675): the address a leg's media go to is asked again
/// every `interval` (randomised ±20 %, as RFC 7675 §5.1 has it), and when it has answered none of
/// those checks for `timeout` its media stop — a browser that went away, or an address that now
/// belongs to someone else, is not sent a room's media for the rest of the call. The checks are
/// the gateway's own (`AddressChecks`: only a response to one grants consent; the browser's own
/// checks from the address prove nothing, their source can be forged). A value owned by the
/// gateway's reader thread (no lock).
struct ConsentFreshness {
    struct Due: Equatable {
        let tunnel: UInt64
        let address: SocketAddress
    }

    private struct Media {
        let address: SocketAddress
        /// When the address last answered a check of ours (or media first went there: it had just answered).
        var granted: UInt64
        var nextCheck: UInt64
    }

    let intervalNanoseconds: UInt64
    let timeoutNanoseconds: UInt64
    private var legs: [UInt64: Media] = [:]
    private let jitter: () -> Double

    /// - Parameter jitter: a factor in 0.8...1.2 for each interval (random; fixed in tests).
    init(intervalMs: Int, timeoutMs: Int, jitter: @escaping () -> Double = { Double.random(in: 0.8...1.2) }) {
        intervalNanoseconds = UInt64(max(100, intervalMs)) * 1_000_000
        timeoutNanoseconds = UInt64(max(intervalMs + 100, timeoutMs)) * 1_000_000
        self.jitter = jitter
    }

    var count: Int { legs.count }

    private func next(after now: UInt64) -> UInt64 {
        now + UInt64(Double(intervalNanoseconds) * min(1.2, max(0.8, jitter())))
    }

    /// `address` answered a check of ours for `tunnel`'s leg at `now`: when it is where the leg's
    /// media go (`media`), its consent is fresh again; a new media address starts afresh.
    mutating func answered(_ address: SocketAddress, for tunnel: UInt64, media: SocketAddress?, now: UInt64) {
        guard let media, media == address else { return }
        if legs[tunnel]?.address == address {
            legs[tunnel]?.granted = now
        } else {
            let nextCheck = next(after: now)
            legs[tunnel] = Media(address: address, granted: now, nextCheck: nextCheck)
        }
    }

    /// The leg is gone (or its media stopped): nothing more to ask.
    mutating func forget(_ tunnel: UInt64) { legs[tunnel] = nil }

    /// At `now`: the media addresses to ask again, and those whose consent has run out (they are
    /// forgotten here; their media are the gateway's to stop).
    mutating func due(now: UInt64) -> (check: [Due], expired: [Due]) {
        var check: [Due] = [], expired: [Due] = []
        for (tunnel, media) in legs {
            if now >= media.granted + timeoutNanoseconds {
                expired.append(Due(tunnel: tunnel, address: media.address))
                legs[tunnel] = nil
            } else if now >= media.nextCheck {
                check.append(Due(tunnel: tunnel, address: media.address))
                let nextCheck = next(after: now)
                legs[tunnel]?.nextCheck = nextCheck
            }
        }
        return (check, expired)
    }
}
