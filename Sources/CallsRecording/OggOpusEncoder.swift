import COpusEnc
#if canImport(Glibc)
import Glibc
#endif

/// libopusenc's Ogg Opus encoder (48 kHz mono PCM in, Ogg pages out to `output`), shared by
/// the mixed recording (pages to a file) and the live stream (pages to Icecast). Owns the
/// encoder; pages come out through `output` from inside `write`/`finish`.
///
/// Thread rules: one thread at a time.
public final class OggOpusEncoder {
    /// Where pages go: returns an errno to stop (a failed write), nil when taken.
    public typealias Output = (UnsafeRawBufferPointer) -> Int32?
    private final class Sink {
        let output: Output
        var error: Int32?
        var bytes = 0
        init(_ output: @escaping Output) { self.output = output }
    }
    private let sink: Sink
    private var encoder: OpaquePointer?

    /// `bitrate` in bits a second; a page is out at least every `muxingDelayMs` (libopusenc
    /// waits up to 1 s by default), and audio is encoded within 100 ms of coming in. `voice`
    /// tells Opus the signal is speech (it leans to SILK); a second encoding of decoded Opus is
    /// better left to choose (measured: docs/benchmarks.md).
    public init(bitrate: Int32 = 32_000, voice: Bool = true, muxingDelayMs: Int32 = 1000, tags: [String: String] = [:],
                output: @escaping Output) throws(RecordingError) {
        sink = Sink(output)
        guard let comments = ope_comments_create() else { throw .library("ope_comments_create failed") }
        defer { ope_comments_destroy(comments) }
        for (k, v) in tags.sorted(by: { $0.key < $1.key }) { ope_comments_add(comments, k.uppercased(), v) }
        var callbacks = OpusEncCallbacks(
            write: { user, ptr, len in
                guard let user, let ptr else { return 1 }
                let s = Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue()
                guard s.error == nil else { return 1 }
                if let e = s.output(UnsafeRawBufferPointer(start: ptr, count: Int(len))) { s.error = e; return 1 }
                s.bytes += Int(len)
                return 0
            },
            close: { _ in 0 })
        var err: Int32 = 0
        guard let enc = ope_encoder_create_callbacks(&callbacks, Unmanaged.passUnretained(sink).toOpaque(), comments, 48_000, 1, 0, &err) else {
            throw .library("ope_encoder_create_callbacks: \(String(cString: ope_strerror(err)))")
        }
        encoder = enc
        _ = callroom_ope_set_bitrate(enc, bitrate)
        if voice { _ = callroom_ope_set_signal_voice(enc) }
        _ = callroom_ope_set_decision_delay(enc, 4_800)
        _ = callroom_ope_set_muxing_delay(enc, muxingDelayMs * 48)
    }

    deinit {
        if let enc = encoder { ope_encoder_destroy(enc) }
    }

    /// Bytes of pages handed to `output` so far.
    public var bytes: Int { sink.bytes }

    /// Encodes mono 48 kHz samples. Throws `.writeFailed` with the output's errno.
    public func write(_ pcm: UnsafeBufferPointer<Int16>, name: String) throws(RecordingError) {
        guard let enc = encoder else { throw .finished }
        guard let base = pcm.baseAddress, pcm.count > 0 else { return }
        let r = ope_encoder_write(enc, base, Int32(pcm.count))
        if let e = sink.error { throw .writeFailed(path: name, errno: e) }
        guard r == OPE_OK else { throw .library("ope_encoder_write: \(String(cString: ope_strerror(r)))") }
    }

    /// Encodes what is buffered and writes the last page (end of stream). Idempotent.
    public func finish(name: String) throws(RecordingError) {
        guard let enc = encoder else { return }
        encoder = nil
        let r = ope_encoder_drain(enc)
        ope_encoder_destroy(enc)
        if let e = sink.error { throw .writeFailed(path: name, errno: e) }
        guard r == OPE_OK else { throw .library("ope_encoder_drain: \(String(cString: ope_strerror(r)))") }
    }
}
