import CAVFormat
import CallsCore
import Foundation

/// One participant's VP8 video as it came, frame by frame, in an IVF file written by
/// libavformat's `ivf` muxer, the first frame a keyframe (earlier frames cannot be decoded and
/// are skipped). Frames are timed by the sender's capture clock (their RTP timestamps), placed
/// on the recording's clock by the least-delayed frame so far (arrival − capture time at its
/// smallest), so the network's jitter does not make the video stutter; where capture time and
/// arrival part by more than half a second (the camera paused, the sender restarted its clock)
/// the track follows arrival again. Without RTP timestamps, arrival times. `WebMMuxer` puts it
/// beside the participant's audio when the recording stops. Owns its libavformat context
/// (closed by `finish`, or deinit).
///
/// Thread rules: one thread at a time (the recorder's lock).
package final class VP8TrackWriter {
    package let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var stream: UnsafeMutablePointer<AVStream>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Arrival of the first frame written (ms on the recording's clock).
    package private(set) var firstMs: Int64?
    /// The last frame's time from the first (ms).
    package private(set) var lastMs: Int64 = -1
    package private(set) var frames = 0
    private var flushedMs: Int64 = 0
    /// The capture clock: the last RTP timestamp, its time unwrapped (90 kHz ticks from the
    /// first frame), and arrival − capture time at its smallest so far (ms).
    private var lastRTP: UInt32?
    private var captureTicks: Int64 = 0
    private var base: Int64 = 0
    /// Capture time and arrival may part by this much before the track follows arrival again.
    static let reanchorMs: Int64 = 500

    package init(path: String) {
        self.path = path
    }

    deinit { try? finish() }

    /// Whether a keyframe has started the track.
    package var started: Bool { context != nil }

    /// Writes one whole VP8 frame that arrived at `atMs` (with its RTP timestamp when it came by
    /// RTP); frames before the first keyframe are dropped (returns false: ask the sender for a
    /// keyframe).
    @discardableResult
    package func append(_ frame: [UInt8], isKeyframe: Bool, atMs: Int64, rtpTimestamp: UInt32? = nil) throws(RecordingError) -> Bool {
        if context == nil {
            guard isKeyframe, let (width, height) = Self.keyframeSize(frame) else { return false }
            try open(width: width, height: height)
            firstMs = atMs
            // (Where the track starts, beside it: a crash-cut recording's WebM is made from both.)
            let mark = path + ".start"
            guard FileManager.default.createFile(atPath: mark, contents: Data("\(atMs)\n".utf8), attributes: [.posixPermissions: 0o600]) else {
                throw .cannotCreate(path: mark, errno: errno)
            }
        }
        guard let context, let stream, let packet else { throw .finished }
        // (Timestamps must grow: two frames in one millisecond are a millisecond apart.)
        let pts = max(time(arrivalMs: atMs - (firstMs ?? atMs), rtp: rtpTimestamp), lastMs + 1)
        lastMs = pts
        let rc = frame.withUnsafeBufferPointer { b -> Int32 in
            guard av_new_packet(packet, Int32(b.count)) == 0, let data = packet.pointee.data, let base = b.baseAddress else { return -1 }
            data.update(from: base, count: b.count)
            packet.pointee.pts = pts
            packet.pointee.dts = pts
            packet.pointee.stream_index = stream.pointee.index
            if isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
            defer { av_packet_unref(packet) }
            return av_write_frame(context, packet)
        }
        guard rc >= 0 else { throw .writeFailed(path: path, errno: AVFormatError.errno(rc)) }
        frames += 1
        // On disk at least every second, as the audio's pages are (a crash keeps what came).
        if pts - flushedMs >= 1000, let pb = context.pointee.pb {
            avio_flush(pb)
            flushedMs = pts
            if pb.pointee.error < 0 { throw .writeFailed(path: path, errno: AVFormatError.errno(pb.pointee.error)) }
        }
        return true
    }

    /// A frame's time from the track's start (ms): its capture time placed by the least-delayed
    /// frame so far, or its arrival when the two have parted (or there is no RTP timestamp).
    private func time(arrivalMs: Int64, rtp: UInt32?) -> Int64 {
        guard let rtp else { return arrivalMs }
        if let last = lastRTP { captureTicks += Int64(Int32(bitPattern: rtp &- last)) }
        lastRTP = rtp
        let captureMs = captureTicks * 1000 / Int64(VP8Payload.clockRate)
        let placed = base + captureMs
        if frames > 0, abs(arrivalMs - placed) <= Self.reanchorMs {
            base = min(base, arrivalMs - captureMs)
            return base + captureMs
        }
        base = arrivalMs - captureMs  // the first frame, or capture time and arrival parted
        return arrivalMs
    }

    /// Where the track at `path` started (ms on the recording's clock), from the mark written
    /// beside it; nil without one.
    package static func startMs(of path: String) -> Int64? {
        (try? String(contentsOfFile: path + ".start", encoding: .utf8)).flatMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Ends the file (its trailer written, the context closed). Idempotent.
    package func finish() throws(RecordingError) {
        guard let context else { return }
        self.context = nil
        let rc = av_write_trailer(context)
        avio_closep(&context.pointee.pb)
        avformat_free_context(context)
        av_packet_free(&packet)
        stream = nil
        if rc < 0 { throw .library("libavformat: cannot finish \(path): \(AVFormatError.message(rc))") }
    }

    private func open(width: Int, height: Int) throws(RecordingError) {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&ctx, nil, "ivf", path) >= 0, let ctx else { throw .library("libavformat: no ivf muxer") }
        guard let s = avformat_new_stream(ctx, nil) else {
            avformat_free_context(ctx)
            throw .library("libavformat: cannot add a stream")
        }
        s.pointee.codecpar.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        s.pointee.codecpar.pointee.codec_id = AV_CODEC_ID_VP8
        s.pointee.codecpar.pointee.width = Int32(width)
        s.pointee.codecpar.pointee.height = Int32(height)
        s.pointee.time_base = callroom_rational(1, 1000)
        let opened = avio_open(&ctx.pointee.pb, path, AVIO_FLAG_WRITE)
        guard opened >= 0 else {
            avformat_free_context(ctx)
            throw .cannotCreate(path: path, errno: -opened)
        }
        guard avformat_write_header(ctx, nil) >= 0 else {
            avio_closep(&ctx.pointee.pb)
            avformat_free_context(ctx)
            throw .library("libavformat: cannot start \(path)")
        }
        _ = chmod(path, 0o600)
        context = ctx
        stream = s
        packet = av_packet_alloc()
    }

    /// A VP8 keyframe's picture size (RFC 6386 §9.1: a 3-byte frame tag, the start code
    /// 9d 01 2a, then 14-bit width and height, little-endian).
    package static func keyframeSize(_ f: [UInt8]) -> (Int, Int)? {
        guard f.count >= 10, f[0] & 0x01 == 0, f[3] == 0x9d, f[4] == 0x01, f[5] == 0x2a else { return nil }
        let w = Int(UInt16(f[6]) | UInt16(f[7]) << 8) & 0x3fff, h = Int(UInt16(f[8]) | UInt16(f[9]) << 8) & 0x3fff
        return w > 0 && h > 0 ? (w, h) : nil
    }
}

/// libavformat's error codes in words, and as the errno a write failure reports.
enum AVFormatError {
    /// `ENOSPC` for a full disk (`RecordingError.isDiskFull`), else `EIO`.
    static func errno(_ code: Int32) -> Int32 { code == -ENOSPC ? ENOSPC : EIO }

    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        _ = callroom_av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
