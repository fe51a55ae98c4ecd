import Foundation

/// Signal measurements for tests: tone power by the Goertzel algorithm and RMS level.
public enum SignalAnalysis {
    /// Power of `frequency` in `samples` (normalised to full scale), by the Goertzel algorithm.
    public static func tonePower(_ samples: ArraySlice<Int16>, frequency: Double, sampleRate: Double = 48_000) -> Double {
        guard !samples.isEmpty else { return 0 }
        let k = 2 * cos(2 * Double.pi * frequency / sampleRate)
        var s1 = 0.0, s2 = 0.0
        for x in samples {
            let s0 = Double(x) / 32768 + k * s1 - s2
            s2 = s1
            s1 = s0
        }
        let n = Double(samples.count)
        return (s1 * s1 + s2 * s2 - k * s1 * s2) / (n * n)
    }

    /// Ratio in dB of the power at `frequency` to the strongest of `others`.
    public static func toneDominanceDB(_ samples: ArraySlice<Int16>, frequency: Double, others: [Double]) -> Double {
        let p = tonePower(samples, frequency: frequency)
        let q = others.map { tonePower(samples, frequency: $0) }.max() ?? 0
        return 10 * log10((p + 1e-15) / (q + 1e-15))
    }

    /// RMS level in dBFS.
    public static func rmsDBFS(_ samples: ArraySlice<Int16>) -> Double {
        guard !samples.isEmpty else { return -200 }
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        let rms = (sum / Double(samples.count)).squareRoot() / 32768
        return rms > 0 ? 20 * log10(rms) : -200
    }

    /// Splits samples into windows of `size` samples.
    public static func windows(_ s: [Int16], size: Int) -> [ArraySlice<Int16>] {
        stride(from: 0, to: s.count - size + 1, by: size).map { s[$0..<($0 + size)] }
    }

    /// How many 100 ms windows (at 48 kHz) of `samples` carry `tone` at least 20 dB above each of
    /// `others`, of how many: "was this participant heard" for the tone-sending tests.
    public static func windowsCarrying(_ samples: [Int16], tone: Double, over others: [Double]) -> (carrying: Int, of: Int) {
        let all = windows(samples, size: 4800)
        return (all.filter { toneDominanceDB($0, frequency: tone, others: others) > 20 }.count, all.count)
    }

    /// Reads the 16-bit PCM samples of a canonical WAV file (mono), skipping chunks before `data`.
    public static func readWAV(_ path: String) -> (rate: Int, samples: [Int16])? {
        guard let d = FileManager.default.contents(atPath: path), d.count >= 44 else { return nil }
        let b = [UInt8](d)
        func u32(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
        guard String(decoding: b[0..<4], as: UTF8.self) == "RIFF", String(decoding: b[8..<12], as: UTF8.self) == "WAVE" else { return nil }
        var i = 12
        var rate = 0
        while i + 8 <= b.count {
            let id = String(decoding: b[i..<(i + 4)], as: UTF8.self)
            let size = u32(i + 4)
            if id == "fmt " { rate = u32(i + 12) }
            if id == "data" {
                let end = min(b.count, i + 8 + size)
                var out: [Int16] = []
                out.reserveCapacity((end - i - 8) / 2)
                var j = i + 8
                while j + 1 < end { out.append(Int16(bitPattern: UInt16(b[j]) | UInt16(b[j + 1]) << 8)); j += 2 }
                return (rate, out)
            }
            i += 8 + size + (size & 1)
        }
        return nil
    }
}
