import CallsAudio
import Testing

/// The jitter buffer driven by a virtual clock: each `next()` is one 20 ms playout tick.
@Suite("Jitter buffer")
struct JitterBufferTests {
    func p(_ s: UInt16) -> [UInt8] { [UInt8(s & 0xFF), UInt8(s >> 8)] }

    @Test func buffersToTargetThenPlaysInOrder() {
        let jb = JitterBuffer(targetFrames: 2)
        jb.insert(sequence: 10, payload: p(10))
        #expect(jb.next() == .silence)
        jb.insert(sequence: 11, payload: p(11))
        #expect(jb.next() == .packet(p(10)))
        jb.insert(sequence: 12, payload: p(12))
        #expect(jb.next() == .packet(p(11)))
        #expect(jb.next() == .packet(p(12)))
        #expect(jb.statistics.played == 3)
    }

    @Test func reordersPackets() {
        let jb = JitterBuffer(targetFrames: 3)
        for s: UInt16 in [1, 3, 2] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .packet(p(3)))
    }

    @Test func singleLossIsRecoveredFromTheNextPacketsFEC() {
        let jb = JitterBuffer(targetFrames: 2)
        for s: UInt16 in [1, 2, 4, 5] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .recovered(fromNext: p(4)))
        #expect(jb.next() == .packet(p(4)))
        #expect(jb.next() == .packet(p(5)))
        #expect(jb.statistics.recovered == 1)
        #expect(jb.statistics.concealed == 0)
    }

    @Test func burstLossIsConcealedThenRecovered() {
        let jb = JitterBuffer(targetFrames: 2)
        for s: UInt16 in [1, 2, 6] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .concealed)  // 3
        #expect(jb.next() == .concealed)  // 4
        #expect(jb.next() == .recovered(fromNext: p(6)))  // 5
        #expect(jb.next() == .packet(p(6)))
        #expect(jb.statistics.concealed == 2)
        #expect(jb.statistics.lost == 3, "3, 4 and 5 never came")
    }

    /// The longest run of frames whose own packets never came — repaired from copies or not —
    /// is what a sender sizes its redundancy by; a run still going carries into the next report.
    @Test func theLongestLossRunIsTakenPerReport() {
        let jb = JitterBuffer(targetFrames: 1)
        for s: UInt16 in [1, 2, 3, 7, 8, 10] { jb.insert(sequence: s, payload: p(s)) }
        p(4).withUnsafeBytes { jb.insertRepair(sequence: 4, payload: $0) }  // (ignored: playout has not started)
        #expect(jb.next() == .packet(p(1)))
        p(4).withUnsafeBytes { jb.insertRepair(sequence: 4, payload: $0) }  // a later packet's copy of 4
        for _ in 0..<3 { _ = jb.next() }               // 2, 3, 4 (copy)
        #expect(jb.next() == .concealed)               // 5
        #expect(jb.next() == .recovered(fromNext: p(7)))  // 6
        #expect(jb.takeLongestLossRun() == 3, "4 (repaired), 5, 6")
        #expect(jb.next() == .packet(p(7)))
        #expect(jb.next() == .packet(p(8)))
        #expect(jb.next() == .recovered(fromNext: p(10)))  // 9
        #expect(jb.takeLongestLossRun() == 1)
        #expect(jb.next() == .packet(p(10)))
        #expect(jb.takeLongestLossRun() == 0)
        for s: UInt16 in [13, 14] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .concealed)                  // 11
        #expect(jb.takeLongestLossRun() == 1)
        #expect(jb.next() == .recovered(fromNext: p(13)))  // 12
        #expect(jb.takeLongestLossRun() == 2, "a run going on across a report is counted whole")
    }

    @Test func lateAndDuplicatePacketsAreDropped() {
        let jb = JitterBuffer(targetFrames: 1)
        jb.insert(sequence: 5, payload: p(5))
        jb.insert(sequence: 5, payload: p(5))
        #expect(jb.statistics.duplicate == 1)
        #expect(jb.next() == .packet(p(5)))
        jb.insert(sequence: 4, payload: p(4))
        #expect(jb.statistics.late == 1)
        #expect(jb.depth == 0)
    }

    @Test func sequenceWrapAround() {
        let jb = JitterBuffer(targetFrames: 2)
        for s: UInt16 in [65534, 65535, 0, 1] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(65534)))
        #expect(jb.next() == .packet(p(65535)))
        #expect(jb.next() == .packet(p(0)))
        #expect(jb.next() == .packet(p(1)))
    }

    @Test func startsFromOldestEvenAcrossWrap() {
        let jb = JitterBuffer(targetFrames: 2)
        jb.insert(sequence: 0, payload: p(0))
        jb.insert(sequence: 65535, payload: p(65535))
        #expect(jb.next() == .packet(p(65535)))
    }

    @Test func overflowDropsOldestToBoundDelay() {
        let jb = JitterBuffer(targetFrames: 2, maxFrames: 5)
        for s: UInt16 in 1...12 { jb.insert(sequence: s, payload: p(s)) }
        let first = jb.next()
        #expect(first == .packet(p(8)), "keeps only the newest 5")
        #expect(jb.statistics.overflowDropped == 7)
        #expect(jb.depth == 4)
    }

    @Test func silenceAfterSenderStopsThenRebuffers() {
        let jb = JitterBuffer(targetFrames: 2, maxConcealFrames: 3)
        jb.insert(sequence: 1, payload: p(1))
        jb.insert(sequence: 2, payload: p(2))
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .concealed)
        #expect(jb.next() == .concealed)
        #expect(jb.next() == .concealed)
        #expect(jb.next() == .silence)
        #expect(!jb.isPlaying)
        #expect(jb.statistics.lost == 0, "a sender that stops is not loss")
        // The sender resumes (muted senders keep their sequence numbers).
        jb.insert(sequence: 3, payload: p(3))
        #expect(jb.next() == .silence)
        jb.insert(sequence: 4, payload: p(4))
        #expect(jb.next() == .packet(p(3)))
    }

    @Test func farJumpRestartsTheStream() {
        let jb = JitterBuffer(targetFrames: 1)
        jb.insert(sequence: 100, payload: p(100))
        #expect(jb.next() == .packet(p(100)))
        jb.insert(sequence: 30000, payload: p(30000))
        #expect(jb.statistics.resets == 1)
        #expect(jb.next() == .packet(p(30000)))
    }
}

/// Adaptive depth and clock drift, driven by a virtual clock (20 ms frames).
@Suite("Jitter buffer adaptation")
struct JitterBufferAdaptationTests {
    let frameNs: UInt64 = 20_000_000
    func p(_ s: UInt16) -> [UInt8] { [UInt8(s & 0xFF), UInt8(s >> 8)] }

    @Test func steadyArrivalKeepsTheMinimumDepth() {
        let jb = JitterBuffer(targetFrames: 1)
        for i in 0..<200 {
            jb.insert(sequence: UInt16(i), payload: [1], arrival: UInt64(i) * frameNs, timestamp: UInt32(i * 960))
            _ = jb.next()
        }
        #expect(jb.adaptiveTarget == 1)
        #expect(jb.jitterNanoseconds < 1_000_000)
        #expect(jb.statistics.concealed == 0)
    }

    /// The start depth follows the jitter measured, not a configured guess: a quarter frame of
    /// it is the playout tick's own slack; beyond that, three times the jitter, in frames, plus one.
    @Test(arguments: [(0.0, 1), (1.0, 1), (2.0, 2), (10.0, 3), (20.0, 4), (30.0, 6)])
    func theStartDepthFollowsTheMeasuredJitter(jitterMs: Double, depth: Int) {
        let jb = JitterBuffer(targetFrames: 1, maxFrames: 30)
        // Delays alternating 0 and jitterMs: each transit differs from the last by jitterMs,
        // so the RFC 3550 estimate converges on it.
        for i in 0..<400 {
            let delay = i % 2 == 0 ? 0 : UInt64(jitterMs * 1e6)
            jb.insert(sequence: UInt16(i), payload: [1], arrival: UInt64(i) * frameNs + delay, timestamp: UInt32(i * 960))
        }
        #expect(abs(jb.jitterNanoseconds / 1e6 - jitterMs) < 0.1, "estimate \(jb.jitterNanoseconds / 1e6) ms")
        #expect(jb.adaptiveTarget == depth)
    }

    /// The first packets are measured before playout starts: on a clean path it then plays the
    /// newest at one frame of depth (the older ones dropped), not five frames late for good.
    @Test func theWarmUpMeasuresThenStartsAtTheMeasuredDepth() {
        let clean = JitterBuffer(targetFrames: 1, warmupPackets: 5)
        for i in 0..<4 {
            clean.insert(sequence: UInt16(100 + i), payload: [UInt8(i)], arrival: UInt64(i) * frameNs, timestamp: UInt32(i * 960))
        }
        #expect(clean.next() == .silence, "still measuring after 4 of 5")
        clean.insert(sequence: 104, payload: [4], arrival: 4 * frameNs, timestamp: 4 * 960)
        #expect(clean.next() == .packet([4]), "started at the newest: depth 1")
        #expect(clean.statistics.shrunk == 4)
        // 0…30 ms of delay: the same five packets start at the depth that jitter needs.
        let jittery = JitterBuffer(targetFrames: 1, warmupPackets: 5)
        for (i, delay) in [0, 30, 0, 30, 0, 30, 0].enumerated() {
            jittery.insert(sequence: UInt16(i), payload: [UInt8(i)], arrival: UInt64(i) * frameNs + UInt64(delay) * 1_000_000,
                           timestamp: UInt32(i * 960))
        }
        #expect(jittery.adaptiveTarget >= 3, "estimated at once, not after 16 packets: \(jittery.adaptiveTarget)")
        #expect(jittery.next() != .silence)
        #expect(jittery.depth == jittery.adaptiveTarget - 1, "one played, the rest held")
    }

    /// A talker heard from the first word: the warm-up sheds only quiet frames (RFC 6464 V flag
    /// clear), so speech that began before playout is played from its start (the decoder then
    /// starts with the stream, not mid-word), and the surplus goes as soon as a quiet frame
    /// reaches the head — down to the target, not the target and one.
    @Test func theWarmUpKeepsTheFirstWordsAndShedsTheirSurplusInThePause() {
        let jb = JitterBuffer(targetFrames: 1, warmupPackets: 5)
        var seq: UInt16 = 100
        func send(voice: Bool) {
            jb.insert(sequence: seq, payload: p(seq), arrival: UInt64(seq - 100) * frameNs, timestamp: UInt32(seq - 100) * 960, voice: voice)
            seq += 1
        }
        for _ in 0..<5 { send(voice: true) }
        var played: [UInt16] = []
        func tick() {
            if case .packet(let b) = jb.next() { played.append(UInt16(b[0]) | UInt16(b[1]) << 8) }
        }
        tick()
        #expect(played == [100], "the first word from its first frame")
        #expect(jb.statistics.shrunk == 0)
        // Speech goes on for 40 frames: nothing of it is dropped, the queue stays 4 frames deep.
        for _ in 0..<40 { send(voice: true); tick() }
        #expect(played == Array(100...140))
        #expect(jb.depth == 4)
        // A pause: its first frame lost and filled from a redundant copy (its level unknown: kept
        // as voice), then four quiet frames go as they reach the head, and it plays at depth 1.
        p(seq).withUnsafeBytes { jb.insertRepair(sequence: seq, payload: $0) }
        seq += 1
        tick()
        for _ in 0..<9 { send(voice: false); tick() }
        #expect(jb.statistics.shrunk == 4)
        send(voice: false)
        #expect(jb.depth == jb.adaptiveTarget)
        #expect(played.prefix(46) == ArraySlice(Array(100...145)), "every voiced or repaired frame played, in order")
        // Without the V flag (a sender that does not say, or silence) the warm-up drops as before.
        let quiet = JitterBuffer(targetFrames: 1, warmupPackets: 5)
        for i in 0..<5 {
            quiet.insert(sequence: UInt16(i), payload: p(UInt16(i)), arrival: UInt64(i) * frameNs, timestamp: UInt32(i * 960),
                         voice: i >= 3)
        }
        #expect(quiet.next() == .packet(p(3)), "the three quiet frames dropped, the voiced ones kept")
        #expect(quiet.statistics.shrunk == 3)
    }

    /// Excess depth (after a burst of jitter) shrinks back in the pauses: a quiet frame goes once
    /// the excess has lasted half a second; a voiced frame only when it has lasted
    /// `voicedShrinkTicks` (continuous speech), so the delay stays bounded.
    @Test func excessDepthShrinksInPausesAndOnlyRarelyInSpeech() {
        let jb = JitterBuffer(targetFrames: 1, maxFrames: 30)
        var seq: UInt16 = 0
        func send(voice: Bool) {
            jb.insert(sequence: seq, payload: p(seq), arrival: UInt64(seq) * frameNs, timestamp: UInt32(seq) * 960, voice: voice)
            seq &+= 1
        }
        send(voice: true)
        _ = jb.next()
        // Four frames more are queued at once, then one comes a tick, all speech.
        for _ in 0..<5 { send(voice: true) }
        for _ in 0..<100 { #expect(jb.next() != .silence); send(voice: true) }
        #expect(jb.statistics.shrunk == 0, "no word cut in 2 s of speech")
        #expect(jb.depth == 5)
        // A pause: the excess goes, a frame each half second, down to the target and one (the
        // jitter margin). The first goes as soon as the pause reaches the head (after the five
        // voiced frames queued before it).
        for _ in 0..<6 { _ = jb.next(); send(voice: false) }
        #expect(jb.statistics.shrunk == 1)
        for _ in 0..<60 { _ = jb.next(); send(voice: false) }
        #expect(jb.statistics.shrunk == 3)
        #expect(jb.depth == jb.adaptiveTarget + 1)
        // Continuous speech whose excess never meets a pause: one voiced frame goes after
        // `voicedShrinkTicks`, so the delay stays bounded.
        let speech = JitterBuffer(targetFrames: 1, maxFrames: 30)
        var s2: UInt16 = 0
        func talk() {
            speech.insert(sequence: s2, payload: p(s2), arrival: UInt64(s2) * frameNs, timestamp: UInt32(s2) * 960, voice: true)
            s2 &+= 1
        }
        talk()
        _ = speech.next()
        for _ in 0..<5 { talk() }
        for _ in 0..<(JitterBuffer.voicedShrinkTicks - 1) { _ = speech.next(); talk() }
        #expect(speech.statistics.shrunk == 0)
        for _ in 0..<3 { _ = speech.next(); talk() }
        #expect(speech.statistics.shrunk == 1, "bounded: one voiced frame dropped")
    }

    @Test func jitterRaisesTheTargetAndCalmShrinksTheQueueBack() {
        let jb = JitterBuffer(targetFrames: 1, maxFrames: 30)
        var rng = SplitMixForTests(seed: 3)
        var clock: UInt64 = 0
        // 0…40 ms of delay variation on each packet; the consumer ticks every 20 ms.
        var pending: [(UInt64, Int)] = []
        var concealedDuringJitter = 0
        for tick in 0..<500 {
            let delay = UInt64(rng.next() % 40_000_000)
            pending.append((UInt64(tick) * frameNs + delay, tick))
            clock = UInt64(tick) * frameNs
            pending.sort { $0.0 < $1.0 }
            while let first = pending.first, first.0 <= clock {
                pending.removeFirst()
                jb.insert(sequence: UInt16(first.1 & 0xFFFF), payload: [1], arrival: first.0, timestamp: UInt32(first.1 * 960))
            }
            if jb.next() == .concealed && tick > 100 { concealedDuringJitter += 1 }
        }
        #expect(jb.adaptiveTarget >= 2, "target grew to cover the jitter (now \(jb.adaptiveTarget))")
        #expect(concealedDuringJitter < 20, "few underruns once adapted: \(concealedDuringJitter)")
        // Calm again: the estimate decays and excess depth is trimmed.
        let depthBefore = jb.depth
        for tick in 500..<1500 {
            jb.insert(sequence: UInt16(tick & 0xFFFF), payload: [1], arrival: UInt64(tick) * frameNs + 50_000_000, timestamp: UInt32(tick * 960))
            _ = jb.next()
        }
        #expect(jb.adaptiveTarget <= 2)
        #expect(jb.depth <= max(depthBefore, jb.adaptiveTarget + 1))
    }

    @Test func fastSenderClockIsTrimmedSlowOneConcealed() {
        // Sender 1 % fast: 101 packets per 100 ticks. The queue must stay bounded.
        let fast = JitterBuffer(targetFrames: 2)
        var sent = 0
        for tick in 0..<3000 {
            while sent * 100 < tick * 101 {
                fast.insert(sequence: UInt16(sent & 0xFFFF), payload: [1], arrival: UInt64(tick) * frameNs, timestamp: UInt32(truncatingIfNeeded: sent * 960))
                sent += 1
            }
            _ = fast.next()
        }
        #expect(fast.depth <= fast.adaptiveTarget + 3, "depth \(fast.depth) stays bounded")
        #expect(fast.statistics.shrunk + fast.statistics.overflowDropped > 10, "the surplus was dropped")
        // Sender 1 % slow: 99 packets per 100 ticks; the gaps are concealed, never a stall to silence.
        let slow = JitterBuffer(targetFrames: 2)
        sent = 0
        var silences = 0
        for tick in 0..<3000 {
            while sent * 100 < tick * 99 {
                slow.insert(sequence: UInt16(sent & 0xFFFF), payload: [1], arrival: UInt64(tick) * frameNs, timestamp: UInt32(truncatingIfNeeded: sent * 960))
                sent += 1
            }
            if slow.next() == .silence && tick > 10 { silences += 1 }
        }
        #expect(slow.statistics.concealed <= 40, "about one frame per 100: \(slow.statistics.concealed)")
        #expect(silences <= 2)
    }
}

/// A tiny deterministic generator for tests (SplitMix64).
struct SplitMixForTests {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Which frames that missed their packet were the packet's delay, and which playout's timing:
/// packets every 20 ms, playout ticks at a fixed phase after them (a virtual clock).
@Suite("Jitter buffer: delayed or missed")
struct JitterBufferDelayTests {
    let frameNs: UInt64 = 20_000_000

    /// Plays `frames` ticks at `phase` past each packet's send time; packet n arrives at
    /// n × 20 ms + `delay(n)`.
    func run(_ jb: JitterBuffer, frames: Int, phase: UInt64, delay: (Int) -> UInt64) {
        let arrivals = (0..<frames).map { (time: UInt64($0) * frameNs + delay($0), seq: $0) }.sorted { $0.time < $1.time }
        var a = 0
        for tick in 0..<frames {
            let now = UInt64(tick) * frameNs + phase
            while a < arrivals.count, arrivals[a].time <= now {
                let s = arrivals[a].seq
                jb.insert(sequence: UInt16(s), payload: [1], arrival: arrivals[a].time, timestamp: UInt32(s * 960))
                a += 1
            }
            _ = jb.next()
        }
    }

    @Test func aPacketHeldUpOnItsWayIsDelayed() {
        // Ticks 10 ms after each packet; packet 50 comes 45 ms late: its tick conceals, the next
        // recovers it from packet 51, and it comes after its turn.
        let jb = JitterBuffer(targetFrames: 1)
        run(jb, frames: 100, phase: 10_000_000) { $0 == 50 ? 45_000_000 : 0 }
        #expect(jb.statistics.concealed == 1)
        #expect(jb.statistics.late == 1)
        #expect(jb.statistics.delayed == 2, "both for a packet held up 45 ms")
    }

    @Test func aPacketOnTimeThatMissedItsFrameIsPlayoutsMiss() {
        // Ticks 1 ms after each packet: one 2 ms late (within the 4 ms tolerance) misses its tick.
        let jb = JitterBuffer(targetFrames: 1)
        run(jb, frames: 100, phase: 1_000_000) { $0 == 50 ? 2_000_000 : 0 }
        #expect(jb.statistics.concealed == 1)
        #expect(jb.statistics.delayed == 0, "2 ms is no delay: playout cut it too fine")
        // The same with a tolerance of 1 ms: held up.
        let strict = JitterBuffer(targetFrames: 1, delayToleranceNanoseconds: 1_000_000)
        run(strict, frames: 100, phase: 1_000_000) { $0 == 50 ? 2_000_000 : 0 }
        #expect(strict.statistics.concealed == 1)
        #expect(strict.statistics.delayed == 1)
    }

    @Test func theFloorFollowsAPathThatGotLonger() {
        // From packet 100 on every packet takes 30 ms more (a new path), ticks 40 ms after
        // sending: after two windows of 50 packets the longer transit is the floor, and a packet
        // 3 ms over it that misses a tick cut to 2 ms is playout's miss, not a delay.
        let jb = JitterBuffer(targetFrames: 1)
        run(jb, frames: 300, phase: 32_000_000) { n in (n >= 100 ? 30_000_000 : 0) + (n == 250 ? 3_000_000 : 0) }
        #expect(jb.statistics.concealed == 1)
        #expect(jb.statistics.delayed == 0)
    }
}

/// A stream that goes quiet: its sender stopped (muted: the same sequence number comes back
/// with its timestamp moved on), its path held it up, or the network lost what came between —
/// told apart when packets come again (a virtual clock: 20 ms frames, ticks 10 ms after).
@Suite("Jitter buffer: a sender that stops")
struct JitterBufferStopTests {
    let frameNs: UInt64 = 20_000_000

    /// Packets `(sequence, frame of its timestamp, arrival in frames)`, ticked for `frames`.
    func run(_ packets: [(seq: Int, frame: Int, at: Double)], frames: Int) -> JitterBuffer.Statistics {
        play(packets, frames: frames).statistics
    }

    /// The same, with how many frames playout concealed.
    func play(_ packets: [(seq: Int, frame: Int, at: Double)], frames: Int) -> (statistics: JitterBuffer.Statistics, concealments: Int) {
        let jb = JitterBuffer(targetFrames: 1)
        let arrivals = packets.sorted { $0.at < $1.at }
        var a = 0
        var concealments = 0
        for tick in 0..<frames {
            let now = UInt64(tick) * frameNs + frameNs / 2
            while a < arrivals.count, UInt64(arrivals[a].at * Double(frameNs)) <= now {
                let p = arrivals[a]
                jb.insert(sequence: UInt16(p.seq), payload: [1], arrival: UInt64(p.at * Double(frameNs)), timestamp: UInt32(p.frame * 960))
                a += 1
            }
            if case .concealed = jb.next() { concealments += 1 }
        }
        return (jb.statistics, concealments)
    }

    @Test func aSenderThatMutesAndComesBackLostNothing() {
        // 50 frames, a second muted (the clock goes on, no packet is sent), 50 more.
        let talk = (0..<50).map { (seq: $0, frame: $0, at: Double($0)) }
        let again = (50..<100).map { (seq: $0, frame: $0 + 50, at: Double($0 + 50)) }
        let s = run(talk + again, frames: 200)
        #expect(s.concealed == 0, "\(s)")
        #expect(s.stopped == 10, "the fade after the last packet, until playout went quiet")
        #expect(s.lost == 0 && s.played == 100)
    }

    @Test func aShortMuteIsNoLossEither() {
        // Muted for 100 ms: playout conceals five frames waiting, then the next number comes with
        // its clock 120 ms on.
        let talk = (0..<50).map { (seq: $0, frame: $0, at: Double($0)) }
        let again = (50..<100).map { (seq: $0, frame: $0 + 5, at: Double($0 + 5)) }
        let s = run(talk + again, frames: 200)
        #expect(s.concealed == 0, "\(s)")
        #expect(s.stopped == 5 && s.lost == 0)
    }

    @Test func aPathThatHeldPacketsUpConcealedThem() {
        // Packets 50–69 held up 400 ms, then all at once: nothing was lost, the same numbers and
        // timestamps came back — concealed, for a delay.
        let packets = (0..<100).map { (seq: $0, frame: $0, at: Double($0) + (50..<70 ~= $0 ? 20 - Double($0 - 50) : 0)) }
        let s = run(packets, frames: 200)
        #expect(s.concealed == 10, "\(s)")
        #expect(s.delayed == 10)
        #expect(s.stopped == 0 && s.lost == 0)
    }

    @Test func anOutageThatLostPacketsCountsThem() {
        // Packets 50–79 never come; 80 on arrive on time.
        let packets = (0..<100).filter { !(50..<80 ~= $0) }.map { (seq: $0, frame: $0, at: Double($0)) }
        let s = run(packets, frames: 200)
        #expect(s.concealed == 10, "\(s)")
        #expect(s.lost == 30, "the thirty that never came while later ones did")
        #expect(s.stopped == 0)
    }

    @Test func everyConcealedFrameIsToldOnceItsPacketSaysWhy() {
        // Each run ends with packets that play, so every question is settled: a frame playout
        // concealed is either concealed or stopped, never both or neither.
        let talk = (0..<50).map { (seq: $0, frame: $0, at: Double($0)) }
        let muted = (50..<100).map { (seq: $0, frame: $0 + 50, at: Double($0 + 50)) }
        let runs: [(name: String, packets: [(seq: Int, frame: Int, at: Double)])] = [
            ("muted", talk + muted),
            ("short mute", talk + (50..<100).map { (seq: $0, frame: $0 + 5, at: Double($0 + 5)) }),
            ("lost", (0..<100).filter { !(50..<80 ~= $0) }.map { (seq: $0, frame: $0, at: Double($0)) }),
            // 45 held up 25 frames, past the moment playout went quiet, then the sender muted:
            // the packet older than the one awaited comes while the question is open.
            ("older packet while quiet", talk.map { $0.seq == 45 ? (seq: 45, frame: 45, at: 70) : $0 } + muted),
            ("held up", (0..<100).map { (seq: $0, frame: $0, at: Double($0) + (50..<70 ~= $0 ? 20 - Double($0 - 50) : 0)) }),
        ]
        for r in runs {
            // Ticked until the last packet has played, before playout conceals after it.
            let (s, concealments) = play(r.packets, frames: Int(r.packets.map(\.at).max() ?? 0) + 1)
            #expect(s.concealed + s.stopped == concealments, "\(r.name): \(concealments) concealed by playout, \(s)")
        }
    }

    @Test func aSenderThatLeavesIsNoLoss() {
        let s = run((0..<50).map { (seq: $0, frame: $0, at: Double($0)) }, frames: 100)
        #expect(s.concealed == 0 && s.stopped == 0 && s.lost == 0, "\(s)")
    }
}
