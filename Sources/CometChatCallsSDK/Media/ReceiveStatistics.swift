import CallsAudio

/// CallRoom diagnostics: how one participant's audio is arriving here, since you joined.
/// A value; any thread.
public struct ReceiveStatistics: Sendable, Equatable {
    /// Packets received, and those that never came while later ones did (network loss, whether
    /// a redundant copy, FEC or concealment then filled the frame).
    public var packetsReceived: Int
    public var packetsLost: Int
    /// Payload bytes received (a front end derives the bitrate from two readings).
    public var bytesReceived: Int
    /// RFC 3550 inter-arrival jitter, milliseconds.
    public var jitterMs: Double
    /// Frames concealed (PLC), recovered from in-band FEC, arriving too late to play.
    public var concealed: Int
    public var recovered: Int
    public var late: Int
    /// Frames played from a redundant copy in a later packet (RFC 2198): lost, yet heard whole.
    public var repaired: Int = 0
    /// Loss over the last report interval (percent), nil until measured.
    public var recentLossPercent: Double?

    /// Loss since joining, percent of the packets expected.
    public var lossPercent: Double {
        let expected = packetsReceived + packetsLost
        return expected == 0 ? 0 : 100 * Double(packetsLost) / Double(expected)
    }

    public init(packetsReceived: Int = 0, packetsLost: Int = 0, bytesReceived: Int = 0, jitterMs: Double = 0,
                concealed: Int = 0, recovered: Int = 0, late: Int = 0, recentLossPercent: Double? = nil) {
        self.packetsReceived = packetsReceived; self.packetsLost = packetsLost; self.bytesReceived = bytesReceived
        self.jitterMs = jitterMs; self.concealed = concealed; self.recovered = recovered; self.late = late
        self.recentLossPercent = recentLossPercent
    }
}

extension CallsClient {
    /// Receive statistics per participant id (everyone you hear; not you).
    public func receiveStatistics() -> [String: ReceiveStatistics] {
        let (figures, recent) = state.sync { (engine?.receiveFigures() ?? [:], engine?.lossBySender() ?? [:]) }
        var out: [String: ReceiveStatistics] = [:]
        for p in participants {
            guard let pid = p.pid, let s = p.ssrc, let (j, jitterMs, bytes) = figures[s] else { continue }
            var r = ReceiveStatistics(packetsReceived: j.received, packetsLost: j.lost + j.repaired, bytesReceived: bytes, jitterMs: jitterMs,
                                      concealed: j.concealed, recovered: j.recovered, late: j.late, recentLossPercent: recent[s])
            r.repaired = j.repaired
            out[pid] = r
        }
        return out
    }

    /// The last measured round trip to the server over signalling (ms), measured every 2 s.
    public var serverRoundTripMs: Double? { state.sync { connection.roundTripMs } }
}

extension CallSession {
    /// CallRoom diagnostics: receive statistics per participant id (see `ReceiveStatistics`).
    /// Any thread.
    public func receiveStatistics() -> [String: ReceiveStatistics] { currentClient?.receiveStatistics() ?? [:] }
    /// CallRoom diagnostics: your round trip to the server (ms), nil until measured. Any thread.
    public var serverRoundTripMs: Double? { currentClient?.serverRoundTripMs }
    /// CallRoom diagnostics: what your media engine did this session. Any thread.
    public var mediaReport: MediaReport? { currentClient?.mediaReport }
}
