import CSpeexDSP
import CallsCore
import Foundation

/// Which capture processing runs on the microphone before encoding.
public struct CaptureProcessing: Sendable, Equatable {
    /// SpeexDSP noise suppression (about -25 dB on stationary noise).
    public var noiseSuppression: Bool
    /// SpeexDSP automatic gain control toward a comfortable speech level.
    public var automaticGain: Bool
    /// SpeexDSP acoustic echo cancellation against what we play.
    public var echoCancellation: Bool

    public init(noiseSuppression: Bool = false, automaticGain: Bool = false, echoCancellation: Bool = false) {
        self.noiseSuppression = noiseSuppression
        self.automaticGain = automaticGain
        self.echoCancellation = echoCancellation
    }

    public static let off = CaptureProcessing()
    public var isOff: Bool { self == .off }
}

/// Noise suppression, automatic gain and echo cancellation with SpeexDSP, owning its states.
///
/// ```
///  playback thread: played frame ─▶ echo canceller's far-end buffer (speex_echo_playback)
///  capture thread:  mic frame ─▶ speex_echo_capture (echo removed) ─▶ speex_preprocess_run
///                   (denoise, AGC, residual echo suppression) ─▶ voice activity
/// ```
/// Thread rules: `process` from the capture thread, `played` from the playback thread; both
/// hold a short lock around SpeexDSP's state: the echo canceller's two calls share its
/// buffers, and the preprocessor reads the canceller's residual echo.
public final class CaptureProcessor: Sendable {
    /// SpeexDSP's states and the frames they work on, owned and freed together. A caller's
    /// frame is copied in and out sample by sample (a frame is 960 samples at most), so the
    /// compiler sees that no caller's pointer is kept with SpeexDSP's state.
    private struct Speex: ~Copyable {
        let preprocess: OpaquePointer
        let echo: OpaquePointer?
        let input: UnsafeMutableBufferPointer<Int16>
        let output: UnsafeMutableBufferPointer<Int16>
        init(preprocess: OpaquePointer, echo: OpaquePointer?, frameSamples: Int) {
            self.preprocess = preprocess
            self.echo = echo
            input = .allocate(capacity: frameSamples)
            output = .allocate(capacity: frameSamples)
        }
        deinit {
            if let echo { speex_echo_state_destroy(echo) }
            speex_preprocess_state_destroy(preprocess)
            input.deallocate()
            output.deallocate()
        }
    }
    private let speex: LockedState<Speex>
    private let cancelsEcho: Bool
    public let frameSamples: Int
    public let options: CaptureProcessing

    /// - Parameter echoTailMs: the echo path length the canceller models (default 40 ms).
    public init(frameSamples: Int, options: CaptureProcessing, echoTailMs: Int = 40) throws(AudioError) {
        guard let pp = speex_preprocess_state_init(Int32(frameSamples), Int32(AudioFormat.sampleRate)) else {
            throw .codec("cannot create the SpeexDSP preprocessor")
        }
        self.frameSamples = frameSamples
        self.options = options
        callroom_preprocess_set_int(pp, callroom_pp_denoise, options.noiseSuppression ? 1 : 0)
        callroom_preprocess_set_int(pp, callroom_pp_noise_suppress, -25)
        callroom_preprocess_set_int(pp, callroom_pp_agc, options.automaticGain ? 1 : 0)
        callroom_preprocess_set_int(pp, callroom_pp_vad, 0)
        let echo: OpaquePointer?
        if options.echoCancellation {
            let tail = AudioFormat.samples(ms: echoTailMs)
            guard let e = speex_echo_state_init(Int32(frameSamples), Int32(tail)) else {
                speex_preprocess_state_destroy(pp)
                throw .codec("cannot create the SpeexDSP echo canceller")
            }
            callroom_echo_set_rate(e, Int32(AudioFormat.sampleRate))
            callroom_preprocess_set_echo(pp, e)
            echo = e
        } else {
            echo = nil
        }
        cancelsEcho = echo != nil
        speex = LockedState(Speex(preprocess: pp, echo: echo, frameSamples: frameSamples))
    }

    /// Tells the echo canceller what was just played (playback thread).
    public func played(_ frame: UnsafeBufferPointer<Int16>) {
        guard cancelsEcho, frame.count == frameSamples else { return }
        speex.withLock { s in
            guard let echo = s.echo else { return }
            for i in 0..<frame.count { s.input[i] = frame[i] }
            speex_echo_playback(echo, s.input.baseAddress)
        }
    }

    /// Processes one captured frame in place (capture thread).
    public func process(_ frame: UnsafeMutableBufferPointer<Int16>) {
        guard frame.count == frameSamples else { return }
        let runPreprocessor = options.noiseSuppression || options.automaticGain || cancelsEcho
        guard runPreprocessor else { return }
        speex.withLock { s in
            for i in 0..<frame.count { s.input[i] = frame[i] }
            var result = s.input
            if let echo = s.echo {
                speex_echo_capture(echo, s.input.baseAddress, s.output.baseAddress)
                result = s.output
            }
            _ = speex_preprocess_run(s.preprocess, result.baseAddress)
            for i in 0..<frame.count { frame[i] = result[i] }
        }
    }
}
