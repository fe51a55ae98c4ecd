/// The RTP header changes between a browser's packets and CallRoom's wire format (protocol.md,
/// "RTP and SRTP", "Video"), made on the decrypted packet in place. The payload (Opus, VP8 with
/// its RFC 7741 descriptor) is never touched: both sides speak the same codecs.
///
/// - Browser → room: the participant's SSRC (the server assigned it; browsers choose their own),
///   payload type 111 (Opus) or 96 (VP8), no CSRCs, padding removed, and for audio exactly the
///   one header extension native receivers expect (the RFC 6464 level, one-byte form, id 1) —
///   the browser's level is carried over from whatever id it negotiated; video carries none.
///   The marker bit is cleared on audio and kept on video (a frame's last packet).
/// - Room → browser: the browser's payload type for the kind; the level extension renumbered to
///   the browser's id for it, or dropped when it did not negotiate one.
///
/// Pure; any thread.
public enum RTPRewrite {
    /// CallRoom's payload types (protocol.md).
    public static let nativeOpus: UInt8 = 111
    public static let nativeVP8: UInt8 = 96
    /// CallRoom's redundant audio (RFC 2198, blocks of Opus at 111).
    public static let nativeRED: UInt8 = 63
    /// CallRoom's level extension id.
    public static let nativeLevelID: UInt8 = 1

    /// What a packet's header holds, as read.
    public struct Header: Equatable, Sendable {
        public var marker: Bool
        public var payloadType: UInt8
        public var sequence: UInt16
        public var timestamp: UInt32
        public var ssrc: UInt32
        /// The RFC 6464 byte (voice flag and level) when the extension with `levelID` is there.
        public var level: UInt8?
        /// Where the payload starts and how long it is (padding excluded).
        public var payloadOffset: Int
        public var payloadLength: Int
    }

    /// Reads an RTP header; nil when the packet is not RTP version 2 or its lengths do not add up.
    /// `levelID` is the extension id the writer uses for the audio level (nil: not looked for).
    public static func read(_ p: UnsafeRawBufferPointer, levelID: UInt8?) -> Header? {
        guard p.count >= 12, p[0] >> 6 == 2 else { return nil }
        let padding = p[0] & 0x20 != 0, hasExtension = p[0] & 0x10 != 0, csrcs = Int(p[0] & 0x0F)
        var at = 12 + 4 * csrcs
        var level: UInt8?
        if hasExtension {
            guard p.count >= at + 4 else { return nil }
            let profile = UInt16(p[at]) << 8 | UInt16(p[at + 1])
            let words = Int(p[at + 2]) << 8 | Int(p[at + 3])
            let start = at + 4, end = start + 4 * words
            guard p.count >= end else { return nil }
            if let levelID { level = Self.element(levelID, in: p, from: start, to: end, profile: profile) }
            at = end
        }
        var payloadEnd = p.count
        if padding {
            guard let count = p.last, count > 0, Int(count) <= payloadEnd - at else { return nil }
            payloadEnd -= Int(count)
        }
        guard payloadEnd >= at else { return nil }
        return Header(marker: p[1] & 0x80 != 0, payloadType: p[1] & 0x7F,
                      sequence: UInt16(p[2]) << 8 | UInt16(p[3]),
                      timestamp: UInt32(p[4]) << 24 | UInt32(p[5]) << 16 | UInt32(p[6]) << 8 | UInt32(p[7]),
                      ssrc: UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11]),
                      level: level, payloadOffset: at, payloadLength: payloadEnd - at)
    }

    /// The first data byte of extension element `id` (RFC 8285: one-byte form 0xBEDE, or the
    /// two-byte form 0x100x).
    static func element(_ id: UInt8, in p: UnsafeRawBufferPointer, from start: Int, to end: Int, profile: UInt16) -> UInt8? {
        var i = start
        if profile == 0xBEDE {
            while i < end {
                let b = p[i]
                if b == 0 { i += 1; continue }            // padding
                let eid = b >> 4, length = Int(b & 0x0F) + 1
                if eid == 15 { return nil }               // reserved: stop reading
                guard i + 1 + length <= end else { return nil }
                if eid == id { return p[i + 1] }
                i += 1 + length
            }
        } else if profile & 0xFFF0 == 0x1000 {
            while i + 1 < end {
                let eid = p[i]
                if eid == 0 { i += 1; continue }
                let length = Int(p[i + 1])
                guard i + 2 + length <= end else { return nil }
                if eid == id, length >= 1 { return p[i + 2] }
                i += 2 + length
            }
        }
        return nil
    }

    /// Writes a header for `payload` (already in `buffer` at `header.payloadOffset`) in CallRoom's or
    /// a browser's form and moves the payload after it. `buffer` must hold `payloadOffset +
    /// payloadLength` bytes and have room for the longest header (12 + 8). Returns the packet's
    /// new length.
    /// - Parameters:
    ///   - levelID: the id to write the level under (nil: no extension).
    ///   - marker: the marker bit to write.
    public static func write(_ buffer: UnsafeMutableRawBufferPointer, header h: Header, payloadType: UInt8, ssrc: UInt32,
                             marker: Bool, levelID: UInt8?) -> Int {
        let headerLength = levelID == nil ? 12 : 20
        // Move the payload first (the new header may be longer or shorter than the old).
        if headerLength != h.payloadOffset, h.payloadLength > 0, let base = buffer.baseAddress {
            (base + headerLength).copyMemory(from: base + h.payloadOffset, byteCount: h.payloadLength)
        }
        buffer[0] = 0x80 | (levelID == nil ? 0 : 0x10)
        buffer[1] = (marker ? 0x80 : 0) | (payloadType & 0x7F)
        buffer[2] = UInt8(h.sequence >> 8); buffer[3] = UInt8(h.sequence & 0xFF)
        for i in 0..<4 {
            buffer[4 + i] = UInt8(truncatingIfNeeded: h.timestamp >> (24 - 8 * i))
            buffer[8 + i] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * i))
        }
        if let levelID {
            // 0xBEDE, one word: the element (id, L = 0), its byte, two bytes of padding.
            buffer[12] = 0xBE; buffer[13] = 0xDE; buffer[14] = 0; buffer[15] = 1
            buffer[16] = levelID << 4; buffer[17] = h.level ?? 0x7F; buffer[18] = 0; buffer[19] = 0
        }
        return headerLength + h.payloadLength
    }

    /// Where the primary (newest) block of an RFC 2198 payload is: past the block headers (4
    /// bytes each while F is set, then 1) and the redundant blocks' lengths. Nil when the
    /// headers run past the payload.
    public static func redPrimary(_ p: UnsafeRawBufferPointer, _ h: Header) -> (offset: Int, length: Int)? {
        var at = h.payloadOffset
        let end = h.payloadOffset + h.payloadLength
        var redundant = 0
        while at < end, p[at] & 0x80 != 0 {
            guard at + 4 <= end else { return nil }
            redundant += Int(p[at + 2] & 0x03) << 8 | Int(p[at + 3])
            at += 4
        }
        guard at < end else { return nil }
        at += 1  // the primary's one-byte header
        guard at + redundant <= end else { return nil }
        return (at + redundant, end - at - redundant)
    }

    /// The longest header `write` writes.
    public static let maxHeader = 20
}
