import CallsCore
import COgg
import COpus
#if canImport(Glibc)
import Glibc
#endif

/// One participant's audio as an Ogg Opus file (RFC 7845), written from the Opus packets as
/// they arrived in RTP — never decoded or re-encoded.
///
/// - Time: granule positions follow the RTP timestamps, and a gap is filled so the file keeps the
///   call's timeline: up to 60 ms (loss) with zero-length Opus frames (a TOC byte alone, RFC 6716
///   §3.2.1), which decoders conceal as a receiver would; longer (DTX, a muted stretch) with
///   CELT frames whose silence flag is set, which decode to digital silence.
/// - Durability: pages are written with write(2), no user-space buffer, and flushed at least every
///   second of audio: a `kill -9` leaves a file playable up to its last second, and
///   `OggOpusFile.finalise` (at restart) marks its last page as the end.
/// - One packet is held back so `finish` can mark the true last packet as the end of stream.
///
/// Thread rules: one thread at a time (the recorder's); not thread-safe by itself.
public final class OggOpusWriter {
    public let path: String
    /// Encoder delay the file tells players to skip (libopus's look-ahead at 48 kHz).
    public static let preSkip = 312
    /// A gap longer than this (10 minutes) is not filled: the timeline restarts after it.
    public static let maxGapSamples = 48_000 * 600

    private var fd: Int32
    private var stream = ogg_stream_state()
    private var packetNo: Int64 = 0
    /// Samples submitted so far (the granule position of the last submitted packet).
    private var granule: Int64 = 0
    private var flushedAt: Int64 = 0
    private var nextTimestamp: UInt32?
    private var held: (bytes: [UInt8], samples: Int)?
    private var isFinished = false
    public private(set) var bytesWritten = 0
    /// Packets that were not Opus (skipped) and late or duplicate ones (dropped).
    public private(set) var skippedPackets = 0

    /// Creates the file (0600, failing if it exists) and writes the two header pages.
    public init(path: String, serial: Int32, tags: [String: String] = [:]) throws(RecordingError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotCreate(path: path, errno: errno) }
        guard ogg_stream_init(&stream, serial) == 0 else {
            close(fd)
            throw .library("ogg_stream_init failed")
        }
        do {
            try submit(Self.head(), samples: 0, bos: true)
            try flush()
            try submit(Self.tags(tags), samples: 0)
            try flush()
        } catch {
            ogg_stream_clear(&stream)
            close(fd)
            throw error
        }
    }

    deinit {
        if !isFinished { try? finish() }
        ogg_stream_clear(&stream)
    }

    /// Samples of audio in the file so far (48 kHz), the held packet included.
    public var durationSamples: Int64 { max(0, granule + Int64(held?.samples ?? 0)) }

    /// Adds one Opus packet that carried RTP timestamp `timestamp` (48 kHz clock). A packet
    /// older than the last one is dropped; a gap before it is filled with silence.
    public func append(_ packet: UnsafeBufferPointer<UInt8>, timestamp: UInt32) throws(RecordingError) {
        guard !isFinished else { throw .finished }
        guard let base = packet.baseAddress, packet.count > 0 else { skippedPackets += 1; return }
        let samples = Int(opus_packet_get_nb_samples(base, Int32(packet.count), 48_000))
        guard samples > 0 else { skippedPackets += 1; return }
        if let expected = nextTimestamp {
            let gap = Int(Int32(bitPattern: timestamp &- expected))
            if gap < 0 { skippedPackets += 1; return }  // late or duplicate
            if gap > 0 && gap <= Self.maxGapSamples { try fillSilence(gap) }
        }
        nextTimestamp = timestamp &+ UInt32(samples)
        try push(Array(packet), samples: samples)
    }

    public func append(_ packet: [UInt8], timestamp: UInt32) throws(RecordingError) {
        try packet.withUnsafeBufferPointer { p throws(RecordingError) in try append(p, timestamp: timestamp) }
    }

    /// Marks the last packet as the end of the stream, writes every page and closes the file
    /// (synced to disk).
    public func finish() throws(RecordingError) {
        guard !isFinished else { return }
        isFinished = true
        defer { close(fd) }
        // A file needs a packet to carry the end: 2.5 ms of silence when nothing was said.
        let last = held ?? (Self.fillerFrame(120, conceal: false), 120)
        held = nil
        try submit(last.bytes, samples: last.samples, eos: true)
        try flush()
        fsync(fd)
    }

    // MARK: Pages

    /// CELT frames (fullband, mono, code 0) of 20, 10, 5 or 2.5 ms: a zero-length one (the
    /// decoder conceals it) or one with the silence flag set (`0xFF 0xFE`: digital silence).
    static func fillerFrame(_ samples: Int, conceal: Bool) -> [UInt8] {
        conceal ? [silenceTOC(samples)] : [silenceTOC(samples), 0xFF, 0xFE]
    }

    static func silenceTOC(_ samples: Int) -> UInt8 {
        switch samples {
        case 960: return 31 << 3
        case 480: return 30 << 3
        case 240: return 29 << 3
        default: return 28 << 3
        }
    }

    private func fillSilence(_ gap: Int) throws(RecordingError) {
        var left = gap
        let conceal = gap <= 2_880
        for size in [960, 480, 240, 120] {
            while left >= size {
                try push(Self.fillerFrame(size, conceal: conceal), samples: size)
                left -= size
            }
        }
    }

    /// Holds `bytes` back and submits the packet held before it.
    private func push(_ bytes: [UInt8], samples: Int) throws(RecordingError) {
        if let h = held { try submit(h.bytes, samples: h.samples) }
        held = (bytes, samples)
    }

    private func submit(_ bytes: [UInt8], samples: Int, bos: Bool = false, eos: Bool = false) throws(RecordingError) {
        granule += Int64(samples)
        var copy = bytes
        let status = copy.withUnsafeMutableBufferPointer { b -> Int32 in
            var op = ogg_packet()
            op.packet = b.baseAddress
            op.bytes = b.count
            op.b_o_s = bos ? 1 : 0
            op.e_o_s = eos ? 1 : 0
            // Header packets carry granule 0; audio packets the samples up to their end.
            op.granulepos = samples == 0 && !eos ? 0 : granule
            op.packetno = packetNo
            return ogg_stream_packetin(&stream, &op)
        }
        packetNo += 1
        guard status == 0 else { throw .library("ogg_stream_packetin failed") }
        var page = ogg_page()
        while ogg_stream_pageout(&stream, &page) != 0 { try write(page) }
        if granule - flushedAt >= 48_000 { try flush() }
    }

    private func flush() throws(RecordingError) {
        var page = ogg_page()
        while ogg_stream_flush(&stream, &page) != 0 { try write(page) }
        flushedAt = granule
    }

    private func write(_ page: ogg_page) throws(RecordingError) {
        if let e = writeAll(fd, UnsafeRawBufferPointer(start: page.header, count: page.header_len)) { throw .writeFailed(path: path, errno: e) }
        if let e = writeAll(fd, UnsafeRawBufferPointer(start: page.body, count: page.body_len)) { throw .writeFailed(path: path, errno: e) }
        bytesWritten += page.header_len + page.body_len
    }

    // MARK: Headers (RFC 7845 §5)

    static func head() -> [UInt8] {
        var h = Array("OpusHead".utf8)
        h.append(1)  // version
        h.append(1)  // channels
        h += [UInt8(preSkip & 0xFF), UInt8(preSkip >> 8)]
        h += [0x80, 0xBB, 0x00, 0x00]  // input sample rate 48000, little-endian
        h += [0, 0]  // output gain
        h.append(0)  // mapping family 0: mono or stereo, no table
        return h
    }

    static func tags(_ tags: [String: String]) -> [UInt8] {
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 24) & 0xFF)] }
        let vendor = Array("CallRoom \(CallRoomVersion.string)".utf8)
        var t = Array("OpusTags".utf8) + le32(vendor.count) + vendor + le32(tags.count)
        for (k, v) in tags.sorted(by: { $0.key < $1.key }) {
            let c = Array("\(k.uppercased())=\(v)".utf8)
            t += le32(c.count) + c
        }
        return t
    }
}
