#if canImport(Glibc)
import Glibc
#endif

/// Audio level measurements used for meters, speaking indicators and the RFC 6464 level.
public enum LevelMeter {
    /// The floor reported for digital silence.
    public static let silenceDBFS: Float = -127

    /// RMS level of a frame in dBFS (0 = a full-scale square wave; a full-scale sine is -3).
    public static func rmsDBFS(_ frame: UnsafeBufferPointer<Int16>) -> Float {
        guard !frame.isEmpty else { return silenceDBFS }
        var sum: Double = 0
        for s in frame { let v = Double(s) / 32768; sum += v * v }
        let rms = (sum / Double(frame.count)).squareRoot()
        guard rms > 0 else { return silenceDBFS }
        return max(silenceDBFS, Float(20 * log10(rms)))
    }

    /// The RFC 6464 level byte: -dBov clamped to 0…127.
    public static func rfc6464(dbfs: Float) -> UInt8 {
        UInt8(max(0, min(127, -dbfs.rounded())))
    }

    /// Whether a frame at `dbfs` counts as voice (a simple energy gate for the skeleton).
    public static func isVoice(dbfs: Float) -> Bool { dbfs > -45 }
}
