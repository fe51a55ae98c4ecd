@testable import CallsCore
import Testing

/// RFC 2198 redundant audio: the bytes on the wire, the sender's history, malformed payloads,
/// the in-order unpacking the server's members use, and bursty impairment.
@Suite("Redundant audio")
struct RedundantAudioTests {
    /// Frame `seq`'s fake Opus packet: its own bytes, so a block can be checked by content.
    func frame(_ seq: UInt16, length: Int = 40) -> [UInt8] { (0..<length).map { UInt8(truncatingIfNeeded: Int(seq) &* 7 &+ $0) } }

    /// The payload for frame `seq` repeating up to `distance` frames of `h`.
    func payload(_ h: RedundancyHistory, seq: UInt16, ts: UInt32, distance: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 1500)
        let primary = frame(seq)
        let n = out.withUnsafeMutableBytes { o in primary.withUnsafeBytes { p in
            h.payload(into: o, payloadType: 111, primary: p, sequence: seq, timestamp: ts, distance: distance)?.bytes } }
        return n.map { Array(out.prefix($0)) }
    }

    func remember(_ h: RedundancyHistory, _ seq: UInt16, _ ts: UInt32) { frame(seq).withUnsafeBytes { h.remember($0, sequence: seq, timestamp: ts) } }

    func layout(_ p: [UInt8]) -> RedundantAudio.Layout? { p.withUnsafeBytes { RedundantAudio.Layout(parsing: $0) } }

    @Test func theHeadersAreRFC2198sBitsAndTheBlocksComeBackByteForByte() throws {
        let h = RedundancyHistory()
        for s in UInt16(10)...12 { remember(h, s, UInt32(s) * 960) }
        let p = try #require(payload(h, seq: 13, ts: 13 * 960, distance: 2))
        // Two 4-byte block headers (F=1, PT 111, offset, length 40), the 1-byte primary header.
        #expect(p[0] == 0x80 | 111 && p[4] == 0x80 | 111 && p[8] == 111)
        #expect((UInt32(p[1]) << 6 | UInt32(p[2] >> 2)) == 1920, "the oldest block is two frames back")
        #expect((Int(p[2] & 3) << 8 | Int(p[3])) == 40)
        #expect((UInt32(p[5]) << 6 | UInt32(p[6] >> 2)) == 960)
        #expect(p.count == 9 + 3 * 40)
        let l = try #require(layout(p))
        #expect(l.count == 2 && l.primaryPayloadType == 111)
        #expect(Array(p[l[0].range]) == frame(11) && Array(p[l[1].range]) == frame(12) && Array(p[l.primary]) == frame(13))
        #expect(l[0].timestampOffset == 1920 && l[1].timestampOffset == 960)
        // Three asked for, three held: the oldest is frame 10.
        let p3 = try #require(payload(h, seq: 13, ts: 13 * 960, distance: 3))
        let three = try #require(layout(p3))
        #expect(three.count == 3)
    }

    @Test func onlyFramesSentRightBeforeAreRepeated() throws {
        let h = RedundancyHistory()
        remember(h, 1, 960); remember(h, 2, 1920)
        // A gap in sequence numbers (nothing was sent for 3): nothing to repeat for 4.
        #expect(h.available(sequence: 4, timestamp: 3840, distance: 3) == 0)
        #expect(h.available(sequence: 3, timestamp: 2880, distance: 3) == 2)
        // Muted for a second (sequence numbers continue, timestamps jumped past 14 bits).
        #expect(h.available(sequence: 3, timestamp: 1920 + 48_000, distance: 3) == 0)
        // Distance 0, or a history that was reset: a bare primary header.
        h.reset()
        let p = try #require(payload(h, seq: 3, ts: 2880, distance: 2))
        #expect(p.count == 41 && p[0] == 111)
        // A packet too large for a block is not kept.
        let big = [UInt8](repeating: 1, count: 1100)
        big.withUnsafeBytes { h.remember($0, sequence: 3, timestamp: 2880) }
        #expect(h.available(sequence: 4, timestamp: 3840, distance: 1) == 0)
    }

    @Test func copiesThatDoNotFitAreLeftOutOldestFirst() throws {
        let h = RedundancyHistory()
        for s in UInt16(1)...3 { frame(s, length: 600).withUnsafeBytes { h.remember($0, sequence: s, timestamp: UInt32(s) * 960) } }
        // 1480 bytes of room, 600-byte frames (a high bitrate): the primary and one copy, not three.
        var out = [UInt8](repeating: 0, count: 1480)
        let primary = frame(4, length: 600)
        let r = try #require(out.withUnsafeMutableBytes { o in primary.withUnsafeBytes { p in
            h.payload(into: o, payloadType: 111, primary: p, sequence: 4, timestamp: 4 * 960, distance: 3) } })
        #expect(r.repeated == 1 && r.bytes == 5 + 1200)
        let l = try #require(layout(Array(out.prefix(r.bytes))))
        #expect(l.count == 1 && Array(out[l[0].range]) == frame(3, length: 600), "the newest copy is the one kept")
        #expect(Array(out[l.primary]) == primary)
    }

    @Test func malformedPayloadsAreRefusedWhole() {
        #expect(layout([]) == nil, "no primary header")
        #expect(layout([0x80 | 111, 0, 0]) == nil, "a block header cut short")
        #expect(layout([0x80 | 111, 0, 0x0C, 50, 111] + [UInt8](repeating: 0, count: 10)) == nil, "a block longer than the payload")
        #expect(layout([UInt8](repeating: 0x80 | 111, count: 4 * 5) + [111]) == nil, "more than four blocks")
        #expect(layout([111])?.count == 0 && layout([111])?.primary == 1..<1, "an empty primary is still well formed")
    }

    /// A header and payload as the server's members see one packet.
    func header(_ seq: UInt16, red: Bool) -> RTPHeader {
        let bytes = RTPPacket(payloadType: red ? RedundantAudio.payloadType : 111, sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: 5, payload: [0]).encoded()
        return try! RTPHeader(parsing: bytes)
    }

    @Test func theUnpackerHandsOverLostFramesFromCopiesInOrderAndNeverTwice() throws {
        let h = RedundancyHistory()
        var u = RedundancyUnpacker()
        var got: [(UInt16, UInt32, [UInt8], UInt8)] = []
        func feed(_ seq: UInt16, red: Bool = true) {
            let p = red ? payload(h, seq: seq, ts: UInt32(seq) * 960, distance: 2)! : frame(seq)
            remember(h, seq, UInt32(seq) * 960)
            p.withUnsafeBufferPointer { b in u.unpack(header(seq, red: red), payload: b) { hh, bytes in got.append((hh.sequenceNumber, hh.timestamp, Array(bytes), hh.payloadType)) } }
        }
        feed(1); feed(2)
        remember(h, 3, 3 * 960); remember(h, 4, 4 * 960)  // 3 and 4 were sent and lost
        feed(5); feed(6)
        remember(h, 7, 7 * 960); remember(h, 8, 8 * 960); remember(h, 9, 9 * 960)  // three lost: 7 is beyond repair
        feed(10); feed(11, red: false)
        #expect(got.map(\.0) == [1, 2, 3, 4, 5, 6, 8, 9, 10, 11], "\(got.map(\.0))")
        #expect(got.allSatisfy { $0.2 == frame($0.0) && $0.1 == UInt32($0.0) * 960 && $0.3 == 111 }, "each frame's own bytes and timestamp, as plain Opus")
        #expect(u.repaired == 4 && u.malformed == 0)
        let bad: [UInt8] = [0x80 | 111, 0, 0, 200, 111]
        bad.withUnsafeBufferPointer { b in u.unpack(header(12, red: true), payload: b) { _, _ in Issue.record("a malformed payload is dropped") } }
        #expect(u.malformed == 1)
    }

    @Test func burstyLossKeepsItsRateAndMakesBursts() throws {
        var rng = SplitMix64(seed: 3)
        var p = NetworkImpairment.LossProcess(NetworkImpairment(lossPercent: 20, jitterMs: 0, burstLength: 3))
        let drops = (0..<200_000).map { _ in p.drops(using: &rng) }
        let rate = Double(drops.filter { $0 }.count) / Double(drops.count)
        #expect(abs(rate - 0.20) < 0.01, "overall rate \(rate)")
        var bursts = 0, run = 0, lengths = 0
        for d in drops + [false] {
            if d { run += 1 } else if run > 0 { bursts += 1; lengths += run; run = 0 }
        }
        let mean = Double(lengths) / Double(bursts)
        #expect(abs(mean - 3) < 0.15, "mean burst \(mean)")
        // Independent loss draws as before: the same packets for the same seed.
        var a = SplitMix64(seed: 9), b = SplitMix64(seed: 9)
        var q = NetworkImpairment.LossProcess(NetworkImpairment(lossPercent: 10, jitterMs: 0))
        for _ in 0..<1000 { #expect(q.drops(using: &a) == (Double.random(in: 0..<100, using: &b) < 10)) }
        #expect(try NetworkImpairment(spec: "loss=20,burst=2").burstLength == 2)
        #expect(throws: ArgumentScanner.UsageError.self) { try NetworkImpairment(spec: "burst=0") }
    }
}
