import COpus

/// An Opus encoder for 48 kHz mono VoIP, owning its state.
/// Thread rules: one thread at a time (the capture thread).
public final class OpusEncoder {
    private let state: OpaquePointer
    public let frameSamples: Int

    /// - Parameters:
    ///   - frameMs: 10 or 20.
    ///   - bitrate: bits per second (Opus' VoIP sweet spot for wideband speech is 24–32 kb/s).
    ///   - fec: in-band forward error correction, tuned for `expectedLossPercent`.
    /// What the encoder is tuned for.
    public enum Profile: String, Sendable, CaseIterable {
        /// Speech (Opus VoIP application). The signal is left to the encoder's own voice/music
        /// analysis: on speech it picks the same SILK/hybrid modes as a forced voice hint (same
        /// PESQ, same cost); on a tone or music it picks CELT, which costs a quarter as much
        /// and keeps more of the sound (docs/benchmarks.md, "the signal hint").
        case voice
        /// Music and other full-band sound (Opus audio application).
        case music
        /// The lowest delay (Opus restricted-low-delay application: CELT only, 2.5 ms look-ahead
        /// instead of 6.5; no in-band FEC, which needs SILK).
        case lowDelay = "low-delay"

        /// The bitrate a session uses unless told otherwise (b/s): speech at 48 kb/s scores
        /// 4.2+ PESQ-WB through the whole pipeline (32 kb/s: 4.03; docs/benchmarks.md); music
        /// and CELT-only low delay get 64 kb/s.
        public var defaultBitrate: Int {
            switch self {
            case .voice: 48_000
            case .music, .lowDelay: 64_000
            }
        }
    }

    public init(frameMs: Int = 20, bitrate: Int32 = 32_000, complexity: Int32 = 9, fec: Bool = true,
                expectedLossPercent: Int32 = 5, profile: Profile = .voice) throws(AudioError) {
        guard frameMs == 10 || frameMs == 20 else { throw .codec("frame size must be 10 or 20 ms, not \(frameMs)") }
        var err: Int32 = 0
        let application: Int32
        switch profile {
        case .voice: application = OPUS_APPLICATION_VOIP
        case .music: application = OPUS_APPLICATION_AUDIO
        case .lowDelay: application = OPUS_APPLICATION_RESTRICTED_LOWDELAY
        }
        guard let s = opus_encoder_create(Int32(AudioFormat.sampleRate), 1, application, &err), err == OPUS_OK else {
            throw .codec("opus_encoder_create: \(String(cString: opus_strerror(err)))")
        }
        state = s
        frameSamples = AudioFormat.samples(ms: frameMs)
        callroom_opus_set_bitrate(s, bitrate)
        callroom_opus_set_complexity(s, complexity)
        callroom_opus_set_inband_fec(s, fec ? 1 : 0)
        callroom_opus_set_packet_loss_perc(s, expectedLossPercent)
    }

    deinit { opus_encoder_destroy(state) }

    /// Encodes one frame into `output`; returns the packet length. No allocation.
    public func encode(_ pcm: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<UInt8>) throws(AudioError) -> Int {
        guard let input = pcm.baseAddress, pcm.count >= frameSamples, let out = output.baseAddress else {
            throw .codec("frame of \(pcm.count) samples, expected \(frameSamples)")
        }
        let n = opus_encode(state, input, Int32(frameSamples), out, Int32(output.count))
        guard n > 0 else { throw .codec("opus_encode: \(String(cString: opus_strerror(n)))") }
        return Int(n)
    }

    /// Algorithmic delay in samples (look-ahead).
    public var lookahead: Int {
        var v: Int32 = 0
        callroom_opus_get_lookahead(state, &v)
        return Int(v)
    }

    /// Starts afresh, as if just created (settings kept): the next frame is coded as a stream's
    /// first, the way a decoder that starts with it expects.
    public func reset() { callroom_opus_encoder_reset(state) }

    /// Discontinuous transmission: near-empty packets in silence.
    public func setDTX(_ on: Bool) { callroom_opus_set_dtx(state, on ? 1 : 0) }

    /// Changes the bitrate (bits per second) from the next frame on.
    public func setBitrate(_ bitsPerSecond: Int32) { callroom_opus_set_bitrate(state, bitsPerSecond) }

    /// In-band forward error correction on or off (the loss percentage stays as set).
    public func setFEC(_ on: Bool) { callroom_opus_set_inband_fec(state, on ? 1 : 0) }

    /// Updates the loss percentage FEC is tuned for.
    public func setExpectedLoss(percent: Int32) { callroom_opus_set_packet_loss_perc(state, percent) }
}

/// An Opus decoder for 48 kHz mono, with loss concealment and in-band FEC recovery.
/// Thread rules: one thread at a time (the playback thread).
public final class OpusDecoder {
    private let state: OpaquePointer
    /// The longest Opus packet (120 ms at 48 kHz): what a decode may write.
    public static let maxPacketSamples = 5760

    public init() throws(AudioError) {
        var err: Int32 = 0
        guard let s = opus_decoder_create(Int32(AudioFormat.sampleRate), 1, &err), err == OPUS_OK else {
            throw .codec("opus_decoder_create: \(String(cString: opus_strerror(err)))")
        }
        state = s
    }

    deinit { opus_decoder_destroy(state) }

    /// Decodes `packet` into `pcm` (whose count is the frame size). Returns samples decoded.
    public func decode(_ packet: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>) -> Int {
        guard let out = pcm.baseAddress else { return 0 }
        return max(0, Int(opus_decode(state, packet.baseAddress, Int32(packet.count), out, Int32(pcm.count), 0)))
    }

    /// Forgets the stream so far: the next packet decodes as a stream's first (no overlap with
    /// sound from before a gap).
    public func reset() { callroom_opus_decoder_reset(state) }

    /// Conceals one lost frame (packet loss concealment).
    public func conceal(into pcm: UnsafeMutableBufferPointer<Int16>) -> Int {
        guard let out = pcm.baseAddress else { return 0 }
        return max(0, Int(opus_decode(state, nil, 0, out, Int32(pcm.count), 0)))
    }

    /// Recovers the frame before `nextPacket` from its in-band FEC data (falls back to PLC
    /// inside Opus when the packet carries none).
    public func recover(from nextPacket: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>) -> Int {
        guard let out = pcm.baseAddress else { return 0 }
        return max(0, Int(opus_decode(state, nextPacket.baseAddress, Int32(nextPacket.count), out, Int32(pcm.count), 1)))
    }
}
