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
    private let fd: Int32
    private let encoder: OggOpusEncoder
    private var closed = false

    /// Creates the file (0600, failing if it exists); `bitrate` in bits a second.
    public init(path: String, bitrate: Int32 = 32_000, voice: Bool = true, tags: [String: String] = [:]) throws(RecordingError) {
        self.path = path
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotCreate(path: path, errno: errno) }
        self.fd = fd
        do { encoder = try OggOpusEncoder(bitrate: bitrate, voice: voice, muxingDelayMs: 1000, tags: tags) { writeAll(fd, $0) } } catch {
            close(fd)
            throw error
        }
    }

    deinit {
        try? finish()
    }

    public var bytesWritten: Int { encoder.bytes }

    /// Encodes mono 48 kHz samples.
    public func write(_ pcm: UnsafeBufferPointer<Int16>) throws(RecordingError) {
        guard !closed else { throw .finished }
        try encoder.write(pcm, name: path)
    }

    /// Encodes what is buffered, writes the last page (end of stream) and closes the file.
    public func finish() throws(RecordingError) {
        guard !closed else { return }
        closed = true
        defer {
            fsync(fd)
            close(fd)
        }
        try encoder.finish(name: path)
    }
}
