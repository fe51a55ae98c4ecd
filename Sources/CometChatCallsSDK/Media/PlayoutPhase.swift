import CallsAudio

/// Aligns the playout frame boundary to packet arrival. The device's clock decides when a frame
/// is mixed, the sender's when its packet comes, so every packet waits in its jitter buffer for
/// some fixed part of a frame (its phase) on top of what the network's jitter needs — up to a
/// whole frame of latency that varies from call to call. When every packet over the last
/// `evidenceFrames` frames waited more than `marginNanoseconds`, the boundary can move earlier
/// by the excess (whole milliseconds, at most `maxStepNanoseconds` a decision) without making
/// any of them late: the engine plays the next quiet frame that much short. Waits then settle
/// between the margin and a millisecond more, whatever the phase the call started with.
///
/// Pure (no clock: one call per mixed frame). Thread rules: owned by the playback thread.
struct PlayoutPhase {
    let maxStepNanoseconds: UInt64
    let marginNanoseconds: UInt64
    private var minWait: UInt64 = .max
    private var frames = 0

    /// - Parameters:
    ///   - maxStepNanoseconds: the most one decision moves the boundary (the engine: a quarter
    ///     frame — each cut is a small time warp, and PESQ heard 10 ms cuts: 4.02 clean beside
    ///     4.16–4.22 with 5 ms ones).
    ///   - marginNanoseconds: what every packet keeps after an advance.
    init(maxStepNanoseconds: UInt64, marginNanoseconds: UInt64 = Self.defaultMarginNanoseconds) {
        self.maxStepNanoseconds = maxStepNanoseconds
        self.marginNanoseconds = marginNanoseconds
    }

    /// After each mixed frame, with the shortest wait of a packet it played (nil: none played,
    /// which restarts the evidence): how far to move the boundary earlier now, in nanoseconds
    /// (whole milliseconds; 0: stay).
    mutating func advance(waited: UInt64?) -> UInt64 {
        guard let w = waited else { minWait = .max; frames = 0; return 0 }
        minWait = min(minWait, w)
        frames += 1
        guard frames >= Self.evidenceFrames else { return 0 }
        let excess = minWait > marginNanoseconds ? minWait - marginNanoseconds : 0
        minWait = .max
        frames = 0
        let step = min(excess, maxStepNanoseconds)
        return step - step % 1_000_000
    }

    /// Scheduling on a busy machine (both ends' threads) varies by a few ms beyond what a window
    /// of evidence shows (4 ms; the jitter buffer counts a packet that missed its frame and was
    /// held up by more than this as delayed, not as playout's miss).
    static let defaultMarginNanoseconds = JitterBuffer.defaultDelayToleranceNanoseconds
    /// Frames of evidence per decision: enough to see the late tail of the network's jitter
    /// (25 frames missed it: packets went late under 0–30 ms of jitter, PESQ fell 0.3).
    static let evidenceFrames = 75

    /// Whether `frame` is silence to the ear (every sample under -46 dBFS).
    static func isQuiet(_ frame: UnsafeBufferPointer<Int16>) -> Bool {
        for s in frame where s > 164 || s < -164 { return false }
        return true
    }
}
