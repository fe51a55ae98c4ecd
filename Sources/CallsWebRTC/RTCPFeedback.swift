/// What arrives on a browser's bundled transport, told apart by its first byte (RFC 7983 §7):
/// STUN (ICE checks and consent), DTLS (the handshake), or RTP/RTCP — and RTCP from RTP by the
/// packet type (RFC 5761 §4: 192–223 are RTCP). Pure; any thread.
public enum BundledPacket: Sendable, Equatable {
    case stun, dtls, rtp, rtcp, unknown

    public init(_ datagram: UnsafeRawBufferPointer) {
        guard let first = datagram.first else { self = .unknown; return }
        switch first {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191:
            guard datagram.count >= 2 else { self = .unknown; return }
            self = (192...223).contains(datagram[1]) ? .rtcp : .rtp
        default: self = .unknown
        }
    }
}

/// The RTCP a gateway reads from and writes to a browser: reception reports (RFC 3550), NACK
/// (RFC 4585 §6.2.1), PLI and FIR (RFC 4585 §6.3.1, RFC 5104 §4.3.1) — the keyframe requests
/// the relay already forwards for native clients — and REMB (draft-alvestrand-rmcat-remb), the
/// bandwidth estimate a browser's video adapts to. Unknown packets in a compound are skipped,
/// never an error; a packet whose length runs past the datagram ends the reading. Pure; any thread.
public enum RTCPFeedback: Sendable, Equatable {
    /// One reception report block: how `ssrc`'s stream fares at the reporter.
    public struct Report: Sendable, Equatable {
        public var ssrc: UInt32
        /// Packets lost since the last report, over 256.
        public var fractionLost: UInt8
        public var cumulativeLost: Int32
        public var highestSequence: UInt32
        public var jitter: UInt32
        public var lastSR: UInt32
        public var delaySinceLastSR: UInt32
    }

    /// Sender (200) or receiver (201) report: the reporter and its blocks.
    case reports(from: UInt32, [Report])
    /// Lost packets of `media` by sequence number (generic NACK).
    case nack(from: UInt32, media: UInt32, lost: [UInt16])
    /// A keyframe, please (PLI), or a full intra request (FIR) — the same to the relay.
    case keyframe(from: UInt32, media: UInt32)
    /// The receiver's estimate of what it can take, and for which senders.
    case remb(from: UInt32, bitsPerSecond: UInt64, ssrcs: [UInt32])

    /// Every packet of a compound RTCP datagram this gateway understands, in order.
    public static func parse(_ d: UnsafeRawBufferPointer) -> [RTCPFeedback] {
        var out: [RTCPFeedback] = []
        var at = 0
        func u32(_ i: Int) -> UInt32 { UInt32(d[i]) << 24 | UInt32(d[i + 1]) << 16 | UInt32(d[i + 2]) << 8 | UInt32(d[i + 3]) }
        while at + 8 <= d.count {
            guard d[at] >> 6 == 2 else { break }
            let count = Int(d[at] & 0x1F), type = d[at + 1]
            let length = ((Int(d[at + 2]) << 8 | Int(d[at + 3])) + 1) * 4
            guard at + length <= d.count else { break }
            let sender = u32(at + 4)
            switch type {
            case 200, 201:
                let blocks = at + (type == 200 ? 28 : 8)
                var reports: [Report] = []
                for b in 0..<count where blocks + (b + 1) * 24 <= at + length {
                    let p = blocks + b * 24
                    let lost = Int32(bitPattern: (u32(p + 4) & 0x00FF_FFFF) << 8) >> 8  // 24-bit signed
                    reports.append(Report(ssrc: u32(p), fractionLost: d[p + 4], cumulativeLost: lost, highestSequence: u32(p + 8),
                                          jitter: u32(p + 12), lastSR: u32(p + 16), delaySinceLastSR: u32(p + 20)))
                }
                out.append(.reports(from: sender, reports))
            case 205 where count == 1 && length >= 16:  // generic NACK: PID + BLP words
                var lost: [UInt16] = []
                var w = at + 12
                while w + 4 <= at + length {
                    let pid = UInt16(d[w]) << 8 | UInt16(d[w + 1]), blp = UInt16(d[w + 2]) << 8 | UInt16(d[w + 3])
                    lost.append(pid)
                    for bit in 0..<16 where blp & (1 << bit) != 0 { lost.append(pid &+ UInt16(bit + 1)) }
                    w += 4
                }
                out.append(.nack(from: sender, media: u32(at + 8), lost: lost))
            case 206 where count == 1 && length >= 12:  // PLI
                out.append(.keyframe(from: sender, media: u32(at + 8)))
            case 206 where count == 4 && length >= 20:  // FIR: the media is in its FCI
                out.append(.keyframe(from: sender, media: u32(at + 12)))
            case 206 where count == 15 && length >= 24 && d[at + 12] == 0x52 && d[at + 13] == 0x45 && d[at + 14] == 0x4D && d[at + 15] == 0x42:
                let n = Int(d[at + 16]), exp = UInt64(d[at + 17] >> 2)
                let mantissa = UInt64(d[at + 17] & 0x03) << 16 | UInt64(d[at + 18]) << 8 | UInt64(d[at + 19])
                let bits = exp >= 46 ? UInt64.max : mantissa << exp
                let ssrcs = (0..<n).compactMap { i -> UInt32? in at + 20 + (i + 1) * 4 <= at + length ? u32(at + 20 + i * 4) : nil }
                out.append(.remb(from: sender, bitsPerSecond: bits, ssrcs: ssrcs))
            default:
                break
            }
            at += length
        }
        return out
    }

    /// The packet's bytes (for a compound, concatenate); reports are written as a receiver
    /// report (201) of at most 31 blocks.
    public var bytes: [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func header(_ count: Int, _ type: UInt8, words: Int) -> [UInt8] { [0x80 | UInt8(count), type, UInt8((words - 1) >> 8), UInt8((words - 1) & 0xFF)] }
        switch self {
        case .reports(let from, let blocks):
            let body = blocks.prefix(31).flatMap { r -> [UInt8] in
                let lost = UInt32(bitPattern: r.cumulativeLost) & 0x00FF_FFFF
                return be(r.ssrc) + be(UInt32(r.fractionLost) << 24 | lost) + be(r.highestSequence) + be(r.jitter) + be(r.lastSR) + be(r.delaySinceLastSR)
            }
            return header(min(31, blocks.count), 201, words: 2 + body.count / 4) + be(from) + body
        case .nack(let from, let media, let lost):
            var words: [UInt8] = []
            var rest = lost
            while let pid = rest.first {
                var blp: UInt16 = 0
                for s in rest.dropFirst() { let d = s &- pid; if d >= 1 && d <= 16 { blp |= 1 << (d - 1) } }
                rest.removeAll { s in s == pid || (s &- pid >= 1 && s &- pid <= 16) }
                words += [UInt8(pid >> 8), UInt8(pid & 0xFF), UInt8(blp >> 8), UInt8(blp & 0xFF)]
            }
            return header(1, 205, words: 3 + words.count / 4) + be(from) + be(media) + words
        case .keyframe(let from, let media):
            return header(1, 206, words: 3) + be(from) + be(media)
        case .remb(let from, let bits, let ssrcs):
            var exp: UInt64 = 0, mantissa = bits
            while mantissa > 0x3FFFF { mantissa >>= 1; exp += 1 }
            let list = ssrcs.prefix(255)
            return header(15, 206, words: 5 + list.count) + be(from) + be(0) + [0x52, 0x45, 0x4D, 0x42, UInt8(list.count),
                                                                             UInt8(exp << 2) | UInt8(mantissa >> 16), UInt8(mantissa >> 8 & 0xFF), UInt8(mantissa & 0xFF)]
                + list.flatMap(be)
        }
    }
}
