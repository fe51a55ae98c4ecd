import CallsSupport

/// Simulated bad network for QA and tests: random loss and delay variation applied to the
/// media a client receives, before its jitter buffer. `loss=PCT,jitter=MS[,burst=N][,seed=N]`.
/// Loss is independent per packet, or with `burst` in bursts (a two-state Gilbert model whose
/// bad state drops every packet and lasts `burst` packets on average; the same overall rate).
public struct NetworkImpairment: Sendable, Equatable, CustomStringConvertible {
    /// Share of packets dropped, 0…100 %.
    public var lossPercent: Double
    /// Each packet is delayed by a uniform random 0…`jitterMs` milliseconds (so packets reorder).
    public var jitterMs: Double
    /// Seed of the random generator: the same seed drops and delays the same packets.
    public var seed: UInt64
    /// Mean length of a loss burst in packets (nil: independent losses).
    public var burstLength: Double?

    public init(lossPercent: Double, jitterMs: Double, seed: UInt64 = 1, burstLength: Double? = nil) {
        self.lossPercent = lossPercent
        self.jitterMs = jitterMs
        self.seed = seed
        self.burstLength = burstLength.flatMap { $0 > 1 ? $0 : nil }
    }

    /// Parses `loss=5,jitter=30,seed=7` (any order; loss and jitter default to 0).
    public init(spec: String) throws(ArgumentScanner.UsageError) {
        var loss = 0.0, jitter = 0.0, seed: UInt64 = 1, burst: Double?
        for part in spec.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { throw .init("impairment '\(part)' is not KEY=VALUE") }
            switch kv[0] {
            case "loss":
                guard let v = Double(kv[1]), (0...100).contains(v) else { throw .init("loss must be 0…100 (percent)") }
                loss = v
            case "jitter":
                guard let v = Double(kv[1]), (0...2000).contains(v) else { throw .init("jitter must be 0…2000 (ms)") }
                jitter = v
            case "burst":
                guard let v = Double(kv[1]), (1...50).contains(v) else { throw .init("burst must be 1…50 (mean packets per loss burst)") }
                burst = v
            case "seed":
                guard let v = UInt64(kv[1]) else { throw .init("seed must be a whole number") }
                seed = v
            default:
                throw .init("unknown impairment '\(kv[0])' (use loss=PCT,jitter=MS,burst=N,seed=N)")
            }
        }
        self.init(lossPercent: loss, jitterMs: jitter, seed: seed, burstLength: burst)
    }

    public var description: String {
        "loss=\(lossPercent),jitter=\(jitterMs)" + (burstLength.map { ",burst=\($0)" } ?? "") + ",seed=\(seed)"
    }

    /// Which packets the impairment drops, in order: one decision per packet.
    /// Thread rules: one owner (the receive thread).
    public struct LossProcess: Sendable {
        public let lossPercent: Double
        public let burstLength: Double?
        private var inBurst = false

        public init(_ i: NetworkImpairment) { lossPercent = i.lossPercent; burstLength = i.burstLength }

        /// Whether the next packet is dropped, drawing from `rng`.
        public mutating func drops(using rng: inout SplitMix64) -> Bool {
            let draw = Double.random(in: 0..<100, using: &rng)
            guard let burst = burstLength, lossPercent > 0, lossPercent < 100 else { return draw < lossPercent }
            // Gilbert: leave a burst with 1/burst; enter one so that the long-run rate is the loss.
            let leave = 100 / burst, enter = leave * lossPercent / (100 - lossPercent)
            inBurst = inBurst ? draw >= leave : draw < enter
            return inBurst
        }
    }
}

/// SplitMix64: a small, fast, seedable generator (deterministic impairment and tests).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
