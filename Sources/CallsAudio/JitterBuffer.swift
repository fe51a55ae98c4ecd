import CallsCore

/// A per-sender jitter buffer keyed by RTP sequence number. It absorbs network jitter and
/// reordering, drops late and duplicate packets, and tells the decoder what to do for each
/// playout tick: play a packet, recover a lost one from the next packet's in-band FEC, conceal
/// (PLC), or output silence.
///
/// It has no clock of its own: every call to `next()` is one playout tick of one frame, so
/// tests drive it deterministically with a virtual clock.
///
/// ```
/// insert(seq) ─▶ [slots by seq] ─▶ next(): buffering until `targetFrames` ─▶ playing:
///     slot[n] ─▶ .packet      slot[n+1] only ─▶ .recovered(FEC)      neither ─▶ .concealed
///     more than `maxFrames` queued ─▶ drop oldest (sender clock faster than ours)
///     `maxConcealFrames` of nothing ─▶ back to buffering (.silence)
/// ```
///
/// Adaptive depth: given arrival times and RTP timestamps, it keeps the RFC 3550 inter-arrival
/// jitter estimate and raises its target depth to cover twice that (never below
/// `targetFrames`, the minimum); when the queue stays two frames deeper than the target for half
/// a second it drops one frame to shrink back (latency returns after a burst of jitter). A
/// sender whose clock runs fast fills the queue and is trimmed the same way; one that runs
/// slow drains it and is concealed — clock drift costs at most one frame per drift period.
/// A value type; owned by one thread (the engine guards it with a lock shared with the receiver).
public struct JitterBuffer: Sendable {
    public enum Playout: Equatable, Sendable {
        case packet([UInt8])
        /// The expected packet is missing but the next one is here: decode it with FEC.
        case recovered(fromNext: [UInt8])
        case concealed
        case silence
    }

    public struct Statistics: Equatable, Sendable {
        public var received = 0
        public var played = 0
        public var late = 0
        public var duplicate = 0
        public var concealed = 0
        public var recovered = 0
        public var overflowDropped = 0
        public var resets = 0
        /// Frames dropped to shrink back to the target depth.
        public var shrunk = 0
        /// Packets that never came while later ones did (network loss, as opposed to a sender
        /// that stopped sending, e.g. muted).
        public var lost = 0
        public init() {}
    }

    /// The minimum start depth (frames).
    public let targetFrames: Int
    public let maxFrames: Int
    public let maxConcealFrames: Int
    public let frameSamples: Int
    /// The current adaptive target depth (frames), ≥ `targetFrames`.
    public private(set) var adaptiveTarget: Int
    /// RFC 3550 inter-arrival jitter estimate, in nanoseconds.
    public private(set) var jitterNanoseconds: Double = 0
    private var lastTransit: Double?
    private var arrivals: [UInt16: UInt64] = [:]
    /// When the packet `next()` last returned as `.packet` arrived (monotonic ns), if known.
    public private(set) var lastPlayedArrival: UInt64?
    private var deepTicks = 0
    public private(set) var statistics = Statistics()
    public private(set) var isPlaying = false
    private var slots: [UInt16: [UInt8]] = [:]
    private var nextSeq: UInt16 = 0
    private var concealRun = 0

    /// - Parameters:
    ///   - targetFrames: frames buffered before playout starts (the jitter margin + one).
    ///   - maxFrames: beyond this depth the oldest frames are dropped.
    ///   - maxConcealFrames: consecutive concealed frames before returning to silence.
    public init(targetFrames: Int = 2, maxFrames: Int = 15, maxConcealFrames: Int = 10, frameSamples: Int = 960) {
        self.targetFrames = max(1, targetFrames)
        self.maxFrames = max(self.targetFrames + 1, maxFrames)
        self.maxConcealFrames = maxConcealFrames
        self.frameSamples = frameSamples
        adaptiveTarget = self.targetFrames
    }

    /// Inserts a packet with its arrival time (monotonic ns) and RTP timestamp, updating the
    /// jitter estimate and the adaptive target.
    public mutating func insert(sequence: UInt16, payload: [UInt8], arrival: UInt64, timestamp: UInt32) {
        let transit = Double(arrival) - Double(timestamp) * 1e9 / 48_000
        if let last = lastTransit {
            var d = abs(transit - last)
            // A timestamp wrap (or a restarted sender) is not jitter.
            if d > 5e9 { d = jitterNanoseconds }
            jitterNanoseconds += (d - jitterNanoseconds) / 16
        }
        lastTransit = transit
        if arrivals.count > 4 * maxFrames { arrivals.removeAll(keepingCapacity: true) }
        arrivals[sequence] = arrival
        let frameNs = Double(frameSamples) * 1e9 / 48_000
        adaptiveTarget = min(maxFrames - 1, max(targetFrames, Int((2 * jitterNanoseconds / frameNs).rounded(.up)) + 1))
        insert(sequence: sequence, payload: payload)
    }

    /// Frames currently queued.
    public var depth: Int { slots.count }

    public mutating func insert(sequence: UInt16, payload: [UInt8]) {
        statistics.received += 1
        if isPlaying {
            let d = SequenceNumber.distance(from: nextSeq, to: sequence)
            if d < 0 {
                if d < -1000 { restart() } else { statistics.late += 1; return }
            } else if d > 1000 {
                restart()
            }
        }
        if slots[sequence] != nil { statistics.duplicate += 1; return }
        slots[sequence] = payload
    }

    private mutating func restart() {
        slots.removeAll(keepingCapacity: true)
        isPlaying = false
        concealRun = 0
        statistics.resets += 1
    }

    private var oldestSequence: UInt16? {
        guard let any = slots.keys.first else { return nil }
        return slots.keys.min { SequenceNumber.distance(from: any, to: $0) < SequenceNumber.distance(from: any, to: $1) }
    }

    /// The playout decision for the next frame.
    public mutating func next() -> Playout {
        if !isPlaying {
            guard slots.count >= adaptiveTarget, let oldest = oldestSequence else { return .silence }
            isPlaying = true
            nextSeq = oldest
            concealRun = 0
        }
        while slots.count > maxFrames, let oldest = oldestSequence {
            slots[oldest] = nil
            statistics.overflowDropped += 1
            if SequenceNumber.distance(from: nextSeq, to: oldest) >= 0 { nextSeq = oldest &+ 1 }
        }
        // Shrink back toward the target after sustained excess depth (25 ticks ≈ 0.5 s at 20 ms).
        deepTicks = slots.count > adaptiveTarget + 1 ? deepTicks + 1 : 0
        if deepTicks >= 25, slots[nextSeq] != nil {
            slots[nextSeq] = nil
            nextSeq &+= 1
            statistics.shrunk += 1
            deepTicks = 0
        }
        lastPlayedArrival = nil
        if let p = slots.removeValue(forKey: nextSeq) {
            lastPlayedArrival = arrivals.removeValue(forKey: nextSeq)
            nextSeq &+= 1
            concealRun = 0
            statistics.played += 1
            return .packet(p)
        }
        if let following = slots[nextSeq &+ 1] {
            nextSeq &+= 1
            concealRun = 0
            statistics.recovered += 1
            statistics.lost += 1
            return .recovered(fromNext: following)
        }
        concealRun += 1
        if concealRun > maxConcealFrames && slots.isEmpty {
            isPlaying = false
            concealRun = 0
            statistics.resets += 1
            return .silence
        }
        statistics.concealed += 1
        // Nothing queued: the packet is late, not lost (jitter, or a sender clock running slow).
        // Conceal without skipping it, which also deepens the queue by one frame. With later
        // packets queued, it is lost: move past it.
        if !slots.isEmpty {
            nextSeq &+= 1
            statistics.lost += 1
        }
        return .concealed
    }
}
