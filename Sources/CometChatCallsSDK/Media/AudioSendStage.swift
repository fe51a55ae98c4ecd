import CallsAudio
import CallsCore
import Foundation

/// The audio send path between capture and protection, as one stage with a small contract: a
/// captured frame in, one RTP packet out — Opus, with the previous frames repeated (RFC 2198)
/// when asked, and the RFC 6464 level — ready for SRTP. It owns what belongs to the stream: the
/// encoder and the settings that follow the receivers (expected loss, in-band FEC only while
/// nothing is repeated, the bitrate lowered as copies are added), the sequence number and
/// timestamp, and the history of frames RED repeats.
///
/// ```
///  tune(loss, distance) ─▶ advance() ─▶ [restart() on a new relay] ─▶ packetize(pcm) ─▶ SRTP ─▶ transport ─▶ sent()
/// ```
/// Thread rules: one owner (the capture thread); not shared.
final class AudioSendStage {
    private let encoder: OpusEncoder
    private let baseBitrate: Int
    private let frameSamples: Int
    private let history = RedundancyHistory()
    private let primary = UnsafeMutableRawBufferPointer.allocate(byteCount: RedundantAudio.maxBlockBytes, alignment: 8)
    /// Opus CPU time on this thread, summed (the engine reports it).
    private(set) var encodeCPUNanoseconds: UInt64 = 0
    /// The next packet's sequence number, and the current frame's timestamp.
    private(set) var sequence: UInt16
    private(set) var timestamp: UInt32
    private var appliedLoss: Int32 = 5
    private var fecOn = true
    private var appliedBitrate: Int

    init(encoder: OpusEncoder, baseBitrate: Int, frameSamples: Int, sequence: UInt16 = .random(in: 0...UInt16.max),
         timestamp: UInt32 = .random(in: 0...UInt32.max)) {
        self.encoder = encoder
        self.baseBitrate = baseBitrate
        self.frameSamples = frameSamples
        self.sequence = sequence
        self.timestamp = timestamp
        appliedBitrate = baseBitrate
    }

    deinit { primary.deallocate() }

    /// Follows the receivers: Opus' expected loss, and `distance` repeated frames — whole
    /// copies replace in-band FEC (a coarse copy of one frame that takes bits from this one),
    /// and the bitrate drops as copies are added (`RedundancyPolicy.bitrate`).
    func tune(expectedLossPercent loss: Int32, distance: Int) {
        if loss != appliedLoss { encoder.setExpectedLoss(percent: loss); appliedLoss = loss }
        if (distance == 0) != fecOn { fecOn = distance == 0; encoder.setFEC(fecOn) }
        let bitrate = RedundancyPolicy.bitrate(base: baseBitrate, distance: distance)
        if bitrate != appliedBitrate { encoder.setBitrate(Int32(bitrate)); appliedBitrate = bitrate }
    }

    /// The next frame's time: every captured frame moves it, sent or not (a muted stretch keeps
    /// the clock).
    func advance() { timestamp &+= UInt32(frameSamples) }

    /// A new stream (a new relay): the encoder and the history start afresh.
    func restart() {
        encoder.reset()
        history.reset()
    }

    /// Encodes `pcm` into `packet` as RTP for `ssrc` with `level`, repeating up to `distance`
    /// previous frames when they were sent in a row. Returns the RTP length and the payload
    /// bytes (Opus, with any copies); nil when the frame cannot go (the encoder failed, or the
    /// copies did not fit) — it is dropped and the sequence number stays.
    func packetize(_ pcm: UnsafeBufferPointer<Int16>, level: RTPPacket.AudioLevel, ssrc: UInt32, distance: Int,
                   into packet: UnsafeMutableRawBufferPointer) -> (length: Int, payload: Int)? {
        let cpu = threadCPUNanoseconds()
        let encoding = try? encoder.encode(pcm, into: primary.bindMemory(to: UInt8.self))
        encodeCPUNanoseconds &+= threadCPUNanoseconds() &- cpu
        guard let encoded = encoding else { return nil }
        let frame = UnsafeRawBufferPointer(rebasing: primary[0..<encoded])
        let redundant = distance > 0 && history.available(sequence: sequence, timestamp: timestamp, distance: distance) > 0
        let h = RTPPacket.writeHeader(into: packet, payloadType: redundant ? RedundantAudio.payloadType : RTPPacket.opusPayloadType,
                                      sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc, audioLevel: level)
        let body = UnsafeMutableRawBufferPointer(rebasing: packet[h...])
        var n = encoded
        if redundant {
            guard let written = history.payload(into: body, payloadType: RTPPacket.opusPayloadType, primary: frame, sequence: sequence,
                                                timestamp: timestamp, distance: distance) else { return nil }
            n = written.bytes
        } else {
            body.copyMemory(from: frame)
        }
        history.remember(frame, sequence: sequence, timestamp: timestamp)
        return (h + n, n)
    }

    /// The packet went to the transport (or was handed to it and failed there): the next one
    /// gets the next sequence number.
    func sent() { sequence &+= 1 }
}

/// When the client binds its media socket and when it says UDP looks blocked: binds every 10
/// frames until the relay acknowledges, then every 5 s (NAT keep-alive); a binding with no
/// acknowledgement `blockedAfterMs` after it began is reported once (each binding — a rejoin's
/// new relay — is judged on its own). A value the capture thread owns; time is the caller's.
struct BindingWatch {
    let frameMs: Int
    let blockedAfterMs: Int
    private var frames = 0
    /// The binding whose silence was reported.
    private var reportedFor: UInt64 = 0

    init(frameMs: Int, blockedAfterMs: Int) {
        self.frameMs = frameMs
        self.blockedAfterMs = blockedAfterMs
    }

    /// One captured frame: whether to send a bind now, and whether to report UDP blocked.
    mutating func frame(bound: Bool, bindingSince since: UInt64, now: UInt64) -> (bind: Bool, blocked: Bool) {
        frames += 1
        let every = bound ? max(1, 5000 / frameMs) : 10
        var blocked = false
        if reportedFor != since, !bound, now &- since > UInt64(blockedAfterMs) * 1_000_000 {
            reportedFor = since
            blocked = true
        }
        return (frames % every == 0, blocked)
    }
}
