/// Sums frames from several senders and renders them through a soft limiter, so loud
/// overlaps compress smoothly instead of wrapping around or clipping hard.
///
/// Thread rules: owned by the playback thread. Preallocated: `reset`, `add` and `render`
/// never allocate.
public final class Mixer {
    private var accumulator: [Float]
    public let frameSamples: Int
    /// Samples whose magnitude the limiter reduced in the last `render`.
    public private(set) var limitedSamples = 0

    /// Below this level (fraction of full scale) the limiter is transparent.
    public static let knee: Float = 0.75
    /// The output never exceeds this fraction of full scale (about -0.09 dBFS).
    public static let ceiling: Float = 0.99

    public init(frameSamples: Int) {
        self.frameSamples = frameSamples
        accumulator = [Float](repeating: 0, count: frameSamples)
    }

    public func reset() {
        for i in 0..<frameSamples { accumulator[i] = 0 }
    }

    public func add(_ frame: UnsafeBufferPointer<Int16>, gain: Float = 1) {
        let n = min(frame.count, frameSamples)
        for i in 0..<n { accumulator[i] += Float(frame[i]) * gain }
    }

    public func render(into out: UnsafeMutableBufferPointer<Int16>) {
        limitedSamples = 0
        let n = min(out.count, frameSamples)
        for i in 0..<n {
            let x = accumulator[i] / 32768
            let y = Self.limit(x)
            if y != x { limitedSamples += 1 }
            out[i] = Int16((y * 32767).rounded())
        }
    }

    /// The limiter's transfer curve: identity up to the knee, then a tanh shoulder that
    /// approaches the ceiling and never passes it.
    @inlinable public static func limit(_ x: Float) -> Float {
        let a = abs(x)
        guard a > knee else { return x }
        let headroom = ceiling - knee
        let y = knee + headroom * tanhf((a - knee) / headroom)
        return x < 0 ? -y : y
    }
}

#if canImport(Glibc)
import Glibc
#endif
