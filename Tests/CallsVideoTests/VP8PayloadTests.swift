import CallsCore
import CallsVideo
import Testing

/// RFC 7741 packetisation and reassembly: order, loss, late and duplicate packets, and the
/// keyframe gate after a loss.
struct VP8PayloadTests {
    struct Packet { var seq: UInt16; var ts: UInt32; var marker: Bool; var payload: [UInt8] }

    /// A frame of `size` bytes whose first byte says key (0) or inter (1).
    static func frame(_ size: Int, key: Bool, fill: UInt8) -> [UInt8] {
        var f = [UInt8](repeating: fill, count: size)
        f[0] = key ? 0x00 : 0x01
        return f
    }

    static func packets(_ frames: [[UInt8]], firstSeq: UInt16 = 65530) -> [Packet] {
        var out: [Packet] = []
        var seq = firstSeq
        for (i, f) in frames.enumerated() {
            let chunks = VP8Payload.packetize(f, pictureID: 32760 + i, maxChunk: 500)
            for (k, c) in chunks.enumerated() {
                out.append(Packet(seq: seq, ts: UInt32(i) &* 6000 &+ 4_294_960_000, marker: k == chunks.count - 1, payload: c))
                seq &+= 1
            }
        }
        return out
    }

    static func feed(_ a: inout VP8FrameAssembler, _ p: Packet) -> VP8FrameAssembler.Outcome {
        p.payload.withUnsafeBytes { a.insert(sequence: p.seq, timestamp: p.ts, marker: p.marker, payload: $0) }
    }

    /// A frame of more packets than any real one is not kept growing (the server's recorder takes
    /// every sender's packets): 512 packets make a frame, 513 never do.
    @Test func aFrameOfTooManyPacketsIsNotKept() {
        for (count, delivered) in [(512, true), (513, false)] {
            var a = VP8FrameAssembler()
            let chunks = VP8Payload.packetize(Self.frame(count * 10, key: true, fill: 7), pictureID: 1, maxChunk: 10)
            #expect(chunks.count == count)
            var got = false
            for (k, c) in chunks.enumerated() {
                if case .frame = Self.feed(&a, Packet(seq: UInt16(k), ts: 9000, marker: k == chunks.count - 1, payload: c)) { got = true }
            }
            #expect(got == delivered, "\(count) packets")
        }
    }

    @Test func descriptorRoundTrip() {
        let d = VP8Payload.descriptor(pictureID: 0x1234, start: true) + [0xAA]
        let parsed = d.withUnsafeBytes { VP8Payload.parse($0) }
        #expect(parsed?.startOfFrame == true && parsed?.partition == 0 && parsed?.pictureID == 0x1234 && parsed?.length == 4)
        #expect([UInt8]([0x80, 0x80]).withUnsafeBytes { VP8Payload.parse($0) } == nil, "cut short")
        // A 7-bit picture ID, TL0PICIDX and TID present (other senders' descriptors).
        let other: [UInt8] = [0x90, 0xE0, 0x05, 0x07, 0x40, 0xBB]
        #expect(other.withUnsafeBytes { VP8Payload.parse($0) }?.pictureID == 5)
        #expect(other.withUnsafeBytes { VP8Payload.parse($0) }?.length == 5)
    }

    @Test func framesComeBackWholeInAnyOrderAcrossWraparound() {
        let frames = [Self.frame(1400, key: true, fill: 1), Self.frame(900, key: false, fill: 2), Self.frame(1600, key: false, fill: 3)]
        var pk = Self.packets(frames)
        // Reverse within each frame (the marker packet comes first).
        pk = [pk[2], pk[1], pk[0], pk[4], pk[3], pk[8], pk[7], pk[6], pk[5]]
        var a = VP8FrameAssembler()
        var got: [[UInt8]] = []
        for p in pk { if case .frame(let f) = Self.feed(&a, p) { got.append(f.data) } }
        #expect(got == frames)
        #expect(a.framesDelivered == 3 && a.framesDropped == 0)
        #expect(Self.feed(&a, pk[0]) == .pending, "a late duplicate of a delivered frame is dropped")
    }

    @Test func aLostPacketAsksForAKeyframeAndDropsUntilOne() {
        let frames = [Self.frame(800, key: true, fill: 1), Self.frame(800, key: false, fill: 2), Self.frame(800, key: false, fill: 3),
                      Self.frame(800, key: false, fill: 4), Self.frame(800, key: true, fill: 5), Self.frame(800, key: false, fill: 6)]
        let pk = Self.packets(frames)  // 2 packets a frame
        var a = VP8FrameAssembler()
        var outcomes: [String] = []
        for (i, p) in pk.enumerated() where i != 2 {  // frame 1's first packet is lost
            switch Self.feed(&a, p) {
            case .frame(let f): outcomes.append("frame\(f.data[1])")
            case .needKeyframe: outcomes.append("key?")
            case .pending: break
            }
        }
        // Frame 1 never completes; frame 2 is complete but follows a gap: dropped, keyframe asked.
        #expect(outcomes == ["frame1", "key?", "key?", "frame5", "frame6"])
        #expect(!a.needsKeyframe)
    }

    @Test func nothingIsDeliveredBeforeTheFirstKeyframe() {
        let pk = Self.packets([Self.frame(300, key: false, fill: 9), Self.frame(300, key: true, fill: 8)])
        var a = VP8FrameAssembler()
        #expect(Self.feed(&a, pk[0]) == .needKeyframe)
        guard case .frame(let f) = Self.feed(&a, pk[1]) else { Issue.record("the keyframe is delivered"); return }
        #expect(f.isKeyframe && f.data[1] == 8)
    }

    @Test func malformedPayloadsAreIgnored() {
        var a = VP8FrameAssembler()
        #expect([UInt8]().withUnsafeBytes { a.insert(sequence: 1, timestamp: 1, marker: true, payload: $0) } == .pending)
        #expect([UInt8]([0x90, 0x80]).withUnsafeBytes { a.insert(sequence: 2, timestamp: 1, marker: true, payload: $0) } == .pending)
    }
}
