import CallsCore

/// Chooses how many previous frames each audio packet repeats (`RedundantAudio`, RFC 2198) from
/// what the receivers report: the worst loss among them, the longest run of frames any of them
/// lost in a row, how many blocks every one of them accepts, and whether every one of them
/// decodes redundant audio (a receiver that does not say so gets plain Opus).
///
/// ```
///  worst reported loss   < 1 %     1–8 %     8–15 %    ≥ 15 %
///  frames repeated         0         1          2         4     (plain Opus with in-band FEC at 0)
///  … or the longest run lost in a row, when longer (with any loss ≥ 1 %), up to 6 and to what
///    every receiver accepts (4 for one that does not say)
///  Opus bitrate          base (up to 2)   3/4 (3)   2/3 (4)   1/2 (5–6): the packet stays
///                        under about 3.5 × base (more copies of less beat fewer of more)
/// ```
/// The thresholds and bitrates come from scripts/bench-pesq.sh (docs/benchmarks.md, "Redundant
/// audio", "Bursts"): at 20 % loss in bursts (mean 2 packets) four copies leave the runs of five
/// and more concealed (PESQ 2.85); six at half the bitrate score 3.19 for 10 % more bandwidth.
/// More redundancy is chosen at once; less only after the reports have stayed lower for
/// `holdNanoseconds` (a quiet moment in a lossy network is not a clean network) — except that a
/// receiver accepting fewer blocks lowers it at once.
/// Before any report the sender assumes 5 % loss: one frame repeated from the first packet, so a
/// call that starts on a bad network is covered from its first frame; the first report (each
/// receiver's first comes after half a second of audio) replaces the assumption. Not two: from
/// two copies on a listener holds distance + 1 frames, and a clean call's buffer, started that
/// deep, shrank back by one frame only (`callroom bench latency`: 55 ms instead of 37).
///
/// Pure, on a clock the caller gives (tests use a virtual one). Thread rules: one owner.
public struct RedundancyPolicy: Sendable {
    /// Loss (percent) from which 1, 2, 4 previous frames are repeated.
    public static let thresholds: [Double] = [1, 8, 15]
    public let holdNanoseconds: UInt64
    /// The loss assumed before the first report.
    public static let assumedLossPercent: Double = 5
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

    /// The distance for a loss rate and the longest run lost in a row (any loss ≥ 1 %): a run
    /// two or more frames longer than the rate's distance is covered too (one frame longer is
    /// chance on a random-loss path — a run of 3 at 10 % — and costs more than it repairs),
    /// at most `maxDistance`.
    public static func distance(forLoss lossPercent: Double, longestRun: Int, maxDistance: Int) -> Int {
        let byRate = distance(forLoss: lossPercent)
        guard byRate > 0 else { return 0 }
        let wanted = longestRun >= byRate + 2 ? longestRun : byRate
        return max(0, min(maxDistance, RedundantAudio.maxDistance, wanted))
    }

    /// The Opus bitrate to send with `distance` repeated frames, from the session's `base`.
    public static func bitrate(base: Int, distance: Int) -> Int {
        switch distance {
        case ...2: base
        case 3: base * 3 / 4
        case 4: base * 2 / 3
        default: base / 2
        }
    }

    /// Takes the receivers' latest word at `now` and returns the frames to repeat.
    /// - Parameters:
    ///   - longestRun: the longest run of frames any receiver lost in a row, recently.
    ///   - maxDistance: the fewest blocks any receiver accepts.
    @discardableResult
    public mutating func update(worstLossPercent: Double, longestRun: Int = 0, maxDistance: Int = RedundantAudio.maxDistance,
                                everyoneDecodes: Bool, now: UInt64) -> Int {
        let wanted = everyoneDecodes ? Self.distance(forLoss: worstLossPercent, longestRun: longestRun, maxDistance: maxDistance) : 0
        defer { reported = true }
        // The first report replaces the assumption at once, and so does a receiver that would
        // not take this many blocks.
        if !reported || !everyoneDecodes || wanted >= distance || distance > maxDistance {
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
