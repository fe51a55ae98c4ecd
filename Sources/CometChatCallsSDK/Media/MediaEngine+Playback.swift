import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
import CallsVideo
import Foundation
import Synchronization

/// The playback thread: a frame mixed just in time for the device, its period raised when the
/// device under-runs, the frame boundary moved in silence; and the devices' losses and returns.
/// Thread rules: `playbackLoop` is the engine's playback thread; the rest any thread.
extension MediaEngine {

    /// ALSA over- and under-runs recovered so far (capture + playback).
    var xruns: Int {
        let i = (devices.input as? ALSAInput)?.xruns ?? 0
        let o = (devices.output as? ALSAOutput)?.xruns ?? 0
        return i + o
    }

    /// Device failures seen so far (for reports).
    var deviceFailureCount: Int { devices.failures }

    /// Plays a 440 Hz tone locally (not sent) for `seconds`, mixed into what you hear.
    func playTestTone(seconds: Double) {
        testTone.withLock { $0 = ToneInput(frequency: 440, frameSamples: frameSamples, amplitude: 0.2) }
        testToneFrames.store(Int(seconds * 1000) / frameMs, ordering: .relaxed)
    }

    func playbackLoop() {
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frameSamples)
        let tonePCM = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frameSamples)
        defer { out.deallocate(); tonePCM.deallocate() }
        // A frame is mixed when the device's queue is down to one period, and written whole.
        var policy = PlaybackPeriodPolicy(frameMs: frameMs, fixedMs: options.playbackPeriodMs, now: monotonicNanoseconds())
        // A decision moves the boundary at most a quarter frame (the next window checks the move).
        var phase = PlayoutPhase(maxStepNanoseconds: UInt64(frameMs) * 250_000)
        func use(periodMs ms: Int) { playbackPeriodMs.store(ms, ordering: .relaxed) }
        use(periodMs: policy.periodMs)
        var offset = frameSamples
        var length = frameSamples
        var device = devices.output
        var frames = 0
        // An advance the evidence asked for waits for a quiet frame (at most a second): cutting
        // milliseconds out of speech is heard (and costs PESQ), out of silence it is not.
        var advanceSamples = 0, advanceFramesLeft = 0
        while running.load(ordering: .acquiring) {
            if offset >= length {
                // About once a second: does the device keep up with this period?
                frames += 1
                let current = devices.output
                if current !== device { device = current; policy.reopened(now: monotonicNanoseconds()) }
                if frames % max(1, 1000 / frameMs) == 0, let counting = current as? UnderrunCounting,
                   let next = policy.observe(xruns: counting.xruns, now: monotonicNanoseconds()) {
                    let from = policy.backOffs.last
                    if let reopen = options.reopenOutput, let fresh = try? reopen(next) {
                        devices.replaceOutput(fresh)
                        device = fresh
                    }
                    policy.reopened(now: monotonicNanoseconds())
                    use(periodMs: next)
                    options.onNotice?("playback period raised to \(next) ms: \(from?.xruns ?? 0) under-runs at \(from?.fromMs ?? 0) ms within 10 s")
                }
                drainSocket()  // every packet that has arrived is in its jitter buffer for this mix
                let waited = receiver.mixNext(into: out, now: monotonicNanoseconds()) { mixer in
                    guard testToneFrames.load(ordering: .relaxed) > 0, let tone = testTone.withLock({ $0 }) else { return }
                    testToneFrames.subtract(1, ordering: .relaxed)
                    if (try? tone.read(tonePCM)) != nil { mixer.add(UnsafeBufferPointer(tonePCM), gain: 1) }
                }
                filters.played(UnsafeBufferPointer(out), FrameInfo(at: monotonicNanoseconds()))
                offset = 0
                // Packets that always wait longer than the margin: move the frame boundary earlier
                // by playing a quiet frame that much short.
                let step = phase.advance(waited: waited)
                if step > 0 {
                    advanceSamples = min(frameSamples / 4, Int(step / 1_000_000) * AudioFormat.samples(ms: 1))
                    advanceFramesLeft = max(1, 1000 / frameMs)
                }
                length = frameSamples
                if advanceFramesLeft > 0 {
                    advanceFramesLeft -= 1
                    if PlayoutPhase.isQuiet(UnsafeBufferPointer(out)) {
                        length = frameSamples - advanceSamples
                        advanceFramesLeft = 0
                        phaseAdvances.add(1, ordering: .relaxed)
                        phaseAdvanceSamples.add(advanceSamples, ordering: .relaxed)
                    }
                }
            }
            // The whole frame at once: the device's write returns when its queue is down to one
            // period, so the next frame is mixed just in time (one wake-up a frame, not a period).
            let n = length - offset
            guard let output = devices.output else { break }
            do { try output.write(UnsafeBufferPointer(rebasing: out[offset..<(offset + n)])) } catch {
                // A closed output that was replaced is expected.
                if running.load(ordering: .acquiring), devices.output !== output { continue }
                guard error != .closed, running.load(ordering: .acquiring) else { break }
                devices.outputLost(error, periodMs: playbackPeriodMs.load(ordering: .relaxed))
            }
            offset += n
        }
    }
}
