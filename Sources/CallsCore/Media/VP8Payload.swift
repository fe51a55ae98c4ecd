/// The VP8 RTP payload format (RFC 7741 §4.2): each packet's payload starts with a payload
/// descriptor, here always
///
/// ```
///  byte 0: X=1 R N S=start-of-frame R PID=0      (S: this packet starts a frame)
///  byte 1: I=1 L=0 T=0 K=0 RSV
///  byte 2-3: M=1 PictureID (15 bits)             (increments by one per frame)
/// ```
/// followed by a slice of the compressed frame. The RTP marker bit is set on a frame's last
/// packet; the RTP timestamp (90 kHz) is the frame's. A value; any thread.
public enum VP8Payload {
    public static let payloadType: UInt8 = 96
    public static let clockRate = 90_000
    public static let descriptorLength = 4
    /// Compressed bytes per packet: with the RTP header (12), the descriptor (4) and SRTP's
    /// tag and MKI (17), a packet stays under 1200 bytes.
    public static let maxChunk = 1150

    /// A parsed payload descriptor.
    public struct Descriptor: Sendable, Equatable {
        public var startOfFrame: Bool
        public var partition: Int
        public var pictureID: Int?
        public var nonReference: Bool
        /// Bytes before the VP8 data.
        public var length: Int
    }

    /// The descriptor for one packet of a frame.
    public static func descriptor(pictureID: Int, start: Bool) -> [UInt8] {
        let pid = pictureID & 0x7FFF
        return [0x80 | (start ? 0x10 : 0), 0x80, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF)]
    }

    /// Splits a compressed frame into packet payloads (descriptor + data), in order.
    public static func packetize(_ frame: [UInt8], pictureID: Int, maxChunk: Int = maxChunk) -> [[UInt8]] {
        guard !frame.isEmpty else { return [] }
        // Equal-sized chunks (no small tail packet).
        let count = (frame.count + maxChunk - 1) / maxChunk
        let size = (frame.count + count - 1) / count
        var out: [[UInt8]] = []
        out.reserveCapacity(count)
        var i = 0
        while i < frame.count {
            let end = min(frame.count, i + size)
            out.append(descriptor(pictureID: pictureID, start: i == 0) + frame[i..<end])
            i = end
        }
        return out
    }

    /// Parses a payload's descriptor; nil when it is malformed (too short for what it declares).
    public static func parse(_ p: UnsafeRawBufferPointer) -> Descriptor? {
        guard p.count >= 1 else { return nil }
        let b0 = p[0]
        var d = Descriptor(startOfFrame: b0 & 0x10 != 0, partition: Int(b0 & 0x07), pictureID: nil, nonReference: b0 & 0x20 != 0, length: 1)
        guard b0 & 0x80 != 0 else { return p.count > 1 ? d : nil }
        guard p.count >= 2 else { return nil }
        let b1 = p[1]
        d.length = 2
        if b1 & 0x80 != 0 {
            guard p.count > d.length else { return nil }
            let m = p[d.length]
            if m & 0x80 != 0 {
                guard p.count > d.length + 1 else { return nil }
                d.pictureID = Int(m & 0x7F) << 8 | Int(p[d.length + 1])
                d.length += 2
            } else {
                d.pictureID = Int(m & 0x7F)
                d.length += 1
            }
        }
        if b1 & 0x40 != 0 { d.length += 1 }  // TL0PICIDX
        if b1 & 0x30 != 0 { d.length += 1 }  // TID/Y/KEYIDX
        guard p.count > d.length else { return nil }
        return d
    }

    /// Whether the VP8 data that starts a frame is a keyframe (RFC 6386 §9.1: P bit clear).
    public static func isKeyframe(firstByteOfFrame b: UInt8) -> Bool { b & 0x01 == 0 }
}
