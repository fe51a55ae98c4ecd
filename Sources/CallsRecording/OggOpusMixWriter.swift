import COpusEnc
#if canImport(Glibc)
import Glibc
#endif

/// The room's mixed audio as an Ogg Opus file, encoded by libopusenc (48 kHz mono PCM in).
/// Pages reach the disk through write(2) at least every second (libopusenc's muxing delay), so
/// a `kill -9` leaves the file playable up to its last second (`OggOpusFile.finalise` marks the
/// end at restart).
///
/// Thread rules: one thread at a time (the recorder's mixing thread).
public final class OggOpusMixWriter {
    public let path: String
    private let sink: FileSink
    private var encoder: OpaquePointer?

    /// Where libopusenc's pages go (its write callback's user data), and the first error.
    final class FileSink {
        let fd: Int32
        var bytes = 0
        var error: Int32?
        init(fd: Int32) { self.fd = fd }
    }

    /// Creates the file (0600, failing if it exists); `bitrate` in bits a second.
    public init(path: String, bitrate: Int32 = 32_000, tags: [String: String] = [:]) throws(RecordingError) {
        self.path = path
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotCreate(path: path, errno: errno) }
        sink = FileSink(fd: fd)
        guard let comments = ope_comments_create() else {
            close(fd)
            throw .library("ope_comments_create failed")
        }
        defer { ope_comments_destroy(comments) }
        for (k, v) in tags.sorted(by: { $0.key < $1.key }) { ope_comments_add(comments, k.uppercased(), v) }
        var callbacks = OpusEncCallbacks(
            write: { user, ptr, len in
                guard let user, let ptr else { return 1 }
                let s = Unmanaged<FileSink>.fromOpaque(user).takeUnretainedValue()
                if let e = writeAll(s.fd, UnsafeRawBufferPointer(start: ptr, count: Int(len))) { s.error = s.error ?? e; return 1 }
                s.bytes += Int(len)
                return 0
            },
            close: { _ in 0 })
        var err: Int32 = 0
        guard let enc = ope_encoder_create_callbacks(&callbacks, Unmanaged.passUnretained(sink).toOpaque(), comments, 48_000, 1, 0, &err) else {
            close(fd)
            throw .library("ope_encoder_create_callbacks: \(String(cString: ope_strerror(err)))")
        }
        encoder = enc
        _ = callroom_ope_set_bitrate(enc, bitrate)
        _ = callroom_ope_set_signal_voice(enc)
        // Encode within 100 ms of the audio (libopusenc waits 2 s by default to choose frame
        // sizes) and write a page at least every second.
        _ = callroom_ope_set_decision_delay(enc, 4_800)
        _ = callroom_ope_set_muxing_delay(enc, 48_000)
    }

    deinit {
        try? finish()
    }

    public var bytesWritten: Int { sink.bytes }

    /// Encodes mono 48 kHz samples.
    public func write(_ pcm: UnsafeBufferPointer<Int16>) throws(RecordingError) {
        guard let enc = encoder else { throw .finished }
        guard let base = pcm.baseAddress, pcm.count > 0 else { return }
        let r = ope_encoder_write(enc, base, Int32(pcm.count))
        if let e = sink.error { throw .writeFailed(path: path, errno: e) }
        guard r == OPE_OK else { throw .library("ope_encoder_write: \(String(cString: ope_strerror(r)))") }
    }

    /// Encodes what is buffered, writes the last page (end of stream) and closes the file.
    public func finish() throws(RecordingError) {
        guard let enc = encoder else { return }
        encoder = nil
        let r = ope_encoder_drain(enc)
        ope_encoder_destroy(enc)
        fsync(sink.fd)
        close(sink.fd)
        if let e = sink.error { throw .writeFailed(path: path, errno: e) }
        guard r == OPE_OK else { throw .library("ope_encoder_drain: \(String(cString: ope_strerror(r)))") }
    }
}
