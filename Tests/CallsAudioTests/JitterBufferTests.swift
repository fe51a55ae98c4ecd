import CallsAudio
import Testing

/// The jitter buffer driven by a virtual clock: each `next()` is one 20 ms playout tick.
@Suite("Jitter buffer")
struct JitterBufferTests {
    func p(_ s: UInt16) -> [UInt8] { [UInt8(s & 0xFF), UInt8(s >> 8)] }

    @Test func buffersToTargetThenPlaysInOrder() {
        var jb = JitterBuffer(targetFrames: 2)
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
        var jb = JitterBuffer(targetFrames: 3)
        for s: UInt16 in [1, 3, 2] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .packet(p(3)))
    }

    @Test func singleLossIsRecoveredFromTheNextPacketsFEC() {
        var jb = JitterBuffer(targetFrames: 2)
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
        var jb = JitterBuffer(targetFrames: 2)
        for s: UInt16 in [1, 2, 6] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .concealed)  // 3
        #expect(jb.next() == .concealed)  // 4
        #expect(jb.next() == .recovered(fromNext: p(6)))  // 5
        #expect(jb.next() == .packet(p(6)))
        #expect(jb.statistics.concealed == 2)
    }

    @Test func lateAndDuplicatePacketsAreDropped() {
        var jb = JitterBuffer(targetFrames: 1)
        jb.insert(sequence: 5, payload: p(5))
        jb.insert(sequence: 5, payload: p(5))
        #expect(jb.statistics.duplicate == 1)
        #expect(jb.next() == .packet(p(5)))
        jb.insert(sequence: 4, payload: p(4))
        #expect(jb.statistics.late == 1)
        #expect(jb.depth == 0)
    }

    @Test func sequenceWrapAround() {
        var jb = JitterBuffer(targetFrames: 2)
        for s: UInt16 in [65534, 65535, 0, 1] { jb.insert(sequence: s, payload: p(s)) }
        #expect(jb.next() == .packet(p(65534)))
        #expect(jb.next() == .packet(p(65535)))
        #expect(jb.next() == .packet(p(0)))
        #expect(jb.next() == .packet(p(1)))
    }

    @Test func startsFromOldestEvenAcrossWrap() {
        var jb = JitterBuffer(targetFrames: 2)
        jb.insert(sequence: 0, payload: p(0))
        jb.insert(sequence: 65535, payload: p(65535))
        #expect(jb.next() == .packet(p(65535)))
    }

    @Test func overflowDropsOldestToBoundDelay() {
        var jb = JitterBuffer(targetFrames: 2, maxFrames: 5)
        for s: UInt16 in 1...12 { jb.insert(sequence: s, payload: p(s)) }
        let first = jb.next()
        #expect(first == .packet(p(8)), "keeps only the newest 5")
        #expect(jb.statistics.overflowDropped == 7)
        #expect(jb.depth == 4)
    }

    @Test func silenceAfterSenderStopsThenRebuffers() {
        var jb = JitterBuffer(targetFrames: 2, maxConcealFrames: 3)
        jb.insert(sequence: 1, payload: p(1))
        jb.insert(sequence: 2, payload: p(2))
        #expect(jb.next() == .packet(p(1)))
        #expect(jb.next() == .packet(p(2)))
        #expect(jb.next() == .concealed)
        #expect(jb.next() == .concealed)
        #expect(jb.next() == .concealed)
        #expect(jb.next() == .silence)
        #expect(!jb.isPlaying)
        // The sender resumes (muted senders keep their sequence numbers).
        jb.insert(sequence: 3, payload: p(3))
        #expect(jb.next() == .silence)
        jb.insert(sequence: 4, payload: p(4))
        #expect(jb.next() == .packet(p(3)))
    }

    @Test func farJumpRestartsTheStream() {
        var jb = JitterBuffer(targetFrames: 1)
        jb.insert(sequence: 100, payload: p(100))
        #expect(jb.next() == .packet(p(100)))
        jb.insert(sequence: 30000, payload: p(30000))
        #expect(jb.statistics.resets == 1)
        #expect(jb.next() == .packet(p(30000)))
    }
}
