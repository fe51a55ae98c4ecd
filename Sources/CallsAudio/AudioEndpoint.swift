/// An audio endpoint as the user names it: `alsa:NAME`, `file:PATH`, `tone:HZ[:ON_MS:OFF_MS]` or `null`.
public enum AudioEndpoint: Equatable, Sendable, CustomStringConvertible {
    case alsa(String)
    case file(String)
    /// A sine at `hz`; with `onMs`/`offMs` it speaks in bursts (`tone:HZ:ON_MS:OFF_MS`).
    case tone(Double, onMs: Int = 0, offMs: Int = 0)
    case null

    /// The default device: ALSA's `default` PCM.
    public static let systemDefault = AudioEndpoint.alsa("default")

    public init(spec: String) throws(AudioError) {
        if spec == "null" { self = .null; return }
        guard let colon = spec.firstIndex(of: ":") else { throw .badEndpoint(spec) }
        let kind = spec[..<colon]
        let value = String(spec[spec.index(after: colon)...])
        switch kind {
        case "alsa":
            guard !value.isEmpty else { throw .badEndpoint(spec) }
            self = .alsa(value)
        case "file":
            guard !value.isEmpty else { throw .badEndpoint(spec) }
            self = .file(value)
        case "tone":
            let parts = value.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 1 || parts.count == 3, let hz = Double(parts[0]), hz > 0, hz < Double(AudioFormat.sampleRate / 2)
            else { throw .badEndpoint(spec) }
            if parts.count == 3 {
                guard let on = Int(parts[1]), let off = Int(parts[2]), on > 0, off >= 0 else { throw .badEndpoint(spec) }
                self = .tone(hz, onMs: on, offMs: off)
            } else {
                self = .tone(hz)
            }
        default:
            throw .badEndpoint(spec)
        }
    }

    public var description: String {
        switch self {
        case .alsa(let n): return "alsa:\(n)"
        case .file(let p): return "file:\(p)"
        case .tone(let hz, let on, let off):
            let f = hz.formatted(.number.grouping(.never))
            return on > 0 ? "tone:\(f):\(on):\(off)" : "tone:\(f)"
        case .null: return "null"
        }
    }

    /// Opens this endpoint as an input.
    public func makeInput(frameSamples: Int, periodMs: Int? = nil) throws(AudioError) -> any AudioInput {
        switch self {
        case .alsa(let n): return try ALSAInput(device: n, frameSamples: frameSamples, periodMs: periodMs)
        case .file(let p): return try FileInput(path: p, frameSamples: frameSamples)
        case .tone(let hz, let on, let off):
            return ToneInput(frequency: hz, frameSamples: frameSamples, cadence: on > 0 ? (on, off) : nil)
        case .null: return NullInput(frameSamples: frameSamples)
        }
    }

    /// Opens this endpoint as an output. `tone:` is not an output.
    public func makeOutput(frameSamples: Int, periodMs: Int? = nil) throws(AudioError) -> any AudioOutput {
        switch self {
        case .alsa(let n): return try ALSAOutput(device: n, frameSamples: frameSamples, periodMs: periodMs)
        case .file(let p): return try FileOutput(path: p, frameSamples: frameSamples)
        case .tone: throw .badEndpoint("\(description) (a tone is an input only)")
        case .null: return NullOutput(frameSamples: frameSamples)
        }
    }

    /// Opens an input; when an ALSA device is missing (no sound card, over SSH) falls back to
    /// `null` and returns a notice saying so. Other errors (a bad file) are thrown.
    public func openInputFallingBack(frameSamples: Int, periodMs: Int? = nil) throws(AudioError) -> (any AudioInput, notice: String?) {
        do {
            return (try makeInput(frameSamples: frameSamples, periodMs: periodMs), nil)
        } catch {
            guard case .alsa = self else { throw error }
            return (NullInput(frameSamples: frameSamples), "no capture device \(self) (\(Self.reason(error))): sending silence")
        }
    }

    private static func reason(_ e: AudioError) -> String {
        switch e {
        case .deviceUnavailable(_, let r), .deviceFailed(_, let r): return r
        default: return e.description
        }
    }

    /// Output counterpart of `openInputFallingBack`.
    public func openOutputFallingBack(frameSamples: Int, periodMs: Int? = nil) throws(AudioError) -> (any AudioOutput, notice: String?) {
        do {
            return (try makeOutput(frameSamples: frameSamples, periodMs: periodMs), nil)
        } catch {
            guard case .alsa = self else { throw error }
            return (NullOutput(frameSamples: frameSamples), "no playback device \(self) (\(Self.reason(error))): audio is not played")
        }
    }
}
