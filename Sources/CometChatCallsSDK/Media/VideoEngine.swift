import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
import CallsVideo
import Foundation
import Synchronization

/// The client's video: one VP8 stream out, any number in.
///
/// ```
///  video thread:   source.read (paced at the current frame rate) ─▶ [paused? skip] ─▶ VP8 encode
///                  (keyframe when asked) ─▶ RFC 7741 packets ─▶ SRTP (video SSRC, our key) ─▶ transmit
///  receive thread: (MediaEngine, payload type 96) ─▶ per sender: VP8FrameAssembler ─▶ VP8 decode
///                  ─▶ latest frame (+ onFrame) │ loss or corruption ─▶ onKeyframeNeeded (≤ 2/s)
/// ```
/// Thread rules: `start`/`stop` from the owner (the media engine); `receive`, `sweepDeparted`
/// and `receiverCount` under the media engine's receive lock only (its receive thread or its
/// playback thread reading the socket: they own the receivers); everything else from any thread.
final class VideoEngine: @unchecked Sendable {
    struct Options: Sendable {
        var source: VideoSourceSpec = .auto
        var name = "me"
        var width = 320
        var height = 180
        var fps = 15
        var bitrateKbps = 250
        var facing: VideoFacing = .front
        var paused = false
        /// Decode received frames' time stamps (`FrameStamp`): glass-to-glass latency (QA, benchmarks).
        var readStamps = false
    }

    /// Per-sender receive figures.
    struct ReceiveFigures: Sendable, Equatable {
        var packets = 0
        var framesDecoded = 0
        var framesDropped = 0
        var keyframesRequested = 0
        var decodeErrors = 0
        /// The last decoded frame's stamp latency (ms), when `readStamps`.
        var stampLatencyMs: Double?
    }

    struct Statistics: Sendable, Equatable {
        var framesSent = 0
        var keyframesSent = 0
        var packetsSent = 0
        var bytesSent = 0
        var bitrateKbps = 0
        var fps = 0
        var received: [UInt32: ReceiveFigures] = [:]
    }

    private let options: Options
    private let transmit: @Sendable (UnsafeRawBufferPointer) -> Bool
    private let canSend: @Sendable () -> Bool
    private let source: Locked<(any VideoSource)?>
    private let running = Atomic<Bool>(false)
    private let paused: Atomic<Bool>
    private let keyframeAsked = Atomic<Bool>(true)
    private let ssrcValue = Atomic<UInt32>(0)
    private let sender = Locked<SRTPSender?>(nil)
    private let pendingKey = PendingSendKey()
    private let rate: Locked<VideoRateController>
    private let stats = Locked(Statistics())
    private let preview = Locked<VideoFrame?>(nil)
    private let done = DispatchSemaphore(value: 0)
    private var started = false
    /// Told (receive thread) when a sender's stream needs a keyframe; rate-limited per sender.
    let onKeyframeNeeded: @Sendable (UInt32) -> Void
    /// Every decoded frame (receive thread): `--video-out` dumps, tests. Must be quick.
    let onFrame = Locked<(@Sendable (UInt32, VideoFrame) -> Void)?>(nil)

    // Receive side: owned by the receive thread, published through `latest`.
    private struct Receiver {
        var assembler = VP8FrameAssembler()
        var decoder: VP8Decoder?
        var lastKeyRequest: UInt64 = 0
        var figures = ReceiveFigures()
        var highestSeq: UInt32?
    }
    private var receivers: [UInt32: Receiver] = [:]
    /// Senders that left (`forgetSender`, any thread): their receivers — a VP8 decoder each,
    /// about a megabyte with its frames — go at the receive thread's next `sweepDeparted`.
    private let departed = Locked<Set<UInt32>>([])
    private let anyDeparted = Atomic<Bool>(false)
    private let latest = Locked<[UInt32: VideoFrame]>([:])
    private let figures = Locked<[UInt32: ReceiveFigures]>([:])
    /// Receive counts since the last report, per sender (the receive thread adds, the report takes).
    private struct Window: Sendable { var first: UInt32; var highest: UInt32; var packets = 0; var frames = 0 }
    private let window = Locked<[UInt32: Window]>([:])

    /// `canSend` (read by the video thread before each frame) says whether the relay has bound
    /// us: until then frames are not encoded, so the keyframe a stream starts with is the
    /// first one the relay forwards, not one it drops.
    init(options: Options, transmit: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool,
         canSend: @escaping @Sendable () -> Bool = { true },
         onKeyframeNeeded: @escaping @Sendable (UInt32) -> Void) throws(VideoError) {
        self.options = options
        self.transmit = transmit
        self.canSend = canSend
        self.onKeyframeNeeded = onKeyframeNeeded
        paused = Atomic(options.paused)
        rate = Locked(VideoRateController(maxBitrateKbps: options.bitrateKbps, maxFPS: options.fps))
        source = Locked(try options.source.open(name: options.name, facing: options.facing, width: options.width,
                                                height: options.height, fps: options.fps))
    }

    /// Whether there is anything to send (a source other than `none`).
    var hasSource: Bool { source.withLock { $0 != nil } }
    var sourceName: String? { source.withLock { $0?.name } }

    /// Starts sending as `ssrc` with `key` (our SRTP master key: the same as our audio's).
    func start(ssrc: UInt32, key: SRTPKey) throws(SRTPError) {
        sender.withLock { $0 = nil }
        let s = try SRTPSender(ssrc: ssrc, key: key)
        sender.withLock { $0 = s }
        ssrcValue.store(ssrc, ordering: .releasing)
        keyframeAsked.store(true, ordering: .releasing)  // a new stream (a rejoin's SSRC) starts whole
        guard !started, hasSource else { return }
        started = true
        running.store(true, ordering: .releasing)
        let t = Thread { [self] in
            ThreadName.set("callroom.video")
            sendLoop()
            done.signal()
        }
        t.name = "callroom.video"
        t.stackSize = 1 << 20
        t.start()
    }

    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        source.withLock { $0 }?.close()
        done.wait()
    }

    /// A new sending key (rotation): used from `at` (monotonic ns) on.
    func rekey(_ key: SRTPKey, at: UInt64) { pendingKey.schedule(key, at: at) }

    func setPaused(_ p: Bool) {
        paused.store(p, ordering: .releasing)
        if !p { keyframeAsked.store(true, ordering: .releasing) }  // resuming: start with a whole picture
        if p { preview.withLock { $0 = nil } }
    }

    /// A receiver asked (or someone subscribed): the next frame is a keyframe.
    func requestKeyframe() { keyframeAsked.store(true, ordering: .releasing) }

    /// Switches to the source facing `facing` (another camera, or the other test pattern).
    func switchFacing(_ facing: VideoFacing) {
        guard let new = try? options.source.open(name: options.name, facing: facing, width: options.width,
                                                  height: options.height, fps: options.fps) else { return }
        let old = source.withLock { s -> (any VideoSource)? in defer { s = new }; return s }
        old?.close()
        keyframeAsked.store(true, ordering: .releasing)
    }

    /// A receiver's report of our video: loss adapts bitrate and frame rate.
    func report(from pid: String, lossPercent: Double) {
        let now = Double(monotonicNanoseconds()) / 1e9
        rate.withLock { _ = $0.report(from: pid, lossPercent: lossPercent, now: now) }
    }

    /// The last frame we sent (our preview); nil while paused or before the first.
    var localFrame: VideoFrame? { preview.withLock { $0 } }
    func frame(of ssrc: UInt32) -> VideoFrame? { latest.withLock { $0[ssrc] } }

    var statistics: Statistics {
        var s = stats.withLock { $0 }
        let r = rate.withLock { $0 }
        s.bitrateKbps = r.bitrateKbps
        s.fps = r.fps
        s.received = figures.withLock { $0 }
        return s
    }

    /// Loss and frame rate per sender since the last call (the receiver reports, every 2 s).
    func reportSinceLast(seconds: Double) -> [LossReport] {
        window.withLock { w in
            let out = w.map { ssrc, c -> LossReport in
                let expected = max(c.packets, Int(Int32(bitPattern: c.highest &- c.first)) + 1)
                return LossReport(ssrc: ssrc, lossPercent: 100 * Double(expected - c.packets) / Double(max(1, expected)),
                                  framesPerSecond: Double(c.frames) / max(0.5, seconds))
            }
            w = w.mapValues { Window(first: $0.highest &+ 1, highest: $0.highest) }
            return out
        }
    }

    // MARK: Sending (video thread)

    private func sendLoop() {
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 8)
        defer { packet.deallocate() }
        var encoder: VP8Encoder?
        var seq = UInt16.random(in: 0...UInt16.max)
        let timestampBase = UInt32.random(in: 0...UInt32.max)
        var pictureID = Int.random(in: 0...0x7FFF)
        var pacer = Pacer(periodNanoseconds: 1_000_000_000 / UInt64(max(1, options.fps)))
        while running.load(ordering: .acquiring) {
            let (bitrate, fps) = rate.withLock { ($0.bitrateKbps, $0.fps) }
            pacer.wait(nanoseconds: 1_000_000_000 / UInt64(max(1, fps)))  // the rate controller may lower the frame rate
            guard running.load(ordering: .acquiring), !paused.load(ordering: .acquiring),
                  let src = source.withLock({ $0 }) else { continue }
            let at = monotonicNanoseconds()
            guard let raw = try? src.read(at: at) else { continue }
            let frame = raw.scaled(width: options.width, height: options.height)
            preview.withLock { $0 = frame }
            guard canSend() else { continue }  // not bound yet: the keyframe asked for waits
            if encoder == nil { encoder = try? VP8Encoder(.init(width: options.width, height: options.height, fps: options.fps, bitrateKbps: bitrate)) }
            guard let enc = encoder else { continue }
            enc.setBitrate(kbps: bitrate)
            let key = keyframeAsked.exchange(false, ordering: .acquiringAndReleasing)
            guard let encoded = try? enc.encode(frame, keyframe: key) else { continue }
            pendingKey.applyIfDue(to: sender.withLock { $0 })
            guard let srtp = sender.withLock({ $0 }) else { continue }
            let ssrc = ssrcValue.load(ordering: .acquiring)
            let timestamp = timestampBase &+ UInt32(truncatingIfNeeded: at / 1_000_000 * 90)
            let chunks = VP8Payload.packetize(encoded.data, pictureID: pictureID)
            pictureID = (pictureID + 1) & 0x7FFF
            var sentPackets = 0, sentBytes = 0
            for (i, chunk) in chunks.enumerated() {
                let h = RTPPacket.writeHeader(into: packet, marker: i == chunks.count - 1, payloadType: VP8Payload.payloadType,
                                              sequenceNumber: seq, timestamp: timestamp, ssrc: ssrc, audioLevel: nil)
                seq &+= 1
                chunk.withUnsafeBytes { c in
                    guard let from = c.baseAddress else { return }
                    packet.baseAddress?.advanced(by: h).copyMemory(from: from, byteCount: c.count)
                }
                guard let length = try? srtp.protect(packet, length: h + chunk.count) else { continue }
                if transmit(UnsafeRawBufferPointer(rebasing: packet[0..<length])) { sentPackets += 1; sentBytes += length }
            }
            stats.withLock {
                $0.framesSent += 1
                if encoded.isKeyframe { $0.keyframesSent += 1 }
                $0.packetsSent += sentPackets
                $0.bytesSent += sentBytes
            }
        }
        source.withLock { $0 }?.close()
    }

    // MARK: Receiving (receive thread)

    func receive(_ h: RTPHeader, _ datagram: UnsafeRawBufferPointer) {
        var r = receivers[h.ssrc] ?? Receiver()
        r.figures.packets += 1
        // Sequence numbers extended to 32 bits: expected packets for the loss report.
        let ext: UInt32
        if let hi = r.highestSeq {
            let delta = SequenceNumber.distance(from: UInt16(truncatingIfNeeded: hi), to: h.sequenceNumber)
            ext = UInt32(bitPattern: Int32(bitPattern: hi) &+ Int32(delta))
            if Int32(bitPattern: ext &- hi) > 0 { r.highestSeq = ext }
        } else {
            ext = UInt32(h.sequenceNumber)
            r.highestSeq = ext
        }
        let payload = UnsafeRawBufferPointer(rebasing: datagram[h.payloadRange])
        let outcome = r.assembler.insert(sequence: h.sequenceNumber, timestamp: h.timestamp, marker: h.marker, payload: payload)
        var needKey = false, decoded = false
        switch outcome {
        case .pending: break
        case .needKeyframe:
            r.figures.framesDropped += 1
            needKey = true
        case .frame(let f):
            if r.decoder == nil { r.decoder = try? VP8Decoder() }
            do {
                if let out = try r.decoder?.decode(f.data, captureNanoseconds: monotonicNanoseconds()) {
                    r.figures.framesDecoded += 1
                    decoded = true
                    if out.corrupted { needKey = true }
                    if options.readStamps, let stamp = FrameStamp.read(out.frame) {
                        let nowMs = UInt32(truncatingIfNeeded: monotonicNanoseconds() / 1_000_000)
                        r.figures.stampLatencyMs = Double(Int32(bitPattern: nowMs &- stamp))
                    }
                    latest.withLock { $0[h.ssrc] = out.frame }
                    onFrame.withLock { $0 }?(h.ssrc, out.frame)
                }
            } catch {
                r.figures.decodeErrors += 1
                needKey = true
            }
        }
        let now = monotonicNanoseconds()
        if needKey, now - r.lastKeyRequest > 500_000_000 {
            r.lastKeyRequest = now
            r.figures.keyframesRequested += 1
            onKeyframeNeeded(h.ssrc)
        }
        let fig = r.figures, highest = r.highestSeq ?? ext
        receivers[h.ssrc] = r
        figures.withLock { $0[h.ssrc] = fig }
        window.withLock { w in
            var x = w[h.ssrc] ?? Window(first: ext, highest: ext)
            x.packets += 1
            x.highest = highest
            if decoded { x.frames += 1 }
            w[h.ssrc] = x
        }
    }

    /// A sender left: its last picture goes now, its decoder at the receive thread's next
    /// `sweepDeparted` (they were kept for the rest of the call: a decoder for every video
    /// sender that ever left).
    func forgetSender(_ ssrc: UInt32) {
        departed.withLock { _ = $0.insert(ssrc) }
        anyDeparted.store(true, ordering: .releasing)
        clear([ssrc])
    }

    /// Receive lock (each time the socket is read): drops the receivers of senders that left.
    func sweepDeparted() {
        guard anyDeparted.exchange(false, ordering: .acquiringAndReleasing) else { return }
        let gone = departed.withLock { d in
            defer { d = [] }
            return d
        }
        for ssrc in gone { receivers[ssrc] = nil }
        clear(gone)  // (a packet still in flight may have counted itself again meanwhile)
    }

    private func clear(_ ssrcs: Set<UInt32>) {
        latest.withLock { l in for s in ssrcs { l[s] = nil } }
        figures.withLock { f in for s in ssrcs { f[s] = nil } }
        window.withLock { w in for s in ssrcs { w[s] = nil } }
    }

    /// The senders whose video this engine decodes now (receive lock; tests).
    var receiverCount: Int { receivers.count }
}
