import CallRoomTestSupport
import CallsAudio
import Foundation
import Testing

@Suite("Capture processing: noise suppression, AGC, echo cancellation")
struct CaptureProcessorTests {
    func noise(_ rng: inout SplitMixForTests, count: Int, amplitude: Double) -> [Int16] {
        (0..<count).map { _ in Int16((Double(rng.next() % 20001) / 10000 - 1) * amplitude * 32767) }
    }

    @Test func noiseSuppressionLowersStationaryNoise() throws {
        let p = try CaptureProcessor(frameSamples: 960, options: CaptureProcessing(noiseSuppression: true))
        var rng = SplitMixForTests(seed: 9)
        var inLevel: [Double] = [], outLevel: [Double] = []
        for f in 0..<150 {
            var frame = noise(&rng, count: 960, amplitude: 0.05)
            if f >= 100 { inLevel.append(SignalAnalysis.rmsDBFS(frame[...])) }
            frame.withUnsafeMutableBufferPointer { p.process($0) }
            if f >= 100 { outLevel.append(SignalAnalysis.rmsDBFS(frame[...])) }
        }
        let reduction = inLevel.reduce(0, +) / 50 - outLevel.reduce(0, +) / 50
        #expect(reduction > 6, "noise reduced by \(reduction) dB")
    }

    @Test func automaticGainRaisesAQuietTalker() throws {
        let p = try CaptureProcessor(frameSamples: 960, options: CaptureProcessing(automaticGain: true))
        let tone = ToneInput(frequency: 300, frameSamples: 960, amplitude: 0.01)
        var first = 0.0, last = 0.0
        for f in 0..<400 {
            var frame = [Int16](repeating: 0, count: 960)
            frame.withUnsafeMutableBufferPointer { tone.fill($0) }
            frame.withUnsafeMutableBufferPointer { p.process($0) }
            if f == 5 { first = SignalAnalysis.rmsDBFS(frame[...]) }
            if f == 399 { last = SignalAnalysis.rmsDBFS(frame[...]) }
        }
        #expect(last > first + 6, "gain rose from \(first) to \(last) dBFS")
    }

    @Test func echoCancellationRemovesWhatWePlayed() throws {
        let p = try CaptureProcessor(frameSamples: 960, options: CaptureProcessing(echoCancellation: true))
        var rng = SplitMixForTests(seed: 4)
        var far: [[Int16]] = []
        var echoIn: [Double] = [], echoOut: [Double] = []
        for f in 0..<400 {
            // Far end: noise handed to the device now is heard two frames later (the device's
            // buffer), 5 ms after that (the room), at half level.
            let played = noise(&rng, count: 960, amplitude: 0.3)
            far.append(played)
            played.withUnsafeBufferPointer { p.played($0) }
            let silent = [Int16](repeating: 0, count: 960)
            let heard = f >= 2 ? far[f - 2] : silent, before = f >= 3 ? far[f - 3] : silent
            var mic = (0..<960).map { i -> Int16 in
                let j = i - 240
                return Int16((j >= 0 ? Double(heard[j]) : Double(before[960 + j])) * 0.5)
            }
            if f >= 300 { echoIn.append(SignalAnalysis.rmsDBFS(mic[...])) }
            mic.withUnsafeMutableBufferPointer { p.process($0) }
            if f >= 300 { echoOut.append(SignalAnalysis.rmsDBFS(mic[...])) }
        }
        let erle = echoIn.reduce(0, +) / 100 - echoOut.reduce(0, +) / 100
        #expect(erle > 10, "echo return loss enhancement \(erle) dB")
    }

    @Test func offChangesNothing() throws {
        let p = try CaptureProcessor(frameSamples: 960, options: .off)
        var frame = (0..<960).map { Int16(truncatingIfNeeded: $0 * 37) }
        let before = frame
        frame.withUnsafeMutableBufferPointer { p.process($0) }
        #expect(frame == before)
    }
}
