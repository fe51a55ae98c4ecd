import CallsCore

/// Chooses how many previous frames each audio packet repeats (`RedundantAudio`, RFC 2198) from
/// what the receivers report: the worst loss among them, and whether every one of them decodes
/// redundant audio (a receiver that does not say so gets plain Opus).
///
/// ```
///  worst reported loss   < 1 %     1–8 %     8–15 %    ≥ 15 %
///  frames repeated         0         1          2         4     (plain Opus with in-band FEC at 0)
///  Opus bitrate          base      base       base     2/3 base (a third off: 4 copies of less
///                                                                beat 3 of more, for fewer bits)
/// ```
/// The thresholds come from scripts/bench-pesq.sh (docs/benchmarks.md, "Redundant audio"). More
/// redundancy is chosen at once; less only after the loss has stayed
/// lower for `holdNanoseconds` (a quiet moment in a lossy network is not a clean network).
/// Before any report the sender assumes 8 % loss: two frames repeated from the first packet (full
/// bitrate), so a call that starts on a bad network is covered through bursts of two from its
/// first frame. A clean first report (each receiver's first comes after half a second of audio)
/// ends it at once — on a clean path about 30 frames per stream carry copies — and a lossy one
/// lowers it only as any report does, after the hold.
///
/// Pure, on a clock the caller gives (tests use a virtual one). Thread rules: one owner.
public struct RedundancyPolicy: Sendable {
    /// Loss (percent) from which 1, 2, 3 previous frames are repeated.
    public static let thresholds: [Double] = [1, 8, 15]
    public let holdNanoseconds: UInt64
    /// The loss assumed before the first report.
    public static let assumedLossPercent: Double = 8
    public private(set) var distance: Int
    private var lowerSince: UInt64?
    private var reported = false

    public init(holdNanoseconds: UInt64 = 10_000_000_000) {
        self.holdNanoseconds = holdNanoseconds
        distance = Self.distance(forLoss: Self.assumedLossPercent)
    }

    /// Frames repeated from each threshold on.
    public static let distances = [1, 2, 4]

    /// The distance `lossPercent` alone asks for.
    public static func distance(forLoss lossPercent: Double) -> Int {
        thresholds.lastIndex { lossPercent >= $0 }.map { distances[$0] } ?? 0
    }

    /// The Opus bitrate to send with `distance` repeated frames, from the session's `base`.
    public static func bitrate(base: Int, distance: Int) -> Int { distance >= 4 ? base * 2 / 3 : base }

    /// Takes the receivers' latest word at `now` and returns the frames to repeat.
    @discardableResult
    public mutating func update(worstLossPercent: Double, everyoneDecodes: Bool, now: UInt64) -> Int {
        let wanted = everyoneDecodes ? Self.distance(forLoss: worstLossPercent) : 0
        defer { reported = true }
        // The assumption gives way at once to a clean first report, to a lossy one only as any
        // lower word does (a first half second at 7 % is not a path that needs one frame less).
        if (!reported && wanted == 0) || !everyoneDecodes || wanted >= distance {
            distance = wanted
            lowerSince = nil
        } else if let since = lowerSince {
            if now - since >= holdNanoseconds { distance = wanted; lowerSince = nil }
        } else {
            lowerSince = now
        }
        return distance
    }
}
