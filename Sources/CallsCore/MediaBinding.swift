/// The datagram a client sends to the relay's UDP port to bind its address to its
/// participant, and the relay's acknowledgement.
///
/// ```
/// bind:  "CRB1" | ssrc (u32 BE) | bind token (16 bytes)   = 24 bytes
/// ack:   "CRA1" | ssrc (u32 BE)                             =  8 bytes
/// ```
/// The first byte ('C' = 0x43) has RTP version bits 01, so a bind packet can never be
/// mistaken for RTP (version 2). The bind token is the per-join secret the server hands
/// out in the `joined` signalling message; the relay drops datagrams from unbound addresses.
public enum MediaBinding {
    public static let bindMagic: [UInt8] = Array("CRB1".utf8)
    public static let ackMagic: [UInt8] = Array("CRA1".utf8)
    public static let tokenLength = 16
    public static let bindLength = 24
    public static let ackLength = 8

    /// A parsed bind request.
    public struct Request: Sendable, Equatable {
        public var ssrc: UInt32
        public var token: [UInt8]
        public init(ssrc: UInt32, token: [UInt8]) { self.ssrc = ssrc; self.token = token }
    }

    /// Whether a datagram is a CallRoom control datagram (first byte 'C') rather than RTP.
    @inlinable public static func isControl(_ b: UnsafeRawBufferPointer) -> Bool { b.count >= 1 && b[0] == 0x43 }

    public static func encodeBind(ssrc: UInt32, token: [UInt8]) -> [UInt8] {
        var out = bindMagic
        out.appendBigEndian(ssrc)
        out.append(contentsOf: token.prefix(tokenLength))
        return out
    }

    public static func parseBind(_ b: UnsafeRawBufferPointer) -> Request? {
        guard b.count == bindLength, b[0] == 0x43, b[1] == 0x52, b[2] == 0x42, b[3] == 0x31 else { return nil }
        let ssrc = UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
        return Request(ssrc: ssrc, token: Array(b[8..<24]))
    }

    public static func encodeAck(ssrc: UInt32) -> [UInt8] {
        var out = ackMagic
        out.appendBigEndian(ssrc)
        return out
    }

    public static func parseAck(_ b: UnsafeRawBufferPointer) -> UInt32? {
        guard b.count == ackLength, b[0] == 0x43, b[1] == 0x52, b[2] == 0x41, b[3] == 0x31 else { return nil }
        return UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
    }
}
