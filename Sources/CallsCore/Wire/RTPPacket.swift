import CallsSupport

/// An RTP packet (RFC 3550) carrying one Opus frame (RFC 7587), optionally with the
/// client-to-mixer audio level header extension (RFC 6464) in the one-byte form (RFC 8285).
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// |                           timestamp                           |
/// |                             SSRC                              |
/// |      0xBE     |      0xDE     |           length=1            |  (X=1)
/// |  ID=1 | L=0   |V|   level     |             padding           |
/// |                      Opus payload ...                         |
/// ```
///
/// A value type; safe to use from any thread.
public struct RTPPacket: Sendable, Equatable {
    /// The Opus payload type CallRoom uses (dynamic range, as in RFC 7587 examples).
    public static let opusPayloadType: UInt8 = 111
    /// Extension id CallRoom uses for the RFC 6464 audio level.
    public static let audioLevelExtensionID: UInt8 = 1

    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// The RFC 6464 level: 0 (loudest, 0 dBov) … 127 (silence, -127 dBov), and the voice-activity bit.
    public var audioLevel: AudioLevel?
    public var payload: [UInt8]

    public init(marker: Bool = false, payloadType: UInt8 = RTPPacket.opusPayloadType, sequenceNumber: UInt16,
                timestamp: UInt32, ssrc: UInt32, audioLevel: AudioLevel? = nil, payload: [UInt8]) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.audioLevel = audioLevel
        self.payload = payload
    }

    /// The RFC 6464 audio level carried in the header extension.
    public struct AudioLevel: Sendable, Equatable {
        /// -dBov, clamped to 0...127 (127 means silence).
        public var level: UInt8
        public var voiceActivity: Bool
        public init(level: UInt8, voiceActivity: Bool) {
            self.level = min(level, 127)
            self.voiceActivity = voiceActivity
        }
    }

    /// Serialises the packet to wire bytes.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + (audioLevel == nil ? 0 : 8) + payload.count)
        out.append(0x80 | (audioLevel == nil ? 0 : 0x10))
        out.append((marker ? 0x80 : 0) | (payloadType & 0x7F))
        out.appendBigEndian(sequenceNumber)
        out.appendBigEndian(timestamp)
        out.appendBigEndian(ssrc)
        if let level = audioLevel {
            out.append(contentsOf: [0xBE, 0xDE, 0x00, 0x01])
            out.append(Self.audioLevelExtensionID << 4)  // L=0 means one byte of data
            out.append((level.voiceActivity ? 0x80 : 0) | (level.level & 0x7F))
            out.append(contentsOf: [0, 0])
        }
        out.append(contentsOf: payload)
        return out
    }

    /// Parses wire bytes. Unknown header extensions are skipped; CSRCs and padding honoured.
    /// Reads the header in place (`RTPHeader`): the payload is the one copy made (the datagram
    /// buffer is reused by the receive loop).
    public init<C: RandomAccessCollection>(parsing b: C) throws(RTPError) where C.Element == UInt8, C.Index == Int {
        let h = try RTPHeader(parsing: b)
        marker = h.marker
        payloadType = h.payloadType
        sequenceNumber = h.sequenceNumber
        timestamp = h.timestamp
        ssrc = h.ssrc
        audioLevel = h.audioLevel
        payload = Array(b[(b.startIndex + h.payloadRange.lowerBound)..<(b.startIndex + h.payloadRange.upperBound)])
    }

    /// The RFC 6464 level in a datagram's one-byte header extensions (RFC 8285), read in place
    /// without copying or allocating: the one parser for the client and the relay's hot path.
    /// Nil when the packet has no such extension or its header is malformed. Not generic, so
    /// no caller pays for an unspecialised copy (which allocated, in debug builds).
    @inlinable
    public static func audioLevel(inDatagram d: UnsafeRawBufferPointer) -> AudioLevel? {
        let s = 0
        guard d.count >= 16, d[s] >> 6 == 2, d[s] & 0x10 != 0 else { return nil }
        let start = s + 12 + 4 * Int(d[s] & 0x0F)
        guard d.endIndex >= start + 4, d[start] == 0xBE, d[start + 1] == 0xDE else { return nil }
        let end = start + 4 + 4 * (Int(d[start + 2]) << 8 | Int(d[start + 3]))
        guard d.endIndex >= end else { return nil }
        return audioLevel(inOneByteExtensions: d, from: start + 4, to: end)
    }

    /// The SSRC of a datagram at least 12 bytes long, read in place (the relay's hot path).
    @inlinable
    public static func ssrc(inDatagram d: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(d[8]) << 24 | UInt32(d[9]) << 16 | UInt32(d[10]) << 8 | UInt32(d[11])
    }

    /// The audio level among one-byte header extensions in `b[start..<end]`.
    @inlinable
    public static func audioLevel(inOneByteExtensions b: UnsafeRawBufferPointer, from start: Int, to end: Int) -> AudioLevel? {
        var i = start
        while i < end {
            let byte = b[i]
            if byte == 0 { i += 1; continue }  // padding
            let id = byte >> 4
            let length = Int(byte & 0x0F) + 1
            if id == 15 { break }  // reserved: stop parsing (RFC 8285 §4.2)
            guard i + 1 + length <= end else { break }
            if id == audioLevelExtensionID {
                let v = b[i + 1]
                return AudioLevel(level: v & 0x7F, voiceActivity: v & 0x80 != 0)
            }
            i += 1 + length
        }
        return nil
    }
}

/// Why bytes could not be parsed as RTP.
/// An RTP header read in place from a datagram, and where its payload lies: what the receive
/// path needs without copying or allocating. The one RTP parser (`RTPPacket(parsing:)` uses it).
public struct RTPHeader: Sendable, Equatable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var audioLevel: RTPPacket.AudioLevel?
    /// Offsets of the payload in the parsed bytes (after CSRCs and extensions, before padding).
    public var payloadRange: Range<Int>

    /// Parses any byte collection (copied once if it is not contiguous).
    public init<C: RandomAccessCollection>(parsing b: C) throws(RTPError) where C.Element == UInt8, C.Index == Int {
        let parsed = b.withContiguousStorageIfAvailable { p in Result { () throws(RTPError) in try RTPHeader(parsing: UnsafeRawBufferPointer(p)) } }
            ?? Array(b).withUnsafeBytes { bytes in Result { () throws(RTPError) in try RTPHeader(parsing: bytes) } }
        self = try parsed.get()
    }

    /// Parses a datagram in place. Not generic, so it allocates nothing in any module that
    /// calls it (an unspecialised generic parser made 22 allocations per packet).
    public init(parsing b: UnsafeRawBufferPointer) throws(RTPError) {
        let s = 0, count = b.count
        guard count >= 12 else { throw .tooShort(count) }
        guard b[s] >> 6 == 2 else { throw .badVersion(b[s] >> 6) }
        let hasPadding = b[s] & 0x20 != 0
        let hasExtension = b[s] & 0x10 != 0
        let csrcCount = Int(b[s] & 0x0F)
        marker = b[s + 1] & 0x80 != 0
        payloadType = b[s + 1] & 0x7F
        sequenceNumber = UInt16(b[s + 2]) << 8 | UInt16(b[s + 3])
        timestamp = Self.u32(b, 4)
        ssrc = Self.u32(b, 8)
        var offset = 12 + 4 * csrcCount
        guard count >= offset else { throw .truncatedHeader }
        audioLevel = nil
        if hasExtension {
            guard count >= offset + 4 else { throw .truncatedHeader }
            let profile = UInt16(b[s + offset]) << 8 | UInt16(b[s + offset + 1])
            let words = Int(UInt16(b[s + offset + 2]) << 8 | UInt16(b[s + offset + 3]))
            let extStart = offset + 4
            let extEnd = extStart + 4 * words
            guard count >= extEnd else { throw .truncatedHeader }
            if profile == 0xBEDE {
                audioLevel = RTPPacket.audioLevel(inOneByteExtensions: b, from: s + extStart, to: s + extEnd)
            }
            offset = extEnd
        }
        var end = count
        if hasPadding {
            let pad = Int(b[s + count - 1])
            guard pad > 0, end - pad >= offset else { throw .badPadding }
            end -= pad
        }
        payloadRange = offset..<end
    }

    /// A big-endian 32-bit word (a static function, not a closure: nothing captured, nothing allocated).
    private static func u32(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }
}

public enum RTPError: Error, Equatable, Sendable {
    case tooShort(Int)
    case badVersion(UInt8)
    case truncatedHeader
    case badPadding
}

/// RTP sequence-number arithmetic modulo 2^16 (RFC 3550 §A.1).
public enum SequenceNumber {
    /// Signed distance from `a` to `b` taking wrap-around into account (`b` is newer when positive).
    @inlinable public static func distance(from a: UInt16, to b: UInt16) -> Int {
        Int(Int16(bitPattern: b &- a))
    }
    /// True when `b` comes after `a` in sequence order.
    @inlinable public static func isNewer(_ b: UInt16, than a: UInt16) -> Bool {
        distance(from: a, to: b) > 0
    }
}

extension Array where Element == UInt8 {
    @inlinable mutating func appendBigEndian(_ v: UInt16) {
        append(UInt8(v >> 8)); append(UInt8(v & 0xFF))
    }
    @inlinable mutating func appendBigEndian(_ v: UInt32) {
        append(UInt8(v >> 24)); append(UInt8((v >> 16) & 0xFF)); append(UInt8((v >> 8) & 0xFF)); append(UInt8(v & 0xFF))
    }
}

extension RTPPacket {
    /// Length of the header `writeHeader` produces (12 bytes, plus 8 with the level extension).
    public static func headerLength(withAudioLevel: Bool) -> Int { withAudioLevel ? 20 : 12 }

    /// Writes an RTP header (with an optional RFC 6464 level) into `buffer` without allocating,
    /// for real-time senders. Returns the header length; the payload goes right after it.
    public static func writeHeader(into buffer: UnsafeMutableRawBufferPointer, marker: Bool = false,
                                   payloadType: UInt8 = opusPayloadType, sequenceNumber: UInt16, timestamp: UInt32,
                                   ssrc: UInt32, audioLevel: AudioLevel?) -> Int {
        let n = headerLength(withAudioLevel: audioLevel != nil)
        precondition(buffer.count >= n, "RTP header buffer too small")
        buffer[0] = 0x80 | (audioLevel == nil ? 0 : 0x10)
        buffer[1] = (marker ? 0x80 : 0) | (payloadType & 0x7F)
        buffer[2] = UInt8(sequenceNumber >> 8); buffer[3] = UInt8(sequenceNumber & 0xFF)
        buffer[4] = UInt8(timestamp >> 24); buffer[5] = UInt8((timestamp >> 16) & 0xFF)
        buffer[6] = UInt8((timestamp >> 8) & 0xFF); buffer[7] = UInt8(timestamp & 0xFF)
        buffer[8] = UInt8(ssrc >> 24); buffer[9] = UInt8((ssrc >> 16) & 0xFF)
        buffer[10] = UInt8((ssrc >> 8) & 0xFF); buffer[11] = UInt8(ssrc & 0xFF)
        if let level = audioLevel {
            buffer[12] = 0xBE; buffer[13] = 0xDE; buffer[14] = 0; buffer[15] = 1
            buffer[16] = audioLevelExtensionID << 4
            buffer[17] = (level.voiceActivity ? 0x80 : 0) | (level.level & 0x7F)
            buffer[18] = 0; buffer[19] = 0
        }
        return n
    }
}
