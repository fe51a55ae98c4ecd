import CallsCore
import Foundation
import Synchronization

/// `null` input: silence, paced in real time.
public final class NullInput: AudioInput, Sendable {
    public let name = "null"
    /// (Its one reader's: the lock is never contended, it makes that checked.)
    private let pacer: Locked<Pacer>
    private let closed = Atomic<Bool>(false)

    public init(frameSamples: Int) {
        pacer = Locked(Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate)))
    }

    public func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        pacer.withLock { $0.wait(samples: frame.count) }
        frame.update(repeating: 0)
    }

    public func close() { closed.store(true, ordering: .releasing) }
}

/// `null` output: discards frames, paced in real time.
public final class NullOutput: AudioOutput, Sendable {
    public let name = "null"
    /// (Its one writer's: the lock is never contended, it makes that checked.)
    private let pacer: Locked<Pacer>
    private let closed = Atomic<Bool>(false)

    public init(frameSamples: Int) {
        pacer = Locked(Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate)))
    }

    public func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        pacer.withLock { $0.wait(samples: frame.count) }
    }

    public func close() { closed.store(true, ordering: .releasing) }
}

/// `tone:HZ` input: a sine wave at -12 dBFS, paced in real time. With a `cadence` it speaks in
/// bursts (on/off periods in ms) so meters and voice activity move like speech.
public final class ToneInput: AudioInput, Sendable {
    public let name: String
    public let frequency: Double
    public let amplitude: Double
    private let cadence: (onMs: Int, offMs: Int)?
    /// The oscillator: (cos, sin) of the phase, turned by one sample's step per sample (two
    /// multiplications instead of a `sin` call: a synthetic microphone should cost next to nothing).
    private struct Oscillator { var re = 1.0, im = 0.0, elapsedSamples = 0 }
    private let oscillator = Locked(Oscillator())
    private let stepCos: Double, stepSin: Double
    /// (Its one reader's: the locks are never contended, they make that checked.)
    private let pacer: Locked<Pacer>
    private let closed = Atomic<Bool>(false)

    public init(frequency: Double, frameSamples: Int, amplitude: Double = 0.25, cadence: (onMs: Int, offMs: Int)? = nil) {
        self.frequency = frequency
        self.amplitude = amplitude
        self.cadence = cadence
        self.name = "tone:\(frequency.formatted(.number.grouping(.never)))"
        let step = 2 * Double.pi * frequency / Double(AudioFormat.sampleRate)
        (stepCos, stepSin) = (cos(step), sin(step))
        pacer = Locked(Pacer(periodNanoseconds: UInt64(frameSamples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate)))
    }

    public func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        pacer.withLock { $0.wait(samples: frame.count) }
        fill(frame)
    }

    /// Generates the next frame without pacing (for benchmarks and tests).
    public func fill(_ frame: UnsafeMutableBufferPointer<Int16>) {
        oscillator.withLock { o in
            var on = true
            if let c = cadence {
                let periodSamples = (c.onMs + c.offMs) * AudioFormat.sampleRate / 1000
                on = (o.elapsedSamples % max(periodSamples, 1)) < c.onMs * AudioFormat.sampleRate / 1000
            }
            let scale = on ? min(amplitude, 1) * 32766 : 0  // 32766: rounding never reaches past Int16
            var (re, im) = (o.re, o.im)
            for i in 0..<frame.count {
                frame[i] = Int16(im * scale)
                (re, im) = (re * stepCos - im * stepSin, re * stepSin + im * stepCos)
            }
            // Rounding would slowly change the amplitude: back onto the unit circle once a frame.
            let norm = 1 / (re * re + im * im).squareRoot()
            o.re = re * norm
            o.im = im * norm
            o.elapsedSamples += frame.count
        }
    }

    public func close() { closed.store(true, ordering: .releasing) }
}
