import CallsSupport

/// Turns redundant-audio packets (`RedundantAudio`, RFC 2198) back into one plain Opus packet per
/// frame, in order, for receivers that take packets as they come rather than through a jitter
/// buffer (the server's recorder, streamer and captioner): a frame whose own packet was lost is
/// handed over from the first later packet that repeats it, just before that packet's own frame.
///
/// ```
///  seq 7 [6 5 | 7] after 4 ─▶ 5 (copy), 6 (copy), 7      seq 8 [7 6 | 8] ─▶ 8      plain 9 ─▶ 9
/// ```
/// A plain packet passes unchanged; a copy is only handed over for a frame newer than the last
/// one handed over (never twice, never before the first packet heard); a malformed payload is dropped.
///
/// Thread rules: one thread at a time (the member's receive thread).
public struct RedundancyUnpacker: Sendable {
    private var last: [UInt32: UInt16] = [:]
    /// Frames handed over from a copy (their own packet was lost), and malformed payloads dropped.
    public private(set) var repaired = 0
    public private(set) var malformed = 0

    public init() {}

    /// Calls `each` with the header and payload of every frame `h`/`payload` carries, oldest first.
    public mutating func unpack<E: Error>(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>,
                                          _ each: (RTPHeader, UnsafeBufferPointer<UInt8>) throws(E) -> Void) throws(E) {
        let previous = last[h.ssrc]
        if previous.map({ SequenceNumber.isNewer(h.sequenceNumber, than: $0) }) ?? true { last[h.ssrc] = h.sequenceNumber }
        guard h.payloadType == RedundantAudio.payloadType else { return try each(h, payload) }
        guard let red = RedundantAudio.Layout(parsing: UnsafeRawBufferPointer(payload)), red.primaryPayloadType == RTPPacket.opusPayloadType else {
            malformed += 1
            return
        }
        if let previous {
            for j in 0..<red.count where red[j].payloadType == RTPPacket.opusPayloadType {
                let seq = red.sequenceNumber(ofBlock: j, inPacket: h.sequenceNumber)
                guard SequenceNumber.isNewer(seq, than: previous) else { continue }
                var copy = h
                copy.payloadType = RTPPacket.opusPayloadType
                copy.sequenceNumber = seq
                copy.timestamp = h.timestamp &- red[j].timestampOffset
                repaired += 1
                try each(copy, UnsafeBufferPointer(rebasing: payload[red[j].range]))
            }
        }
        var plain = h
        plain.payloadType = RTPPacket.opusPayloadType
        try each(plain, UnsafeBufferPointer(rebasing: payload[red.primary]))
    }
}
