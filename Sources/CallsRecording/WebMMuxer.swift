import CAVFormat
import Foundation

/// A participant's recording with video: their Ogg Opus audio and their VP8 track (IVF, from
/// `VP8TrackWriter`) put together into one WebM file by libavformat, packets copied as they are
/// (nothing re-encoded), interleaved by time. The two tracks are placed on the recording's
/// clock: the audio from its first packet (`START_OFFSET_MS`), the video from its first
/// keyframe's arrival, so their offset in the file is the one they had in the call. A
/// participant who sent video but never audio (muted throughout) gets a WebM of the video alone.
///
/// Thread rules: any thread (each call owns its libavformat contexts).
package enum WebMMuxer {
    /// A file to put into the WebM and when its first packet was, on the recording's clock (ms).
    package struct Track {
        package var path: String
        package var startMs: Int64
        package init(_ path: String, startMs: Int64) {
            self.path = path
            self.startMs = startMs
        }
    }

    /// Writes `output` from `audio` (nil: none) and `video`, both placed on the recording's
    /// clock. A failure leaves no `output` behind.
    package static func mux(audio: Track?, video: Track, into output: String) throws(RecordingError) {
        do throws(RecordingError) {
            try write(tracks: (audio.map { [$0] } ?? []) + [video], into: output)
            _ = chmod(output, 0o600)
        } catch {
            try? FileManager.default.removeItem(atPath: output)
            throw error
        }
    }

    /// A media file's length as libavformat reads it (ms), or nil.
    package static func durationMs(_ path: String) -> Int64? {
        var context: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&context, path, nil, nil) >= 0, let c = context else { return nil }
        defer { avformat_close_input(&context) }
        guard avformat_find_stream_info(c, nil) >= 0, c.pointee.duration > 0 else { return nil }
        return c.pointee.duration / Int64(AV_TIME_BASE / 1000)
    }

    /// One input file and the packet read ahead of it.
    private final class Input {
        var context: UnsafeMutablePointer<AVFormatContext>?
        let path: String
        let offsetMs: Int64
        var firstPTS: Int64?
        var packet = av_packet_alloc()
        var hasPacket = false
        var timeBase = callroom_rational(1, 1000)
        var outputIndex: Int32 = 0

        init(path: String, offsetMs: Int64) throws(RecordingError) {
            self.path = path
            self.offsetMs = offsetMs
            guard avformat_open_input(&context, path, nil, nil) >= 0, let context else { throw .cannotRead(path: path, errno: ENOENT) }
            guard avformat_find_stream_info(context, nil) >= 0, context.pointee.nb_streams >= 1, let stream = context.pointee.streams[0] else {
                throw .library("libavformat: no stream in \(path)")
            }
            timeBase = stream.pointee.time_base
        }

        var stream: UnsafeMutablePointer<AVStream>? { context?.pointee.streams[0] }

        /// Reads the next packet of its first stream; false at the end.
        func advance() -> Bool {
            guard let context, let packet else { return false }
            while true {
                if hasPacket { av_packet_unref(packet); hasPacket = false }
                guard av_read_frame(context, packet) >= 0 else { return false }
                if packet.pointee.stream_index == 0 {
                    hasPacket = true
                    if firstPTS == nil { firstPTS = pts }
                    return true
                }
            }
        }

        /// The read-ahead packet's timestamp (its dts where it has no pts).
        private var pts: Int64 {
            guard let packet else { return 0 }
            return packet.pointee.pts == Int64.min ? packet.pointee.dts : packet.pointee.pts
        }

        /// The read-ahead packet's time on the output's clock (ms), counted from the input's first packet.
        var ms: Int64 {
            guard packet != nil else { return .max }
            return av_rescale_q(pts - (firstPTS ?? pts), timeBase, callroom_rational(1, 1000)) + offsetMs
        }

        deinit {
            av_packet_free(&packet)
            avformat_close_input(&context)
        }
    }

    /// `tracks`: the audio first if there is one, the video last.
    private static func write(tracks: [Track], into output: String) throws(RecordingError) {
        // Whichever started first starts at 0.
        let origin = tracks.map(\.startMs).min() ?? 0
        var inputs: [Input] = []
        for t in tracks { inputs.append(try Input(path: t.path, offsetMs: t.startMs - origin)) }
        let videoIndex = inputs.count - 1
        var out: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&out, nil, "webm", output) >= 0, let out else { throw .library("libavformat: no webm muxer") }
        defer {
            if out.pointee.pb != nil { avio_closep(&out.pointee.pb) }
            avformat_free_context(out)
        }
        for (i, input) in inputs.enumerated() {
            guard let source = input.stream, let s = avformat_new_stream(out, nil),
                  avcodec_parameters_copy(s.pointee.codecpar, source.pointee.codecpar) >= 0 else {
                throw .library("libavformat: cannot copy the stream of \(input.path)")
            }
            s.pointee.codecpar.pointee.codec_tag = 0
            s.pointee.time_base = callroom_rational(1, 1000)
            input.outputIndex = Int32(i)
        }
        let opened = avio_open(&out.pointee.pb, output, AVIO_FLAG_WRITE)
        guard opened >= 0 else { throw .cannotCreate(path: output, errno: -opened) }
        guard avformat_write_header(out, nil) >= 0 else { throw .library("libavformat: cannot start \(output)") }
        for input in inputs { _ = input.advance() }
        var last = [Int64](repeating: -1, count: inputs.count)
        // Interleaved by time: the earlier of the two read-ahead packets goes first.
        while let next = inputs.enumerated().filter({ $0.element.hasPacket }).min(by: { $0.element.ms < $1.element.ms }) {
            let (i, input) = next
            guard let packet = input.packet else { break }
            // (Video frames strictly one after another; audio packets may share a millisecond.)
            let ms = max(input.ms, last[i] + (i == videoIndex ? 1 : 0))
            last[i] = ms
            packet.pointee.pts = ms
            packet.pointee.dts = ms
            packet.pointee.duration = av_rescale_q(packet.pointee.duration, input.timeBase, callroom_rational(1, 1000))
            packet.pointee.stream_index = input.outputIndex
            packet.pointee.pos = -1
            let rc = av_interleaved_write_frame(out, packet)
            input.hasPacket = false  // (the muxer took the packet's data)
            guard rc >= 0 else { throw .writeFailed(path: output, errno: AVFormatError.errno(rc)) }
            _ = input.advance()
        }
        guard av_write_trailer(out) >= 0 else { throw .library("libavformat: cannot finish \(output)") }
    }
}
