import CallRoomTestSupport
import CallsAudio
import CallsCore
import Foundation
import Testing

/// The receive chain on its own, with real Opus packets: mixing, the roster, gains, limits,
/// loss reports, and the jitter buffer's preallocated slots.
@Suite("Receive mixer")
struct ReceiveMixerTests {
    /// `frames` RTP datagrams of a tone from one sender.
    func stream(ssrc: UInt32, hz: Double, frames: Int, frameMs: Int = 20) throws -> [[UInt8]] {
        let samples = frameMs * 48
        let tone = ToneInput(frequency: hz, frameSamples: samples, amplitude: 0.5)
        let encoder = try OpusEncoder(frameMs: frameMs)
        var pcm = [Int16](repeating: 0, count: samples), payload = [UInt8](repeating: 0, count: 1500)
        return try (0..<frames).map { f in
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            let n = try pcm.withUnsafeBufferPointer { p in try payload.withUnsafeMutableBufferPointer { try encoder.encode(p, into: $0) } }
            return RTPPacket(sequenceNumber: UInt16(f), timestamp: UInt32(f * samples), ssrc: ssrc, payload: Array(payload.prefix(n))).encoded()
        }
    }

    /// Someone on 10 ms frames in a room on 20 ms (or the other way round) is heard whole: a
    /// 20 ms packet is mixed over two 10 ms frames, two 10 ms packets make one 20 ms frame —
    /// the tone continuous, nothing concealed, each packet played once.
    @Test(arguments: [(10, 20), (20, 10)])
    func packetsOfAnotherLengthThanOurFrameAreHeardWhole(ourMs: Int, theirMs: Int) throws {
        let a = try stream(ssrc: 5, hz: 440, frames: 3000 / theirMs, frameMs: theirMs)
        let m = ReceiveMixer(frameSamples: ourMs * 48, jitterTargetFrames: 1)
        var heard: [Int16] = []
        var next = 0
        for tick in 0..<(3000 / ourMs) {
            let t = UInt64(tick * ourMs) * 1_000_000
            while next < a.count && UInt64(next * theirMs) * 1_000_000 <= t { _ = insert(m, a[next], at: t); next += 1 }
            var out = [Int16](repeating: 0, count: ourMs * 48)
            out.withUnsafeMutableBufferPointer { _ = m.mixNext(into: $0, now: t + 1) }
            heard += out
        }
        let stats = try #require(m.statistics().first?.value)
        #expect(stats.concealed == 0 && stats.recovered == 0, "\(stats)")
        #expect(stats.played + stats.shrunk >= a.count - 3, "each packet played once (or dropped with the warm-up): \(stats)")
        #expect(stats.played <= a.count)
        let sounding = heard.drop { abs(Int($0)) < 1000 }.dropFirst(960).dropLast(4800)  // (past the decoder's fade-in)
        #expect(sounding.count > 48_000 * 2, "over 2 s of tone")
        for w in SignalAnalysis.windows(Array(sounding), size: 960) where w.count == 960 {
            #expect(SignalAnalysis.rmsDBFS(w) > -12, "no gap in the tone")
        }
        #expect(SignalAnalysis.toneDominanceDB(sounding, frequency: 440, others: [220, 880]) > 25, "at its pitch")
    }

    func insert(_ m: ReceiveMixer, _ datagram: [UInt8], at t: UInt64) -> Bool {
        datagram.withUnsafeBytes { d in (try? RTPHeader(parsing: d)).map { m.insert($0, datagram: d, arrival: t) } ?? false }
    }

    /// Feeds frame `f` of each stream, mixes one frame; returns its RMS level.
    func tick(_ m: ReceiveMixer, _ streams: [[[UInt8]]], _ f: Int) -> Float {
        for s in streams { _ = insert(m, s[f], at: UInt64(f) * 20_000_000) }
        var out = [Int16](repeating: 0, count: 960)
        out.withUnsafeMutableBufferPointer { _ = m.mixNext(into: $0, now: UInt64(f) * 20_000_000 + 1) }
        return out.withUnsafeBufferPointer { LevelMeter.rmsDBFS($0) }
    }

    @Test func twoSendersAreHeardTogetherAndTheRosterAndGainsApply() throws {
        let a = try stream(ssrc: 1, hz: 300, frames: 60), b = try stream(ssrc: 2, hz: 700, frames: 60)
        let m = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 2)
        var level: Float = -127
        for f in 0..<20 { level = tick(m, [a, b], f) }
        #expect(level > -12, "both tones, mixed: \(level)")
        let levels = m.levels()
        #expect(levels.count == 2 && levels.values.allSatisfy { $0 > -12 }, "\(levels)")
        #expect(m.statistics()[1]?.played ?? 0 >= 15)
        // Silence one by gain, drop the other from the roster: nothing left to hear.
        m.setVolume(0, ssrc: 1)
        m.setActive([1])
        #expect(m.levels().keys.sorted() == [1])
        #expect(!insert(m, b[20], at: 0), "not in the roster")
        for f in 20..<30 { level = tick(m, [a], f) }
        #expect(level < -90, "gain 0: silence, \(level)")
        #expect(m.figures()[1]?.bytes ?? 0 > 1000)
    }

    /// `frames` RTP datagrams of a tone at `amplitude`, each carrying its RFC 6464 level.
    func levelledStream(ssrc: UInt32, hz: Double, amplitude: Double, frames: Int) throws -> [[UInt8]] {
        let tone = ToneInput(frequency: hz, frameSamples: 960, amplitude: amplitude)
        let encoder = try OpusEncoder(frameMs: 20)
        var pcm = [Int16](repeating: 0, count: 960), payload = [UInt8](repeating: 0, count: 1500)
        return try (0..<frames).map { f in
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            let db = pcm.withUnsafeBufferPointer { LevelMeter.rmsDBFS($0) }
            let n = try pcm.withUnsafeBufferPointer { p in try payload.withUnsafeMutableBufferPointer { try encoder.encode(p, into: $0) } }
            return RTPPacket(sequenceNumber: UInt16(f), timestamp: UInt32(f * 960), ssrc: ssrc,
                             audioLevel: .init(level: LevelMeter.rfc6464(dbfs: db), voiceActivity: true), payload: Array(payload.prefix(n))).encoded()
        }
    }

    @Test func withMoreTalkersThanItDecodesOnlyTheLoudestAreMixed() throws {
        // Six talkers at once, four heard: the two quietest (200 and 300 Hz, 20 dB down) are not
        // decoded, yet their meters move by the levels their packets carry. The same streams
        // through a mixer that decodes everyone are the reference.
        let freqs: [Double] = [200, 300, 500, 700, 900, 1100], amps = [0.01, 0.012, 0.1, 0.12, 0.14, 0.16]
        let streams = try (0..<6).map { try levelledStream(ssrc: UInt32(10 + $0), hz: freqs[$0], amplitude: amps[$0], frames: 80) }
        let four = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 1), all = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 1, loudest: 6)
        #expect(four.loudest == 4)
        var heard: [Int16] = [], reference: [Int16] = []
        for f in 0..<80 {
            for (m, into) in [(four, 0), (all, 1)] {
                for s in streams { _ = insert(m, s[f], at: UInt64(f) * 20_000_000) }
                var out = [Int16](repeating: 0, count: 960)
                out.withUnsafeMutableBufferPointer { _ = m.mixNext(into: $0, now: UInt64(f) * 20_000_000 + 1) }
                if f >= 20 { if into == 0 { heard += out } else { reference += out } }
            }
        }
        for hz in [500.0, 700, 900, 1100] {
            #expect(SignalAnalysis.toneDominanceDB(heard[...], frequency: hz, others: [150]) > 20, "\(hz) Hz is heard")
        }
        for quiet in [200.0, 300] {
            let without = SignalAnalysis.toneDominanceDB(heard[...], frequency: 500, others: [quiet])
            let with = SignalAnalysis.toneDominanceDB(reference[...], frequency: 500, others: [quiet])
            #expect(with < 25, "decoding everyone, \(quiet) Hz is in the mix (500 Hz only \(with) dB above it)")
            #expect(without > with + 15, "four heard: \(quiet) Hz is not (\(without) vs \(with) dB)")
        }
        #expect(four.framesNotDecoded.load(ordering: .relaxed) >= 2 * 70, "two senders passed over each frame")
        #expect(all.framesNotDecoded.load(ordering: .relaxed) == 0)
        let quietMeter = four.levels()[10] ?? 0
        #expect(quietMeter > -50 && quietMeter < -30, "the quiet one's meter, from its packets: \(quietMeter)")
    }

    @Test func sendersBeyondTheLimitAreRefusedAndCounted() throws {
        let m = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 2, maxSenders: 2)
        for ssrc in UInt32(1)...3 { _ = insert(m, try stream(ssrc: ssrc, hz: 400, frames: 1)[0], at: 1) }
        #expect(m.statistics().count == 2)
        #expect(m.refusedPackets == 1)
    }

    @Test func lostPacketsShowInTheLossReport() throws {
        let a = try stream(ssrc: 9, hz: 500, frames: 100)
        let m = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 2)
        for f in 0..<100 {
            if f % 10 != 5 { _ = insert(m, a[f], at: UInt64(f) * 20_000_000) }
            var out = [Int16](repeating: 0, count: 960)
            out.withUnsafeMutableBufferPointer { _ = m.mixNext(into: $0, now: UInt64(f) * 20_000_000 + 1) }
        }
        let report = m.lossSinceLastReport()
        #expect(report.count == 1)
        #expect(abs((report.first?.lossPercent ?? 0) - 10) < 3, "\(report)")
        #expect(m.lossSinceLastReport().isEmpty, "nothing new since")
    }

    /// A sender's first report is due once half a second of it was heard, once; a sender that
    /// joins later gets its own; the regular report carries on from where the first left off.
    @Test func aNewSendersFirstReportIsDueAfterHalfASecondOnce() throws {
        let a = try stream(ssrc: 7, hz: 500, frames: 100), b = try stream(ssrc: 8, hz: 700, frames: 100)
        let m = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 1)
        var due: [Int: [LossReport]] = [:]
        for f in 0..<60 {
            if f % 5 != 2 { _ = insert(m, a[f], at: UInt64(f) * 20_000_000) }  // 20 % lost
            if f >= 30 { _ = insert(m, b[f - 30], at: UInt64(f) * 20_000_000) }
            var out = [Int16](repeating: 0, count: 960)
            out.withUnsafeMutableBufferPointer { _ = m.mixNext(into: $0, now: UInt64(f) * 20_000_000 + 1) }
            let reports = m.firstReportsDue(afterFrames: 25)
            if !reports.isEmpty { due[f] = reports }
        }
        #expect(due.count == 2, "one first report per sender: \(due)")
        let first = try #require(due.min { $0.key < $1.key })
        #expect(first.key >= 24 && first.key <= 32, "25 frames decided (played or lost) into the first sender: at \(first.key)")
        #expect(first.value.map(\.ssrc) == [7])
        #expect(abs((first.value.first?.lossPercent ?? 0) - 20) < 5, "\(first.value)")
        let second = try #require(due.max { $0.key < $1.key })
        #expect(second.value.map(\.ssrc) == [8] && second.value.first?.lossPercent == 0, "the later sender's own: \(second)")
        #expect(second.key >= 30 + 24 && second.key <= 30 + 32, "25 frames into the second: at \(second.key)")
        let regular = m.lossSinceLastReport()
        #expect(regular.count == 2, "the regular report covers both, since their first")
        #expect(m.firstReportsDue(afterFrames: 25).isEmpty)
    }

    @Test func jitterBufferSlotsHoldTheBytesAndAFullBufferDropsTheOldest() {
        let jb = JitterBuffer(targetFrames: 1, maxFrames: 4, slotCount: 6)
        #expect(jb.slotCount == 6)
        for seq in UInt16(0)..<8 { jb.insert(sequence: seq, payload: [UInt8(seq), 0xAB]) }
        #expect(jb.depth == 6, "six slots")
        #expect(jb.statistics.overflowDropped == 2, "the two oldest made room")
        guard case .packet(let slot) = jb.nextDecision() else { Issue.record("a packet"); return }
        #expect(Array(jb.payload(slot)) == [4, 0xAB], "bytes as inserted; 2 and 3 went to bring the queue to maxFrames")
        #expect(jb.statistics.overflowDropped == 4)
        jb.insert(sequence: 100, payload: [UInt8](repeating: 1, count: JitterBuffer.maxPayloadBytes + 1))
        #expect(jb.statistics.overflowDropped == 5, "too large for a slot")
        #expect(jb.depth == 3)
    }
}

@Suite("Frame filters")
struct FrameFilterTests {
    final class Halve: AudioFilter, @unchecked Sendable {
        var played = 0
        func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo) { for i in frame.indices { frame[i] /= 2 } }
        func played(_ frame: UnsafeBufferPointer<Int16>, _ info: FrameInfo) { played += 1 }
    }

    @Test func filtersRunInOrderAndTheMeterMeasuresWhatIsSent() {
        let halve = Halve(), meter = LevelFilter(), before = LevelFilter()
        let chain = FilterChain([before, halve, meter])
        #expect(meter.lastDBFS == nil)
        var frame = [Int16](repeating: 16_384, count: 960)
        frame.withUnsafeMutableBufferPointer { chain.captured($0, FrameInfo(sequence: 1, at: 1)) }
        #expect(frame[0] == 8_192, "changed in place")
        let drop = (before.lastDBFS ?? 0) - (meter.lastDBFS ?? 0)
        #expect(abs(drop - 6.02) < 0.05, "the meter after the filter sees half the amplitude: \(drop) dB")
        frame.withUnsafeBufferPointer { chain.played($0, FrameInfo(at: 2)) }
        #expect(halve.played == 1)
    }
}
