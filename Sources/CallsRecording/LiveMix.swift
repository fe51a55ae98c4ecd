import CallsAudio
import CallsCore

/// The room's live mix for a stream: each speaker's Opus packets are decoded (libopus) and
/// placed on one timeline by their RTP clock (anchored where their first packet arrived), then
/// summed with a limiter (`Mixer`) `delayMs` behind real time, so packets that the relay's
/// batching or the network delayed still land where they belong. A frame that never came is
/// silence for that speaker (their next packet's FEC is not waited for: the stream runs on).
///
/// No clock of its own: `packet(…, atMs:)` and `render(untilMs:)` carry time (tests run it on
/// a virtual clock). Thread rules: one thread at a time (the streamer's receive thread).
public final class LiveMix {
    public let delayMs: Int64
    private let mixer = Mixer(frameSamples: 960)
    private var block = [Int16](repeating: 0, count: 960)
    private var track = [Int16](repeating: 0, count: 960)
    private var scratch = [Int16](repeating: 0, count: 5760)

    private final class Speaker {
        let decoder: OpusDecoder
        var clock = RTPClockAnchor(toleranceMs: 1000)
        /// Decoded frames by their first sample on the timeline.
        var frames: [(start: Int64, pcm: [Int16])] = []
        var lastHeardMs: Int64 = 0
        init(decoder: OpusDecoder) { self.decoder = decoder }
    }
    private var speakers: [UInt32: Speaker] = [:]
    /// The next timeline sample to render.
    public private(set) var position: Int64 = 0
    private var started = false
    /// Frames that arrived after their place had been rendered (dropped).
    public private(set) var late = 0

    public init(delayMs: Int64 = 200) { self.delayMs = delayMs }

    /// One packet of `ssrc`, heard at `atMs`.
    public func packet(ssrc: UInt32, timestamp: UInt32, payload: UnsafeBufferPointer<UInt8>, atMs: Int64) {
        if !started {
            started = true
            position = (atMs - delayMs) * 48
        }
        let s: Speaker
        if let have = speakers[ssrc] { s = have } else {
            guard let d = try? OpusDecoder() else { return }
            s = Speaker(decoder: d)
            speakers[ssrc] = s
        }
        let start = s.clock.sample(of: timestamp, arrivedAtMs: atMs)
        s.lastHeardMs = atMs
        let n = scratch.withUnsafeMutableBufferPointer { s.decoder.decode(payload, into: $0) }
        guard n > 0 else { return }
        guard start + Int64(n) > position else { late += 1; return }
        s.frames.append((start, Array(scratch[0..<n])))
    }

    /// Renders 20 ms blocks up to `untilMs - delayMs`, each handed to `out`.
    public func render(untilMs: Int64, _ out: (UnsafeBufferPointer<Int16>) -> Void) {
        guard started else { return }
        let end = (untilMs - delayMs) * 48
        while position + 960 <= end {
            mixer.reset()
            for s in speakers.values {
                guard fill(s) else { continue }
                track.withUnsafeBufferPointer { mixer.add($0, gain: 1) }
            }
            block.withUnsafeMutableBufferPointer { mixer.render(into: $0) }
            block.withUnsafeBufferPointer { out($0) }
            position += 960
        }
        // A speaker unheard for a minute (they left) is forgotten.
        speakers = speakers.filter { untilMs - $0.value.lastHeardMs < 60_000 }
    }

    /// The speaker's audio in [position, position + 960) into `track`; false when silent.
    private func fill(_ s: Speaker) -> Bool {
        s.frames.removeAll { $0.start + Int64($0.pcm.count) <= position }
        var any = false
        for i in 0..<960 { track[i] = 0 }
        for f in s.frames where f.start < position + 960 {
            let from = max(position, f.start), to = min(position + 960, f.start + Int64(f.pcm.count))
            guard from < to else { continue }
            for t in from..<to { track[Int(t - position)] = f.pcm[Int(t - f.start)] }
            any = true
        }
        return any
    }
}
