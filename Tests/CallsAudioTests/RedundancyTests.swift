import CallsAudio
import CallsCore
import Foundation
import Testing

/// Redundant audio at the receiver and the sender's choice, on a virtual clock: the jitter
/// buffer fills a lost frame from a later packet's copy, keeps its depth for the copies to come,
/// tells reordering from loss; the mixer decodes real RED packets; the policy follows reports.
@Suite("Redundant audio, receiving and choosing")
struct RedundancyTests {
    func p(_ s: UInt16) -> [UInt8] { [UInt8(s & 0xFF), UInt8(s >> 8), 0x55] }
    func repair(_ jb: JitterBuffer, _ s: UInt16) { p(s).withUnsafeBytes { jb.insertRepair(sequence: s, payload: $0) } }

    @Test func aCopyFillsALostFrameAtFullQualityAndCountsAsNetworkLoss() {
        let jb = JitterBuffer(targetFrames: 2)
        jb.insert(sequence: 1, payload: p(1)); jb.insert(sequence: 2, payload: p(2))
        #expect(jb.next() == .packet(p(1)))
        // 3 is lost; 4 arrives carrying a copy of 3.
        jb.insert(sequence: 4, payload: p(4)); repair(jb, 3)
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .packet(p(3)), "played from the copy, not FEC or concealment")
        #expect(jb.next() == .packet(p(4)))
        #expect(jb.statistics.repaired == 1 && jb.statistics.recovered == 0 && jb.statistics.concealed == 0)
        #expect(jb.statistics.received == 3, "a copy is not a received packet")
    }

    @Test func aFramesOwnPacketAfterItsCopyIsReorderingNotLoss() {
        let jb = JitterBuffer(targetFrames: 2)
        jb.insert(sequence: 0, payload: p(0)); repair(jb, 99)
        #expect(jb.depth == 1, "before playout copies are ignored (they would only add delay)")
        jb.insert(sequence: 1, payload: p(1))
        #expect(jb.next() == .packet(p(0)))
        // 3 overtakes 2 and carries its copy; then 2's own packet comes.
        jb.insert(sequence: 3, payload: p(3)); repair(jb, 2)
        jb.insert(sequence: 2, payload: p(2))
        for s: UInt16 in 1...3 { #expect(jb.next() == .packet(p(s))) }
        #expect(jb.statistics.repaired == 0 && jb.statistics.duplicate == 0)
        // A copy of a frame already played from its own packet is neither late nor kept.
        repair(jb, 3)
        #expect(jb.statistics.lateRepairs == 0 && jb.depth == 0)
    }

    @Test func aCopyAfterItsFrameWasConcealedIsCountedLate() {
        let jb = JitterBuffer(targetFrames: 1)
        jb.insert(sequence: 1, payload: p(1))
        #expect(jb.next() == .packet(p(1)))
        jb.insert(sequence: 4, payload: p(4))
        #expect(jb.next() == .concealed, "2 is gone: concealed and passed over")
        repair(jb, 2)
        #expect(jb.statistics.lateRepairs == 1, "its copy came too late")
    }

    @Test func theDepthCoversTheSendersRedundancy() {
        let jb = JitterBuffer(targetFrames: 2)
        #expect(jb.adaptiveTarget == 2)
        jb.noteRedundancy(distance: 1)
        #expect(jb.adaptiveTarget == 2, "one copy: no floor beyond the minimum")
        jb.noteRedundancy(distance: 3)
        #expect(jb.adaptiveTarget == 4, "the third copy of a frame comes three frames later")
        for s: UInt16 in 0..<3 { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .silence, "playout waits for four frames")
        jb.insert(sequence: 3, payload: p(3))
        #expect(jb.next() == .packet(p(0)))
        jb.noteRedundancy(distance: 0)
        #expect(jb.adaptiveTarget == 2, "plain packets again: back to the minimum")
    }

    /// Real Opus through a real mixer: a tone sent as RED with every fourth packet lost is
    /// played with no concealment at all; the loss report still says 25 %.
    @Test func theMixerDecodesRedundantPacketsAndReportsTheNetworksLoss() throws {
        let tone = ToneInput(frequency: 440, frameSamples: 960, amplitude: 0.5)
        let encoder = try OpusEncoder(frameMs: 20)
        let history = RedundancyHistory()
        var pcm = [Int16](repeating: 0, count: 960), opus = [UInt8](repeating: 0, count: 1500), body = [UInt8](repeating: 0, count: 1500)
        let m = ReceiveMixer(frameSamples: 960, jitterTargetFrames: 2)
        var quiet = 0
        for f in 0..<100 {
            let seq = UInt16(f), ts = UInt32(f * 960)
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            let n = try pcm.withUnsafeBufferPointer { s in try opus.withUnsafeMutableBufferPointer { try encoder.encode(s, into: $0) } }
            let len = try #require(body.withUnsafeMutableBytes { o in opus.withUnsafeBytes { pr in
                history.payload(into: o, payloadType: RTPPacket.opusPayloadType, primary: UnsafeRawBufferPointer(rebasing: pr[0..<n]),
                                sequence: seq, timestamp: ts, distance: 1)?.bytes } })
            opus.withUnsafeBytes { history.remember(UnsafeRawBufferPointer(rebasing: $0[0..<n]), sequence: seq, timestamp: ts) }
            if f % 4 != 2 {
                let d = RTPPacket(payloadType: RedundantAudio.payloadType, sequenceNumber: seq, timestamp: ts, ssrc: 7, payload: Array(body.prefix(len))).encoded()
                _ = d.withUnsafeBytes { raw in (try? RTPHeader(parsing: raw)).map { m.insert($0, datagram: raw, arrival: UInt64(f) * 20_000_000) } }
            }
            var out = [Int16](repeating: 0, count: 960)
            out.withUnsafeMutableBufferPointer { _ = m.mixNext(into: $0, now: UInt64(f) * 20_000_000 + 1) }
            if f > 10, out.withUnsafeBufferPointer({ LevelMeter.rmsDBFS($0) }) < -20 { quiet += 1 }
        }
        let stats = try #require(m.statistics()[7])
        #expect(stats.repaired >= 20 && stats.concealed == 0 && stats.recovered == 0, "\(stats)")
        #expect(quiet == 0, "the tone never dips")
        let loss = try #require(m.lossSinceLastReport().first?.lossPercent)
        #expect(abs(loss - 25) < 3, "the network's loss, repaired or not: \(loss)")
        #expect(m.malformedPackets == 0)
    }

    @Test func thePolicyFollowsTheWorstReportUpAtOnceAndDownAfterAHold() {
        let s: UInt64 = 1_000_000_000
        var p = RedundancyPolicy()
        #expect(RedundancyPolicy.distance(forLoss: 0) == 0 && RedundancyPolicy.distance(forLoss: 0.9) == 0)
        #expect(RedundancyPolicy.distance(forLoss: 1) == 1 && RedundancyPolicy.distance(forLoss: 5) == 1)
        #expect(RedundancyPolicy.distance(forLoss: 10) == 2 && RedundancyPolicy.distance(forLoss: 20) == 4)
        #expect(RedundancyPolicy.bitrate(base: 48_000, distance: 2) == 48_000 && RedundancyPolicy.bitrate(base: 48_000, distance: 4) == 32_000)
        #expect(p.distance == 1, "before any report: 5 % assumed, one frame repeated (no listener floor)")
        #expect(p.update(worstLossPercent: 0, everyoneDecodes: true, now: 0) == 0, "a clean first report ends the assumption at once")
        #expect(p.update(worstLossPercent: 20, everyoneDecodes: true, now: s) == 4, "up at once")
        #expect(p.update(worstLossPercent: 2, everyoneDecodes: true, now: 2 * s) == 4, "a quiet moment is not a clean network")
        #expect(p.update(worstLossPercent: 2, everyoneDecodes: true, now: 11 * s) == 4)
        #expect(p.update(worstLossPercent: 2, everyoneDecodes: true, now: 12 * s) == 1, "after 10 s lower")
        #expect(p.update(worstLossPercent: 20, everyoneDecodes: false, now: 13 * s) == 0, "someone would not understand it: plain Opus")
    }

    /// Runs lost in a row longer than the rate's distance are covered (up to six frames, at
    /// half the bitrate from five), never beyond what every receiver accepts — and a receiver
    /// that accepts fewer is served at once, not after the hold.
    @Test func runsLostInARowSizeTheRedundancyWithinWhatEveryReceiverAccepts() {
        let s: UInt64 = 1_000_000_000
        #expect(RedundancyPolicy.distance(forLoss: 20, longestRun: 2, maxDistance: 8) == 4, "the rate's distance when longer")
        #expect(RedundancyPolicy.distance(forLoss: 20, longestRun: 5, maxDistance: 8) == 4, "one longer: chance")
        #expect(RedundancyPolicy.distance(forLoss: 20, longestRun: 6, maxDistance: 8) == 6)
        #expect(RedundancyPolicy.distance(forLoss: 10, longestRun: 3, maxDistance: 8) == 2)
        #expect(RedundancyPolicy.distance(forLoss: 10, longestRun: 4, maxDistance: 8) == 4)
        #expect(RedundancyPolicy.distance(forLoss: 20, longestRun: 11, maxDistance: 8) == 6, "at most six")
        #expect(RedundancyPolicy.distance(forLoss: 5, longestRun: 3, maxDistance: 8) == 3, "two longer than one frame")
        #expect(RedundancyPolicy.distance(forLoss: 0.5, longestRun: 3, maxDistance: 8) == 0, "a rare run is FEC's")
        #expect(RedundancyPolicy.distance(forLoss: 20, longestRun: 6, maxDistance: 4) == 4, "an older receiver takes four")
        #expect(RedundancyPolicy.bitrate(base: 48_000, distance: 2) == 48_000 && RedundancyPolicy.bitrate(base: 48_000, distance: 3) == 36_000)
        #expect(RedundancyPolicy.bitrate(base: 48_000, distance: 5) == 24_000 && RedundancyPolicy.bitrate(base: 48_000, distance: 6) == 24_000)
        var p = RedundancyPolicy()
        #expect(p.update(worstLossPercent: 20, longestRun: 6, maxDistance: 8, everyoneDecodes: true, now: 0) == 6)
        #expect(p.update(worstLossPercent: 20, longestRun: 2, maxDistance: 8, everyoneDecodes: true, now: s) == 6, "held")
        #expect(p.update(worstLossPercent: 20, longestRun: 6, maxDistance: 4, everyoneDecodes: true, now: 2 * s) == 4,
                "an older receiver joined: four at once")
        #expect(p.update(worstLossPercent: 20, longestRun: 2, maxDistance: 8, everyoneDecodes: true, now: 12 * s + 1) == 4)
    }
}
