import CallsSupport

/// RFC 2198 redundant audio: one RTP payload carrying the Opus packets of the frames sent just
/// before this one, then this frame's own, so a receiver rebuilds a lost frame from a later
/// packet at full quality (in-band FEC is a coarser copy, and only one frame back).
///
/// ```
///  per redundant block (4 bytes): |1|  block PT (7)  |   timestamp offset (14)   |  block length (10)  |
///  then, for the primary (1 byte): |0|  block PT (7)  |
///  then the redundant blocks' bytes (oldest first), then the primary's
/// ```
/// CallRoom's senders put in the packets of the `n` frames sent right before this one
/// (consecutive sequence numbers), so block `j` of `n` is the frame whose sequence number is
/// the packet's minus `n - j`, and whose timestamp is the packet's minus the block's offset.
/// The relay forwards it like any other payload and never looks inside.
///
/// A namespace of pure functions; safe from any thread.
public enum RedundantAudio {
    /// The RTP payload type of a redundant-audio packet (dynamic, as WebRTC's `red/48000/2`).
    public static let payloadType: UInt8 = 63
    /// Redundant blocks a receiver accepts in one packet (it says so in its loss reports,
    /// `LossReport.redBlocks`); senders put in at most `maxDistance`, and at most what every
    /// receiver accepts.
    public static let maxBlocks = 8
    /// What a receiver that does not say accepts (CallRoom before loss bursts were reported).
    public static let legacyBlocks = 4
    /// The most previous frames a CallRoom sender repeats (bursts of up to six lost packets).
    public static let maxDistance = 6
    /// The largest block the 10-bit length field can describe.
    public static let maxBlockBytes = 1023
    /// The largest timestamp offset the 14-bit field can describe.
    public static let maxTimestampOffset: UInt32 = 16383

    /// One redundant block: its payload type, how far back (RTP timestamp units) and where its bytes lie.
    public struct Block: Sendable, Equatable {
        public var payloadType: UInt8
        public var timestampOffset: UInt32
        public var range: Range<Int>
    }

    /// Where the blocks of one payload lie (no allocation: at most `maxBlocks` inline).
    public struct Layout: Sendable {
        public let primaryPayloadType: UInt8
        public let primary: Range<Int>
        public let count: Int
        private let blocks: InlineArray<8, Block>

        /// Block `j` (0 = the oldest).
        public subscript(j: Int) -> Block { blocks[j] }

        /// The sequence number of block `j`'s frame, in a packet numbered `packet` (CallRoom's
        /// senders repeat consecutive frames: block j of n is the frame n - j before the packet's).
        public func sequenceNumber(ofBlock j: Int, inPacket packet: UInt16) -> UInt16 { packet &- UInt16(count - j) }

        /// Parses a redundant-audio payload; nil when its headers are malformed or its blocks
        /// overrun it (the whole packet is then dropped: nothing in it can be trusted).
        public init?(parsing p: UnsafeRawBufferPointer) {
            var found = InlineArray<8, Block>(repeating: Block(payloadType: 0, timestampOffset: 0, range: 0..<0))
            var n = 0, at = 0, data = 0
            while true {
                guard at < p.count else { return nil }
                let first = p[at]
                if first & 0x80 == 0 {
                    at += 1
                    primaryPayloadType = first & 0x7F
                    break
                }
                guard n < RedundantAudio.maxBlocks, at + 4 <= p.count else { return nil }
                let offset = UInt32(p[at + 1]) << 6 | UInt32(p[at + 2] >> 2)
                let length = Int(p[at + 2] & 0x03) << 8 | Int(p[at + 3])
                found[n] = Block(payloadType: first & 0x7F, timestampOffset: offset, range: data..<(data + length))
                data += length
                n += 1
                at += 4
            }
            // Block ranges were counted from the end of the headers: move them there.
            guard at + data <= p.count else { return nil }
            for j in 0..<n { found[j].range = (found[j].range.lowerBound + at)..<(found[j].range.upperBound + at) }
            primary = (at + data)..<p.count
            count = n
            blocks = found
        }
    }

    /// The header bytes for `blocks` redundant blocks.
    public static func headerBytes(blocks: Int) -> Int { 4 * blocks + 1 }

    /// Writes the 4-byte header of a redundant block at `at`.
    static func writeBlockHeader(into out: UnsafeMutableRawBufferPointer, at: Int, payloadType: UInt8, offset: UInt32, length: Int) {
        out[at] = 0x80 | (payloadType & 0x7F)
        out[at + 1] = UInt8(truncatingIfNeeded: offset >> 6)
        out[at + 2] = UInt8(truncatingIfNeeded: (offset & 0x3F) << 2) | UInt8(truncatingIfNeeded: length >> 8)
        out[at + 3] = UInt8(truncatingIfNeeded: length)
    }
}
