/// CallRoom's internal audio format: 48 kHz, mono, signed 16-bit PCM, in frames of 10 or
/// 20 ms. Every device, codec and mixer works in this format; files of other rates and
/// channel counts are converted at the edge.
public enum AudioFormat {
    public static let sampleRate = 48_000
    public static let channels = 1

    /// Samples in one frame of `ms` milliseconds.
    public static func samples(ms: Int) -> Int { sampleRate / 1000 * ms }
}

/// Errors from audio devices, files and codecs.
public enum AudioError: Error, Equatable, Sendable, CustomStringConvertible {
    case badEndpoint(String)
    case deviceUnavailable(name: String, reason: String)
    case deviceFailed(name: String, reason: String)
    case file(path: String, reason: String)
    case codec(String)
    case closed

    public var description: String {
        switch self {
        case .badEndpoint(let s): return "'\(s)' is not an audio endpoint (use alsa:NAME, file:PATH.wav, tone:HZ or null)"
        case .deviceUnavailable(let n, let r): return "audio device \(n) is unavailable: \(r)"
        case .deviceFailed(let n, let r): return "audio device \(n) failed: \(r)"
        case .file(let p, let r): return "audio file \(p): \(r)"
        case .codec(let r): return "codec error: \(r)"
        case .closed: return "audio endpoint closed"
        }
    }
}

/// A source of audio frames in the internal format, paced in real time.
///
/// Thread rules: `read` is called from one real-time capture thread only; it blocks until the
/// next frame is due (a device's clock or a `Pacer`). `close` may be called from another
/// thread and makes a pending or later `read` throw `.closed` promptly.
public protocol AudioInput: AnyObject, Sendable {
    var name: String { get }
    /// Fills `frame` with the next `frame.count` samples.
    func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError)
    func close()
}

/// A sink of audio frames in the internal format, paced in real time.
///
/// Thread rules: `write` is called from one real-time playback thread only and blocks until
/// the device (or `Pacer`) accepts the frame. `close` may be called from another thread.
public protocol AudioOutput: AnyObject, Sendable {
    var name: String { get }
    func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError)
    func close()
}

/// An output that counts its under-runs (a real device: ALSA); the playback period follows them
/// (`PlaybackPeriodPolicy`). Thread rules: `xruns` from any thread.
public protocol UnderrunCounting: AnyObject {
    /// Under-runs recovered since the output was opened.
    var xruns: Int { get }
}
