import CallsAudio
import COgg
import Foundation

/// The mixed room recording, made after the call from the participants' files (the way
/// recording services composite): each `{pid}.opus` is decoded (libopus) from where it started
/// in the recording (its `START_OFFSET_MS` tag), the tracks are summed with a limiter (`Mixer`),
/// and the sum is encoded by libopusenc (`OggOpusMixWriter`). Doing it after the call keeps the
/// live cost of recording a room to writing packets, and mixes every packet the recorder got
/// rather than what a live jitter buffer would have played.
///
/// Stateless; safe from any thread (each call works on its own files).
public enum OggOpusMixdown {
    /// The tag `OggOpusWriter` files carry: where the track starts in the recording (ms).
    public static let offsetTag = "START_OFFSET_MS"
    /// The mix is a second encoding of speech that was Opus already. Measured against what a
    /// participant heard (scripts/bench-recording-pesq.sh, PESQ-WB): 32 kb/s with the voice
    /// hint cost 0.43, 64 kb/s with it 0.38; without the hint libopus keeps more of the first
    /// encoding: 96 kb/s was within 0.2 of 32 kb/s calls; with 48 kb/s speech (issue #18) it fell
    /// 0.16–0.31 behind, 128 kb/s 0.08–0.14 — what the mix uses (docs/benchmarks.md has the table).
    public static let bitrate: Int32 = 128_000

    /// Mixes `tracks` into a new file at `output`. Returns its length in seconds.
    @discardableResult
    public static func mix(_ tracks: [String], into output: String) throws(RecordingError) -> Double {
        var readers: [TrackReader] = []
        for path in tracks { readers.append(try TrackReader(path: path)) }
        let writer = try OggOpusMixWriter(path: output, bitrate: OggOpusMixdown.bitrate, voice: false, tags: ["title": "mix"])
        let mixer = Mixer(frameSamples: 960)
        var block = [Int16](repeating: 0, count: 960)
        var track = [Int16](repeating: 0, count: 960)
        var written = 0
        let total = readers.map(\.endSample).max() ?? 0
        while written < total {
            mixer.reset()
            for r in readers {
                track.withUnsafeMutableBufferPointer { r.read(960, at: written, into: $0) }
                track.withUnsafeBufferPointer { mixer.add($0, gain: 1) }
            }
            block.withUnsafeMutableBufferPointer { mixer.render(into: $0) }
            try block.withUnsafeBufferPointer { p throws(RecordingError) in try writer.write(p) }
            written += 960
        }
        try writer.finish()
        return Double(written) / 48_000
    }

    /// When a participant's file starts on the recording's clock (its `START_OFFSET_MS` tag), ms;
    /// nil when it is not an Ogg Opus file. Reads its first two packets only (the tags are on its
    /// second page), not the whole file.
    package static func startOffsetMs(_ path: String) -> Int64? {
        guard let head = packets(of: path, atMost: 2, maxBytes: maxHeaderBytes), head.count == 2, OggOpusFile.isOpusHead(head[0]) else { return nil }
        return Int64(offsetMs(tags: head[1]))
    }

    /// The first `atMost` packets of the Ogg file at `path` (of its first stream), reading no
    /// more than `maxBytes` of it; nil when it cannot be opened.
    static func packets(of path: String, atMost: Int, maxBytes: Int = .max) -> [[UInt8]]? {
        guard let reader = OggPacketReader(path: path, maxBytes: maxBytes) else { return nil }
        var out: [[UInt8]] = []
        while out.count < atMost, let p = reader.next() { out.append(p) }
        return out
    }

    /// Bytes read at most for a file's two header packets.
    static let maxHeaderBytes = 1 << 20

    /// The `START_OFFSET_MS` of an OpusTags packet (0 without one).
    static func offsetMs(tags packet: [UInt8]) -> Int {
        let tags = String(decoding: packet, as: UTF8.self)
        guard let r = tags.range(of: offsetTag + "=") else { return 0 }
        return Int(tags[r.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    /// One participant's file, read and decoded as the mix goes and placed at its offset (its
    /// length counted first, a pass that decodes nothing): a packet in memory at a time.
    final class TrackReader {
        private let packets: OggPacketReader
        private var ended = false
        private let decoder: OpusDecoder
        /// The last packet's samples, `pending[taken..<pendingEnd]` not yet read.
        private var pending = [Int16](repeating: 0, count: 5760)
        private var pendingEnd = 0
        private var taken = 0
        /// The recording sample where this track's audio (after pre-skip) begins.
        let startSample: Int
        private var skip: Int
        let endSample: Int

        init(path: String) throws(RecordingError) {
            guard let counting = OggPacketReader(path: path), let reader = OggPacketReader(path: path) else {
                throw .cannotRead(path: path, errno: ENOENT)
            }
            guard let head = counting.next(), let tags = counting.next(), OggOpusFile.isOpusHead(head) else { throw .notOggOpus(path: path) }
            let preSkip = OggOpusFile.preSkip(head: head)
            var samples = 0
            while let p = counting.next() { samples += p.withUnsafeBufferPointer { Int(opus_packet_samples($0)) } }
            _ = reader.next()
            _ = reader.next()  // (the two headers)
            packets = reader
            do { decoder = try OpusDecoder() } catch { throw .library("\(error)") }
            startSample = OggOpusMixdown.offsetMs(tags: tags) * 48
            skip = preSkip
            endSample = startSample + max(0, samples - preSkip)
        }

        /// Fills `out` with the track's samples for recording samples `at ..< at+count` (silence
        /// before it starts and after it ends).
        func read(_ count: Int, at: Int, into out: UnsafeMutableBufferPointer<Int16>) {
            var i = 0
            while i < count {
                let t = at + i
                if t < startSample || (ended && taken == pendingEnd) { out[i] = 0; i += 1; continue }
                if taken == pendingEnd { decodeNext(); continue }
                // (As many as this packet has and the block wants, at once.)
                let n = min(count - i, pendingEnd - taken)
                pending.withUnsafeBufferPointer { p in
                    for k in 0..<n { out[i + k] = p[taken + k] }
                }
                taken += n
                i += n
            }
        }

        /// The next packet decoded into `pending` (its pre-skip left out), read from its start.
        private func decodeNext() {
            guard let packet = packets.next() else {
                ended = true
                return
            }
            let n = max(0, packet.withUnsafeBufferPointer { p in pending.withUnsafeMutableBufferPointer { decoder.decode(p, into: $0) } })
            let s = min(skip, n)
            skip -= s
            pendingEnd = n
            taken = s
        }
    }
}

import COpus

/// Samples in one Opus packet at 48 kHz (0 when it is not one).
func opus_packet_samples(_ p: UnsafeBufferPointer<UInt8>) -> Int32 {
    guard let b = p.baseAddress, p.count > 0 else { return 0 }
    return max(0, opus_packet_get_nb_samples(b, Int32(p.count), 48_000))
}
