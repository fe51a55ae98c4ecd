import CallsSupport

/// One sender's RTP clock (48 kHz) placed on a local timeline: anchored where its first packet
/// arrived, each later packet placed by its timestamp (so the relay's batching and DTX gaps keep
/// the speech's timing; a packet a little out of order lands where it belongs), and anchored
/// again where the clock and the arrivals drift apart by more than `toleranceMs` (the sender
/// restarted: a rejoin). A value; one thread at a time.
public struct RTPClockAnchor: Sendable, Equatable {
    public let toleranceMs: Int64
    private var anchorSample: Int64?
    private var firstTimestamp: UInt32 = 0

    public init(toleranceMs: Int64) { self.toleranceMs = toleranceMs }

    /// The timeline sample (48 kHz, counted from the same origin as `arrivedAtMs`) where the
    /// packet stamped `timestamp`, heard at `arrivedAtMs`, starts.
    public mutating func sample(of timestamp: UInt32, arrivedAtMs: Int64) -> Int64 {
        let arrival = arrivedAtMs * 48
        if let a = anchorSample {
            let s = a + Int64(Int32(bitPattern: timestamp &- firstTimestamp))
            if abs(s - arrival) <= toleranceMs * 48 { return s }
        }
        anchorSample = arrival
        firstTimestamp = timestamp
        return arrival
    }
}
