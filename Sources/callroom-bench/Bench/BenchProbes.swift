import CallroomKit
import CallsAudio
import CallsCore
import CometChatCallsSDK
import Foundation
import Synchronization

/// Finds the onset of a click burst: the first loud sample after 100 ms without one. (Codec
/// pre-echo before an attack stays well below `loud`, so it does not hide the onset.)
struct OnsetDetector {
    var quietSamples = 0
    let loud: Int16 = 2000
    let quietNeeded = 4800  // 100 ms

    /// The sample index of an onset in `frame`, if one starts here.
    mutating func onset(in frame: UnsafeBufferPointer<Int16>) -> Int? {
        for (i, s) in frame.enumerated() {
            let a = abs(Int(s))
            if a > Int(loud), quietSamples >= quietNeeded {
                quietSamples = 0
                return i
            }
            quietSamples = a < Int(loud) ? quietSamples + 1 : 0
        }
        return nil
    }
}

/// A microphone that clicks: 1 kHz bursts every 400 ms, each starting at a different offset
/// inside its frame, paced in real time. Records when each burst's first sample "was spoken".
final class MarkerInput: AudioInput, Sendable {
    let name = "marker"
    /// The reader's own (never contended: the lock makes that checked).
    private let state: Locked<(pacer: Pacer, sample: Int)>
    private let frameSamples: Int
    private let closed = Atomic<Bool>(false)
    let mouthTimes = Locked<[UInt64]>([])
    static let interval = 19_200  // 400 ms
    static let burst = 2_400  // 50 ms

    init(frameSamples: Int) {
        self.frameSamples = frameSamples
        state = Locked((Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / 48_000), 0))
    }

    func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        state.withLock { st in
            st.pacer.wait(samples: frame.count)
            let now = monotonicNanoseconds()
            let periodNs = UInt64(frameSamples) * 1_000_000_000 / 48_000
            for i in 0..<frame.count {
                // Bursts start 0, 7, 14, … ms into successive 400 ms slots (offsets vary within frames).
                let slot = st.sample / Self.interval
                let start = slot * Self.interval + (slot * 336) % frameSamples
                let k = st.sample - start
                if k == 0 { mouthTimes.withLock { $0.append(now - periodNs + UInt64(i) * 1_000_000_000 / 48_000) } }
                frame[i] = (k >= 0 && k < Self.burst) ? Int16(sin(2 * Double.pi * 1000 * Double(k) / 48_000) * 16_000) : 0
                st.sample += 1
            }
        }
    }

    func close() { closed.store(true, ordering: .releasing) }
}

/// A speaker that listens: paced like a device, it notes when each click reaches the ear — the
/// chunk's write time plus the sound a real device still has queued then (one playback period:
/// an ALSA playback write returns when the queue is down to one period, `ALSADevice`) plus the
/// onset's offset in the chunk.
final class EarOutput: AudioOutput, Sendable {
    let name = "ear"
    /// The writer's own (never contended: the lock makes that checked).
    private let state: Locked<(pacer: Pacer, detector: OnsetDetector, lastWrite: UInt64)>
    private let periodNs: UInt64
    private let queuedNs: UInt64
    private let closed = Atomic<Bool>(false)
    let earTimes = Locked<[UInt64]>([])
    let stalls = Atomic<Int>(0)
    let frames = Atomic<Int>(0)
    let silentFrames = Atomic<Int>(0)
    /// Also writes every frame heard here (for an offline speech-quality score).
    private let recorder: FileOutput?

    /// - Parameter queuedSamples: what the device holds when a chunk is written (the playback period).
    init(frameSamples: Int, queuedSamples: Int, recorder: FileOutput? = nil) {
        periodNs = UInt64(frameSamples) * 1_000_000_000 / 48_000
        queuedNs = UInt64(queuedSamples) * 1_000_000_000 / 48_000
        state = Locked((Pacer(periodNanoseconds: periodNs), OnsetDetector(), 0))
        self.recorder = recorder
    }

    func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        let now = monotonicNanoseconds()
        frames.add(1, ordering: .relaxed)
        if frame.allSatisfy({ abs(Int($0)) < 100 }) { silentFrames.add(1, ordering: .relaxed) }
        try? recorder?.write(frame)
        state.withLock { st in
            if st.lastWrite != 0 && now - st.lastWrite > 3 * periodNs { stalls.add(1, ordering: .relaxed) }
            st.lastWrite = now
            if let i = st.detector.onset(in: frame) {
                // The device still plays what it has queued before this chunk's first sample.
                earTimes.withLock { $0.append(now + queuedNs + UInt64(i) * 1_000_000_000 / 48_000) }
            }
            st.pacer.wait(samples: frame.count)
        }
    }

    func close() { closed.store(true, ordering: .releasing) }
}

/// Per-stage timing of the clicks through the pipeline. Written from the capture, receive and
/// playback threads; read when the run is over (`timings`).
final class StageProbe: MediaProbe {
    struct Timings: Sendable {
        var detector = OnsetDetector()
        var playDetector = OnsetDetector()
        var onsetSeq: [UInt16: UInt64] = [:]  // seq → frame captured
        var sentAt: [UInt16: UInt64] = [:]
        var receivedAt: [UInt16: UInt64] = [:]
        var playedAt: [UInt64] = []
    }
    private let state = Locked(Timings())
    var timings: Timings { state.withLock { $0 } }

    func captured(_ frame: UnsafeBufferPointer<Int16>, sequence: UInt16, at t: UInt64) {
        state.withLock { s in if s.detector.onset(in: frame) != nil { s.onsetSeq[sequence] = t } }
    }
    func sent(sequence: UInt16, at t: UInt64) {
        state.withLock { s in if s.onsetSeq[sequence] != nil { s.sentAt[sequence] = t } }
    }
    func received(ssrc: UInt32, sequence: UInt16, at t: UInt64) {
        state.withLock { $0.receivedAt[sequence] = t }
    }
    func played(_ frame: UnsafeBufferPointer<Int16>, at t: UInt64) {
        state.withLock { s in if s.playDetector.onset(in: frame) != nil { s.playedAt.append(t) } }
    }
}
