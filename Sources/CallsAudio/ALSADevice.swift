import CAlsa
import Foundation
import Synchronization

/// One ALSA PCM opened for capture or playback at 48 kHz mono S16, owning its handle.
///
/// Playback keeps the device's queue short, not full: the buffer holds a frame plus two
/// periods, and a write returns only once the queue has drained back to one period
/// (`avail_min` = buffer − period), so the caller mixes each frame just in time and writes it
/// whole — one wake-up a frame, and one period of queued sound between the mix and the ear.
/// (Writing a period at a time into a buffer of four, as `snd_pcm_set_params` sets it up,
/// keeps the buffer full: three to four periods of latency, and a wake-up every period.)
///
/// Real devices pace themselves; the `null` and `file` plugins do not (a second of audio
/// passes in under a millisecond), so for those the device paces with a `Pacer`. Waits are
/// bounded (`snd_pcm_wait` with 100 ms) so `close()` from another thread ends a blocked read
/// or write promptly. Over- and under-runs (`-EPIPE`) are recovered with `snd_pcm_prepare` and
/// counted in `xruns`.
///
/// Thread rules: `transfer` from one audio thread; `close` and `xruns` from any thread.
final class ALSADevice: @unchecked Sendable {
    enum Direction: Sendable { case capture, playback }

    let name: String
    let direction: Direction
    private var pcm: OpaquePointer?
    private var config: OpaquePointer?
    private var pacer: Pacer?
    private let closed = Atomic<Bool>(false)
    private let lock = NSLock()
    let xruns = Atomic<Int>(0)
    /// The period ALSA granted, in samples.
    private(set) var periodSamples = 0
    /// The buffer ALSA granted, in samples.
    private(set) var bufferSamples = 0
    /// Playback: the queue a write waits for (`avail_min`: free space = buffer − one period).
    private(set) var availMin = 0

    /// - Parameters:
    ///   - name: the ALSA PCM name (`default`, `hw:0,0`, `null`, or one in `configText`).
    ///   - configText: an ALSA configuration to resolve `name` in instead of the system's
    ///     (lets tests use `file` and `null` PCMs without touching /etc).
    /// - Parameter periodMs: the device period (2, 5, 10 or 20 ms; default: the frame length).
    ///   Capture: the buffer holds four periods. Playback: a frame plus two periods, one period
    ///   kept queued; shorter periods mean less playback latency.
    init(name: String, direction: Direction, frameSamples: Int, periodMs: Int? = nil, configText: String? = nil) throws(AudioError) {
        callroom_alsa_silence_errors()
        self.name = name
        self.direction = direction
        let stream = direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        var handle: OpaquePointer?
        var rc: Int32
        if let text = configText {
            var top: OpaquePointer?
            var input: OpaquePointer?
            guard snd_config_top(&top) == 0, let top else { throw .deviceUnavailable(name: name, reason: "cannot create configuration") }
            config = top
            rc = snd_input_buffer_open(&input, text, text.utf8.count)
            if rc == 0, let input {
                rc = snd_config_load(top, input)
                snd_input_close(input)
            }
            guard rc == 0 else { throw .deviceUnavailable(name: name, reason: "bad ALSA configuration: \(Self.message(rc))") }
            rc = snd_pcm_open_lconf(&handle, name, stream, SND_PCM_NONBLOCK, top)
        } else {
            rc = snd_pcm_open(&handle, name, stream, SND_PCM_NONBLOCK)
        }
        guard rc == 0, let handle else {
            throw .deviceUnavailable(name: name, reason: Self.message(rc))
        }
        pcm = handle
        let periodSamples = periodMs.map { AudioFormat.samples(ms: $0) } ?? frameSamples
        if direction == .playback {
            rc = Self.configurePlayback(handle, periodSamples: periodSamples, frameSamples: frameSamples)
        } else {
            let latencyUs = UInt32(periodSamples * 4 * 1_000_000 / AudioFormat.sampleRate)
            rc = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1,
                                    UInt32(AudioFormat.sampleRate), 1, latencyUs)
        }
        guard rc == 0 else {
            snd_pcm_close(handle)
            pcm = nil
            throw .deviceUnavailable(name: name, reason: "cannot set 48 kHz mono S16: \(Self.message(rc))")
        }
        var buffer: snd_pcm_uframes_t = 0, period: snd_pcm_uframes_t = 0
        if snd_pcm_get_params(handle, &buffer, &period) == 0 {
            self.periodSamples = Int(period)
            self.bufferSamples = Int(buffer)
        }
        if direction == .playback { availMin = max(1, bufferSamples - self.periodSamples) }
        let type = snd_pcm_type(handle)
        if type == SND_PCM_TYPE_NULL || type == SND_PCM_TYPE_FILE {
            pacer = Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate))
        }
        snd_pcm_prepare(handle)
    }

    /// 48 kHz mono S16, a period of `periodSamples`, a buffer of a frame plus two periods;
    /// playback starts with the first write and a write waits for the queue to drain to one
    /// period. Returns 0 or a negative ALSA error.
    private static func configurePlayback(_ pcm: OpaquePointer, periodSamples: Int, frameSamples: Int) -> Int32 {
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) == 0, let hw else { return -ENOMEM }
        defer { snd_pcm_hw_params_free(hw) }
        var rc = snd_pcm_hw_params_any(pcm, hw)
        if rc >= 0 { rc = snd_pcm_hw_params_set_rate_resample(pcm, hw, 1) }
        if rc >= 0 { rc = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
        if rc >= 0 { rc = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE) }
        if rc >= 0 { rc = snd_pcm_hw_params_set_channels(pcm, hw, 1) }
        var rate = UInt32(AudioFormat.sampleRate), dir: Int32 = 0
        if rc >= 0 { rc = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir) }
        guard rc >= 0 else { return rc }
        guard rate == UInt32(AudioFormat.sampleRate) else { return -EINVAL }
        var period = snd_pcm_uframes_t(periodSamples)
        rc = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir)
        var buffer = snd_pcm_uframes_t(frameSamples + 2 * Int(period))
        if rc >= 0 { rc = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer) }
        if rc >= 0 { rc = snd_pcm_hw_params(pcm, hw) }
        guard rc >= 0 else { return rc }
        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) == 0, let sw else { return -ENOMEM }
        defer { snd_pcm_sw_params_free(sw) }
        var granted: snd_pcm_uframes_t = 0, grantedPeriod: snd_pcm_uframes_t = 0
        rc = snd_pcm_get_params(pcm, &granted, &grantedPeriod)
        if rc >= 0 { rc = snd_pcm_sw_params_current(pcm, sw) }
        if rc >= 0 { rc = snd_pcm_sw_params_set_start_threshold(pcm, sw, 1) }
        if rc >= 0 { rc = snd_pcm_sw_params_set_avail_min(pcm, sw, max(1, granted - min(granted, grantedPeriod))) }
        if rc >= 0 { rc = snd_pcm_sw_params(pcm, sw) }
        return min(rc, 0)
    }

    deinit {
        if let pcm { snd_pcm_close(pcm) }
        if let config { snd_config_delete(config) }
    }

    var isSelfPaced: Bool { pacer == nil }

    /// Reads or writes exactly `frame.count` samples, blocking in bounded waits.
    func transfer(_ frame: UnsafeMutableRawPointer, samples: Int) throws(AudioError) {
        pacer?.wait(samples: samples)
        var done = 0
        while done < samples {
            guard !closed.load(ordering: .acquiring) else { throw .closed }
            lock.lock()
            guard let pcm else { lock.unlock(); throw .closed }
            let ptr = frame + done * 2
            let n: Int = direction == .capture
                ? snd_pcm_readi(pcm, ptr, snd_pcm_uframes_t(samples - done))
                : snd_pcm_writei(pcm, ptr, snd_pcm_uframes_t(samples - done))
            lock.unlock()
            if n >= 0 {
                done += n
                if done == samples && direction == .playback { try drainToOnePeriod() }
                continue
            }
            switch Int32(n) {
            case -EAGAIN:
                lock.lock()
                if let pcm = self.pcm { _ = snd_pcm_wait(pcm, 100) }
                lock.unlock()
            case -EPIPE:
                xruns.add(1, ordering: .relaxed)
                lock.lock()
                if let pcm = self.pcm { snd_pcm_prepare(pcm) }
                lock.unlock()
            case -ESTRPIPE:
                lock.lock()
                if let pcm = self.pcm { while snd_pcm_resume(pcm) == -EAGAIN { usleep(10_000) }; snd_pcm_prepare(pcm) }
                lock.unlock()
            default:
                throw .deviceFailed(name: name, reason: Self.message(Int32(n)))
            }
        }
    }

    /// Playback: waits until the queue is down to one period (free space ≥ `availMin`), so the
    /// next frame is mixed just in time. Bounded waits, so `close()` ends it promptly.
    private func drainToOnePeriod() throws(AudioError) {
        while true {
            guard !closed.load(ordering: .acquiring) else { throw .closed }
            lock.lock()
            guard let pcm else { lock.unlock(); throw .closed }
            let avail = snd_pcm_avail_update(pcm)
            // Not running (nothing drains) or an xrun (the next write recovers it): done.
            let draining = pacer == nil && avail >= 0 && avail < availMin && snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING
            if draining { _ = snd_pcm_wait(pcm, 100) }
            lock.unlock()
            if !draining { return }
        }
    }

    func close() {
        closed.store(true, ordering: .releasing)
        lock.lock()
        if let pcm {
            if direction == .playback { snd_pcm_drop(pcm) }
            snd_pcm_close(pcm)
        }
        pcm = nil
        lock.unlock()
    }

    static func message(_ rc: Int32) -> String { String(cString: snd_strerror(rc)) }
}

/// `alsa:NAME` input: capture from an ALSA PCM.
public final class ALSAInput: AudioInput, Sendable {
    public var name: String { "alsa:\(device.name)" }
    private let device: ALSADevice

    public init(device: String, frameSamples: Int, periodMs: Int? = nil, configText: String? = nil) throws(AudioError) {
        self.device = try ALSADevice(name: device, direction: .capture, frameSamples: frameSamples, periodMs: periodMs, configText: configText)
    }

    /// The device period ALSA granted, in samples.
    public var periodSamples: Int { device.periodSamples }

    public func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {
        frame.update(repeating: 0)  // the null PCM reports frames without writing them
        guard let base = frame.baseAddress else { return }
        try device.transfer(UnsafeMutableRawPointer(base), samples: frame.count)
    }

    /// Over-runs recovered so far.
    public var xruns: Int { device.xruns.load(ordering: .relaxed) }
    public func close() { device.close() }
}

/// `alsa:NAME` output: playback to an ALSA PCM.
public final class ALSAOutput: AudioOutput, UnderrunCounting, Sendable {
    public var name: String { "alsa:\(device.name)" }
    private let device: ALSADevice

    public init(device: String, frameSamples: Int, periodMs: Int? = nil, configText: String? = nil) throws(AudioError) {
        self.device = try ALSADevice(name: device, direction: .playback, frameSamples: frameSamples, periodMs: periodMs, configText: configText)
    }

    /// The device period ALSA granted, in samples.
    public var periodSamples: Int { device.periodSamples }
    /// The device buffer ALSA granted, in samples (a frame plus two periods, asked).
    public var bufferSamples: Int { device.bufferSamples }
    /// The free space a write waits for before it returns (the buffer less one period).
    public var availMin: Int { device.availMin }

    public func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {
        guard let base = frame.baseAddress else { return }
        try device.transfer(UnsafeMutableRawPointer(mutating: base), samples: frame.count)
    }

    /// Under-runs recovered so far.
    public var xruns: Int { device.xruns.load(ordering: .relaxed) }
    public func close() { device.close() }
}
