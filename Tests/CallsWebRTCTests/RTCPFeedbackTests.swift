@testable import CallsWebRTC
import Testing

@Suite("RTCP with browsers: reports, NACK, PLI/FIR, REMB; what a bundled datagram is")
struct RTCPFeedbackTests {
    func parse(_ bytes: [UInt8]) -> [RTCPFeedback] { bytes.withUnsafeBytes { RTCPFeedback.parse($0) } }
    func kind(_ bytes: [UInt8]) -> BundledPacket { bytes.withUnsafeBytes { BundledPacket($0) } }

    @Test func aBundledTransportsPacketsAreToldApartByTheirFirstBytes() {
        #expect(kind([0x00, 0x01, 0x00, 0x00]) == .stun, "a binding request")
        #expect(kind([0x16, 0xFE, 0xFD]) == .dtls, "a DTLS 1.2 handshake record")
        #expect(kind([0x80, 111]) == .rtp)
        #expect(kind([0x80, 0x80 | 96]) == .rtp, "a marker bit on VP8")
        #expect(kind([0x81, 201]) == .rtcp)
        #expect(kind([0x81, 206]) == .rtcp)
        #expect(kind([0x80]) == .unknown)
        #expect(kind([]) == .unknown)
        #expect(kind([0xFF, 0x00]) == .unknown)
    }

    @Test func eachKindWrittenIsReadBack() {
        let report = RTCPFeedback.Report(ssrc: 0xAABB_CCDD, fractionLost: 26, cumulativeLost: -3, highestSequence: 0x0001_0203,
                                         jitter: 77, lastSR: 0x1234_5678, delaySinceLastSR: 65536)
        let all: [RTCPFeedback] = [
            .reports(from: 1, [report]),
            .nack(from: 2, media: 0x1111, lost: [100, 101, 116, 200, 65535, 0]),
            .keyframe(from: 3, media: 0x2222),
            .remb(from: 4, bitsPerSecond: 1_500_000, ssrcs: [0x2222, 0x3333]),
        ]
        let compound = all.flatMap(\.bytes)
        #expect(compound.count % 4 == 0)
        let back = parse(compound)
        #expect(back.count == 4)
        #expect(back[0] == all[0], "a negative cumulative loss survives its 24 bits")
        #expect(back[1] == .nack(from: 2, media: 0x1111, lost: [100, 101, 116, 200, 65535, 0]), "PID+BLP, across the wrap")
        #expect(back[2] == all[2])
        guard case .remb(let from, let bits, let ssrcs) = back[3] else { Issue.record("\(back[3])"); return }
        #expect(from == 4 && ssrcs == [0x2222, 0x3333])
        #expect(bits <= 1_500_000 && bits > 1_499_000, "18-bit mantissa: \(bits)")
    }

    /// As browsers send them (RFC 4585, RFC 5104): the bytes written out by hand.
    @Test func aBrowsersPLIAndFIRAreKeyframeRequests() {
        let pli: [UInt8] = [0x81, 206, 0x00, 0x02, 0, 0, 0, 1, 0xCA, 0xFE, 0xBA, 0xBE]
        let fir: [UInt8] = [0x84, 206, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0, 0, 0xCA, 0xFE, 0xBA, 0xBE, 7, 0, 0, 0]
        #expect(parse(pli) == [.keyframe(from: 1, media: 0xCAFE_BABE)])
        #expect(parse(fir) == [.keyframe(from: 1, media: 0xCAFE_BABE)], "FIR names the media in its FCI")
    }

    @Test func unknownPacketsAreSkippedAndTruncationStopsReading() {
        let sdes: [UInt8] = [0x81, 202, 0x00, 0x02, 0, 0, 0, 9, 1, 1, 0x41, 0]  // an SDES chunk: not ours to read
        let pli = RTCPFeedback.keyframe(from: 5, media: 6).bytes
        #expect(parse(sdes + pli) == [.keyframe(from: 5, media: 6)])
        #expect(parse(Array(pli.dropLast())) == [], "its length runs past the datagram")
        #expect(parse([0x40, 201, 0, 1, 0, 0, 0, 0]) == [], "not version 2")
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let junk = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = parse([0x80 | (junk.first ?? 0) & 0x1F, 200 + (junk.last ?? 0) % 8] + junk)  // never traps
        }
    }
}
