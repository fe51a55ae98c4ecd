import CallsSupport

/// The datagrams by which a client binds its address to its participant at the relay's UDP
/// port, and keeps its consent to receive media there (the model is ICE consent freshness,
/// RFC 7675): media flows to an address only after it answered a challenge no one off the
/// path could see, and only while it keeps answering.
///
/// ```
/// bind:      "CRB2" | ssrc (u32 BE) | proof (16)              = 24 bytes   client → relay
/// challenge: "CRC1" | ssrc (u32 BE) | nonce (16)              = 24 bytes   relay → address
/// response:  "CRR1" | ssrc (u32 BE) | nonce (16) | mac (16)   = 40 bytes   client → relay
/// ack:       "CRA1" | ssrc (u32 BE)                           =  8 bytes   relay → address
/// ```
/// `proof` = HMAC-SHA256(bind token, "CRB2" ‖ ssrc)[0..<16] and `mac` = HMAC-SHA256(bind token,
/// "CRR1" ‖ ssrc ‖ nonce)[0..<16] (`MediaConsent` in CallsSecurity computes both): the bind
/// token — the per-join secret the `joined` message carries over TLS — never crosses UDP. A
/// challenge is never larger than the bind that caused it (no amplification). The first byte
/// ('C' = 0x43) has RTP version bits 01, so none of these is ever mistaken for RTP.
public enum MediaBinding {
    public static let bindMagic: [UInt8] = Array("CRB2".utf8)
    public static let challengeMagic: [UInt8] = Array("CRC1".utf8)
    public static let responseMagic: [UInt8] = Array("CRR1".utf8)
    public static let ackMagic: [UInt8] = Array("CRA1".utf8)
    public static let tokenLength = 16
    public static let nonceLength = 16
    public static let macLength = 16
    public static let bindLength = 24
    public static let challengeLength = 24
    public static let responseLength = 40
    public static let ackLength = 8

    /// A parsed bind request.
    public struct Bind: Sendable, Equatable {
        public var ssrc: UInt32
        public var proof: [UInt8]
        public init(ssrc: UInt32, proof: [UInt8]) { self.ssrc = ssrc; self.proof = proof }
    }

    /// A consent challenge: answer it from the address it reached.
    public struct Challenge: Sendable, Equatable {
        public var ssrc: UInt32
        public var nonce: [UInt8]
        public init(ssrc: UInt32, nonce: [UInt8]) { self.ssrc = ssrc; self.nonce = nonce }
    }

    /// A consent response.
    public struct Response: Sendable, Equatable {
        public var ssrc: UInt32
        public var nonce: [UInt8]
        public var mac: [UInt8]
        public init(ssrc: UInt32, nonce: [UInt8], mac: [UInt8]) { self.ssrc = ssrc; self.nonce = nonce; self.mac = mac }
    }

    /// Whether a datagram is a CallRoom control datagram (first byte 'C') rather than RTP.
    @inlinable public static func isControl(_ b: UnsafeRawBufferPointer) -> Bool { b.count >= 1 && b[0] == 0x43 }

    /// The bytes the bind proof authenticates.
    public static func bindMessage(ssrc: UInt32) -> [UInt8] { framed(bindMagic, ssrc) }

    /// The bytes a consent response's MAC authenticates.
    public static func responseMessage(ssrc: UInt32, nonce: [UInt8]) -> [UInt8] { framed(responseMagic, ssrc) + nonce }

    public static func encodeBind(_ b: Bind) -> [UInt8] { framed(bindMagic, b.ssrc) + b.proof.prefix(macLength) }
    public static func parseBind(_ b: UnsafeRawBufferPointer) -> Bind? {
        guard b.count == bindLength, has(bindMagic, b) else { return nil }
        return Bind(ssrc: ssrc(b), proof: Array(b[8..<24]))
    }

    public static func encodeChallenge(_ c: Challenge) -> [UInt8] { framed(challengeMagic, c.ssrc) + c.nonce.prefix(nonceLength) }
    public static func parseChallenge(_ b: UnsafeRawBufferPointer) -> Challenge? {
        guard b.count == challengeLength, has(challengeMagic, b) else { return nil }
        return Challenge(ssrc: ssrc(b), nonce: Array(b[8..<24]))
    }

    public static func encodeResponse(_ r: Response) -> [UInt8] {
        framed(responseMagic, r.ssrc) + r.nonce.prefix(nonceLength) + r.mac.prefix(macLength)
    }
    public static func parseResponse(_ b: UnsafeRawBufferPointer) -> Response? {
        guard b.count == responseLength, has(responseMagic, b) else { return nil }
        return Response(ssrc: ssrc(b), nonce: Array(b[8..<24]), mac: Array(b[24..<40]))
    }

    public static func encodeAck(ssrc: UInt32) -> [UInt8] { framed(ackMagic, ssrc) }
    public static func parseAck(_ b: UnsafeRawBufferPointer) -> UInt32? {
        guard b.count == ackLength, has(ackMagic, b) else { return nil }
        return ssrc(b)
    }

    private static func framed(_ magic: [UInt8], _ ssrc: UInt32) -> [UInt8] {
        var out = magic
        out.appendBigEndian(ssrc)
        return out
    }

    private static func has(_ magic: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        b[0] == magic[0] && b[1] == magic[1] && b[2] == magic[2] && b[3] == magic[3]
    }

    private static func ssrc(_ b: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
    }
}
