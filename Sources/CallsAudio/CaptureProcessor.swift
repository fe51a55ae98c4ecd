import CSpeexDSP
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
/// hold a short lock around the echo canceller, whose two calls share its buffers.
public final class CaptureProcessor: @unchecked Sendable {
    private let preprocess: OpaquePointer
    private let echo: OpaquePointer?
    private let lock = NSLock()
    private let scratch: UnsafeMutablePointer<Int16>
    public let frameSamples: Int
    public let options: CaptureProcessing

    /// - Parameter echoTailMs: the echo path length the canceller models (default 40 ms).
    public init(frameSamples: Int, options: CaptureProcessing, echoTailMs: Int = 40) throws(AudioError) {
        guard let pp = speex_preprocess_state_init(Int32(frameSamples), Int32(AudioFormat.sampleRate)) else {
            throw .codec("cannot create the SpeexDSP preprocessor")
        }
        preprocess = pp
        self.frameSamples = frameSamples
        self.options = options
        scratch = .allocate(capacity: frameSamples)
        callroom_preprocess_set_int(pp, callroom_pp_denoise, options.noiseSuppression ? 1 : 0)
        callroom_preprocess_set_int(pp, callroom_pp_noise_suppress, -25)
        callroom_preprocess_set_int(pp, callroom_pp_agc, options.automaticGain ? 1 : 0)
        callroom_preprocess_set_int(pp, callroom_pp_vad, 0)
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
    }

    deinit {
        if let echo { speex_echo_state_destroy(echo) }
        speex_preprocess_state_destroy(preprocess)
        scratch.deallocate()
    }

    /// Tells the echo canceller what was just played (playback thread).
    public func played(_ frame: UnsafeBufferPointer<Int16>) {
        guard let echo, frame.count == frameSamples, let base = frame.baseAddress else { return }
        lock.lock()
        speex_echo_playback(echo, base)
        lock.unlock()
    }

    /// Processes one captured frame in place (capture thread).
    public func process(_ frame: UnsafeMutableBufferPointer<Int16>) {
        guard frame.count == frameSamples, let base = frame.baseAddress else { return }
        if let echo {
            lock.lock()
            speex_echo_capture(echo, base, scratch)
            lock.unlock()
            base.update(from: scratch, count: frameSamples)
        }
        if options.noiseSuppression || options.automaticGain || echo != nil {
            _ = speex_preprocess_run(preprocess, base)
        }
    }
}
