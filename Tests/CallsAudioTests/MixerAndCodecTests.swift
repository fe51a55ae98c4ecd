import CallRoomTestSupport
import CallsAudio
import Foundation
import Testing

@Suite("Mixer, levels, Opus, resampling")
struct MixerAndCodecTests {
    func tone(_ hz: Double, amplitude: Double, count: Int, rate: Double = 48_000) -> [Int16] {
        (0..<count).map { Int16(sin(2 * Double.pi * hz * Double($0) / rate) * amplitude * 32767) }
    }

    @Test func limiterIsTransparentBelowKneeAndBoundedAbove() {
        #expect(Mixer.limit(0.5) == 0.5)
        #expect(Mixer.limit(-0.7) == -0.7)
        var last: Float = 0
        for i in 0...400 {
            let x = Float(i) / 100
            let y = Mixer.limit(x)
            #expect(y >= last, "monotonic")
            #expect(y < 1.0)
            #expect(Mixer.limit(-x) == -y, "odd symmetric")
            last = y
        }
    }

    @Test func mixingLoudSourcesNeverWrapsAround() {
        let a = tone(440, amplitude: 0.95, count: 960)
        let m = Mixer(frameSamples: 960)
        m.reset()
        a.withUnsafeBufferPointer { m.add($0) }
        a.withUnsafeBufferPointer { m.add($0) }
        a.withUnsafeBufferPointer { m.add($0) }
        var out = [Int16](repeating: 0, count: 960)
        out.withUnsafeMutableBufferPointer { m.render(into: $0) }
        for i in 0..<960 {
            // The sum never flips sign (which is what wrap-around would do).
            if a[i] > 1000 { #expect(out[i] > 0) }
            if a[i] < -1000 { #expect(out[i] < 0) }
        }
        #expect(m.limitedSamples > 0)
        #expect(out.map { abs(Int($0)) }.max() ?? 0 < 32767)
    }

    @Test func levelMeter() {
        let full = tone(1000, amplitude: 1.0, count: 4800)
        let db = full.withUnsafeBufferPointer { LevelMeter.rmsDBFS($0) }
        #expect(abs(db - (-3.01)) < 0.2, "full-scale sine is -3 dBFS, got \(db)")
        let silent = [Int16](repeating: 0, count: 960)
        #expect(silent.withUnsafeBufferPointer { LevelMeter.rmsDBFS($0) } == LevelMeter.silenceDBFS)
        #expect(LevelMeter.rfc6464(dbfs: -3) == 3)
        #expect(LevelMeter.rfc6464(dbfs: -200) == 127)
        #expect(LevelMeter.rfc6464(dbfs: 2) == 0)
    }

    @Test func opusRoundTripKeepsTheTone() throws {
        let enc = try OpusEncoder(frameMs: 20)
        let dec = try OpusDecoder()
        let input = tone(440, amplitude: 0.3, count: 960 * 25)
        var decoded: [Int16] = []
        var packet = [UInt8](repeating: 0, count: 1500)
        var pcm = [Int16](repeating: 0, count: 960)
        for f in 0..<25 {
            let n = try input[(f * 960)..<((f + 1) * 960)].withUnsafeBufferPointer { i in
                try packet.withUnsafeMutableBufferPointer { try enc.encode(i, into: $0) }
            }
            #expect(n > 10 && n < 400)
            let got = packet.prefix(n).withUnsafeBufferPointer { p in pcm.withUnsafeMutableBufferPointer { dec.decode(p, into: $0) } }
            #expect(got == 960)
            decoded += pcm
        }
        #expect(enc.lookahead > 0)
        let tail = decoded[(960 * 5)...]
        #expect(SignalAnalysis.toneDominanceDB(tail, frequency: 440, others: [300, 600, 1000]) > 20)
        #expect(abs(SignalAnalysis.rmsDBFS(tail) - SignalAnalysis.rmsDBFS(input[(960 * 5)...])) < 2)
    }

    @Test func lossIsConcealedAndRecoveredFromFEC() throws {
        let enc = try OpusEncoder(frameMs: 20, fec: true, expectedLossPercent: 20)
        let dec = try OpusDecoder()
        let input = tone(440, amplitude: 0.3, count: 960 * 12)
        var packets: [[UInt8]] = []
        var buf = [UInt8](repeating: 0, count: 1500)
        for f in 0..<12 {
            let n = try input[(f * 960)..<((f + 1) * 960)].withUnsafeBufferPointer { i in
                try buf.withUnsafeMutableBufferPointer { try enc.encode(i, into: $0) }
            }
            packets.append(Array(buf.prefix(n)))
        }
        var pcm = [Int16](repeating: 0, count: 960)
        for f in 0..<8 { _ = packets[f].withUnsafeBufferPointer { p in pcm.withUnsafeMutableBufferPointer { dec.decode(p, into: $0) } } }
        // Packet 8 is lost: recover it from packet 9's FEC, then conceal one more.
        let recovered = packets[9].withUnsafeBufferPointer { p in pcm.withUnsafeMutableBufferPointer { dec.recover(from: p, into: $0) } }
        #expect(recovered == 960)
        #expect(SignalAnalysis.rmsDBFS(pcm[...]) > -30, "recovered audio is not silence")
        let concealed = pcm.withUnsafeMutableBufferPointer { dec.conceal(into: $0) }
        #expect(concealed == 960)
    }

    @Test func opusRejectsBadFrameSizes() {
        #expect(throws: AudioError.self) { try OpusEncoder(frameMs: 15) }
    }

    @Test func resamplerKeepsPitchAndDuration() throws {
        let input = tone(1000, amplitude: 0.5, count: 44_100, rate: 44_100)
        let out = try Resampler(from: 44_100, to: 48_000).process(input)
        #expect(out.count == 48_000)
        let mid = out[4800..<43_200]
        #expect(SignalAnalysis.toneDominanceDB(mid, frequency: 1000, others: [918.75, 1100, 500]) > 25)
    }

    /// A file converted whole lines up with the original sample for sample (a click at input
    /// sample n is at 3n at 48 kHz, so a looped file stays in step), and a 16 kHz file keeps the
    /// top of its band at the quality files are read with.
    @Test func aWholeFileIsConvertedInStepAndKeepsTheTopOfTheBand() throws {
        var click = [Int16](repeating: 0, count: 16_000)
        click[8000] = 20_000
        let out = try Resampler(from: 16_000, to: 48_000, quality: 10).process(click)
        #expect(out.count == 48_000)
        let peak = out.indices.max { abs(Int(out[$0])) < abs(Int(out[$1])) } ?? 0
        #expect(abs(peak - 24_000) <= 1, "the click at \(peak)")
        // 7.7 kHz, near the top of a 16 kHz file's band: kept, and its image at 16 − 7.7 = 8.3 kHz
        // (noise Opus would spend bits on: it codes up to 20 kHz at 48 kHz) stays far under it.
        func topOfBand(quality: Int32) throws -> (levelDB: Double, imageDB: Double) {
            let high = tone(7700, amplitude: 0.5, count: 16_000, rate: 16_000)
            let up = try Resampler(from: 16_000, to: 48_000, quality: quality).process(high)
            let mid = up[4800..<43_200]
            return (SignalAnalysis.rmsDBFS(mid) - SignalAnalysis.rmsDBFS(high[1600..<14_400]),
                    SignalAnalysis.toneDominanceDB(mid, frequency: 7700, others: [8300]))
        }
        let best = try topOfBand(quality: 10), voip = try topOfBand(quality: 5)
        #expect(best.levelDB > -1, "7.7 kHz at quality 10: \(best.levelDB) dB")
        #expect(best.imageDB > 60, "its 8.3 kHz image: \(best.imageDB) dB under")
        #expect(voip.levelDB < -6, "SpeexDSP's VoIP quality 5 cuts it (\(voip.levelDB) dB): why files are read at 10")
    }
}
