import CallsCore
import Testing

@Suite("RTP packets")
struct RTPPacketTests {
    @Test func roundTripWithoutExtension() throws {
        let p = RTPPacket(marker: true, sequenceNumber: 0xBEEF, timestamp: 0xDEADBEEF, ssrc: 0x01020304, payload: [1, 2, 3, 4, 5])
        let bytes = p.encoded()
        #expect(bytes.count == 12 + 5)
        #expect(bytes[0] == 0x80)
        #expect(bytes[1] == 0x80 | 111)
        #expect(Array(bytes[2...3]) == [0xBE, 0xEF])
        #expect(Array(bytes[8...11]) == [1, 2, 3, 4])
        #expect(try RTPPacket(parsing: bytes) == p)
    }

    @Test func audioLevelExtensionRoundTrips() throws {
        let level = RTPPacket.AudioLevel(level: 42, voiceActivity: true)
        let p = RTPPacket(sequenceNumber: 7, timestamp: 960, ssrc: 99, audioLevel: level, payload: [9, 9])
        let bytes = p.encoded()
        #expect(bytes[0] & 0x10 != 0, "X bit set")
        #expect(Array(bytes[12...15]) == [0xBE, 0xDE, 0x00, 0x01])
        #expect(bytes[17] == 0x80 | 42)
        let back = try RTPPacket(parsing: bytes)
        #expect(back.audioLevel == level)
        #expect(back.payload == [9, 9])
    }

    @Test func levelIsClampedTo127() {
        #expect(RTPPacket.AudioLevel(level: 200, voiceActivity: false).level == 127)
    }

    @Test func writeHeaderMatchesEncoded() {
        let level = RTPPacket.AudioLevel(level: 30, voiceActivity: false)
        let p = RTPPacket(sequenceNumber: 65535, timestamp: 123456, ssrc: 0xCAFEBABE, audioLevel: level, payload: [])
        var buf = [UInt8](repeating: 0xFF, count: 20)
        let n = buf.withUnsafeMutableBytes {
            RTPPacket.writeHeader(into: $0, sequenceNumber: 65535, timestamp: 123456, ssrc: 0xCAFEBABE, audioLevel: level)
        }
        #expect(n == 20)
        #expect(buf == p.encoded())
    }

    @Test func skipsCSRCsUnknownExtensionsAndPadding() throws {
        // V=2 P=1 X=1 CC=1, PT 111, seq 1, ts 2, ssrc 3, one CSRC, a 2-word unknown extension, payload [7,8], 2 bytes padding.
        var b: [UInt8] = [0xB1, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]
        b += [0x10, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8]
        b += [7, 8, 0, 2]
        let p = try RTPPacket(parsing: b)
        #expect(p.payload == [7, 8])
        #expect(p.audioLevel == nil)
        #expect(p.ssrc == 3)
    }

    @Test func findsLevelAfterOtherOneByteElements() throws {
        // 0xBEDE profile, 2 words: element id 3 (2 bytes), padding, then id 1 level 0x85.
        var b: [UInt8] = [0x90, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        b += [0xBE, 0xDE, 0x00, 0x02, 0x31, 0xAA, 0xBB, 0x00, 0x10, 0x85, 0x00, 0x00]
        b += [1]
        let p = try RTPPacket(parsing: b)
        #expect(p.audioLevel == RTPPacket.AudioLevel(level: 5, voiceActivity: true))
        #expect(p.payload == [1])
    }

    @Test func rejectsMalformed() {
        #expect(throws: RTPError.tooShort(3)) { try RTPPacket(parsing: [0x80, 0, 0]) }
        #expect(throws: RTPError.badVersion(1)) { try RTPPacket(parsing: [UInt8](repeating: 0x40, count: 12)) }
        #expect(throws: RTPError.truncatedHeader) { try RTPPacket(parsing: [0x8F] + [UInt8](repeating: 0, count: 11)) }
        #expect(throws: RTPError.truncatedHeader) { try RTPPacket(parsing: [0x90] + [UInt8](repeating: 0, count: 11) + [0xBE, 0xDE, 0, 9]) }
        #expect(throws: RTPError.badPadding) { try RTPPacket(parsing: [0xA0] + [UInt8](repeating: 0, count: 11) + [1, 50]) }
    }

    @Test func sequenceNumbersWrap() {
        #expect(SequenceNumber.distance(from: 65535, to: 0) == 1)
        #expect(SequenceNumber.distance(from: 0, to: 65535) == -1)
        #expect(SequenceNumber.distance(from: 65000, to: 500) == 1036)
        #expect(SequenceNumber.isNewer(3, than: 65530))
        #expect(!SequenceNumber.isNewer(65530, than: 3))
        #expect(SequenceNumber.distance(from: 100, to: 100) == 0)
    }
}
