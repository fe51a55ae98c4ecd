import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
import CallsVideo
import Foundation
import Synchronization

/// The client's media pipeline for one joined session.
///
/// ```
///  capture thread:  AudioInput.read ─▶ FilterChain (processing, probes, level) ─▶ BindingWatch (bind, UDP blocked?)
///                   ─▶ (muted? skip) ─▶ AudioSendStage (Opus ─▶ [RED] ─▶ RTP + level) ─▶ SRTP protect
///                   ─▶ PacketTransport (RelayUDPTransport │ SignallingTunnel)
///  drain:           UDP (recvmmsg, kernel arrival times) ─▶ consent challenge → answer │ bind ack
///                   │ MediaReceiveStage (SRTP unprotect in place ─▶ RTP header ─▶ [impairment]) ─▶ ReceiveMixer.insert │ VideoEngine
///  tunnel:          the signalling connection's thread ─▶ the same MediaReceiveStage
///                   (the playback thread before each mix; the receive thread every 100 ms as a
///                   backstop, or as packets come when nothing is played)
///  playback thread: drain, then ReceiveMixer.mixNext (jitter buffers ─▶ decode / FEC / PLC ─▶ levels ─▶ gains ─▶ mix)
///                   ─▶ test tone ─▶ echo canceller's far end ─▶ AudioOutput.write
/// ```
/// The engine keeps the transport, the threads and the devices; the receive chain is
/// `ReceiveMixer` (CallsAudio), which allocates nothing per packet or frame in steady state.
/// The input and output pace the two audio threads (a device clock or a `Pacer`).
/// Thread rules: `start`/`stop` from the owner; `setMuted`, `levels`, `setActiveSSRCs`,
/// `statistics` from any thread.
final class MediaEngine: @unchecked Sendable {
    struct Statistics: Sendable, Equatable {
        var framesCaptured = 0
        var packetsSent = 0
        /// Audio payload bytes sent (Opus, with any redundant copies; before SRTP).
        var payloadBytesSent = 0
        var packetsReceived = 0
        var impairedDrops = 0
        var bound = false
        /// Packets that failed SRTP (forged, tampered with, replayed, or from a sender without a key).
        var srtpRejected = 0
        var jitter: [UInt32: JitterBuffer.Statistics] = [:]
        /// The relay our media goes to now (`host:port`).
        var relay = ""
    }

    let frameSamples: Int
    let frameMs: Int
    /// The capture and playback devices, and their loss and return.
    let devices: AudioDeviceSupervisor
    /// Whether this engine plays audio (an engine without output keeps no jitter buffers).
    private var hasOutput: Bool { devices.hasOutput }
    private let socket: UDPSocket
    private let encoder: OpusEncoder
    /// Where media goes and our SSRC: set by `start`, changed by `retarget` (a rejoin after the
    /// server restarted), read by the media threads.
    private let relayPacked = Atomic<UInt64>(0)
    private let ssrcValue = Atomic<UInt32>(0)
    private var relay: SocketAddress {
        let v = relayPacked.load(ordering: .acquiring)
        return SocketAddress(ip: UInt32(truncatingIfNeeded: v >> 16), port: UInt16(truncatingIfNeeded: v))
    }
    private var ssrc: UInt32 { ssrcValue.load(ordering: .acquiring) }
    /// When the current binding began (start, retarget, rebind): the "UDP blocked" check waits
    /// `udpBlockedAfterMs` from here for its acknowledgement, not from the start of the call.
    private let bindingSince = Atomic<UInt64>(0)
    private let consent = Locked<MediaConsent?>(nil)
    /// SRTP: our sending key (switched to a new epoch `keySwitchDelay` after it arrives, so
    /// receivers hold it first) and every other sender's keys.
    private let srtpSender = Locked<SRTPSender?>(nil)
    private let pendingSendKey = PendingSendKey()
    private let srtpReceiver: SRTPReceiver
    private let srtpRejected = Atomic<Int>(0)
    /// Keys given per sender SSRC so far: a departed sender's keys are removed a moment later
    /// only if none came since (`forgetSender`).
    private let keyGenerations = Locked<[UInt32: Int]>([:])
    /// Where protected packets go: UDP to the relay (set by `start`/`retarget`), or the
    /// signalling connection when UDP is blocked (`setTunnel`, from the client's state queue).
    /// Read by the capture and video threads for every packet.
    private let transport: Locked<any PacketTransport>
    /// The relay transport to return to when the tunnel is no longer needed.
    private var relayTransport: RelayUDPTransport { RelayUDPTransport(socket: socket, relay: relay) }
    static let keySwitchDelayNanoseconds: UInt64 = 250_000_000

    let running = Atomic<Bool>(false)
    private let muted = Atomic<Bool>(false)
    private let bound = Atomic<Bool>(false)
    /// Whether the relay we send to has challenged this SSRC (and we answered: audio sent after
    /// the answer reaches it after the answer that binds us) or acknowledged it, since
    /// `start`/`retarget` (a `rebind` keeps it: the old binding forwards meanwhile). Until then
    /// audio and video are not encoded or sent — the relay drops what it cannot place, and
    /// listeners' decoders would start on a stream under way — and the encoder starts afresh
    /// with the first frame that goes out (`mediaGeneration` moves; video starts with a keyframe).
    private let mediaOpen = Atomic<Bool>(false)
    private let mediaGeneration = Atomic<Int>(0)
    private let framesCaptured = Atomic<Int>(0)
    private let packetsSent = Atomic<Int>(0)
    private let payloadBytesSent = Atomic<Int>(0)
    private let packetsReceived = Atomic<Int>(0)
    /// Jitter buffers, decoders, gains and levels of every sender, and the mix.
    let receiver: ReceiveMixer
    /// A local test tone mixed into playback (settings panel), and frames of it still to play.
    let testTone = Locked<ToneInput?>(nil)
    let testToneFrames = Atomic<Int>(0)
    /// What we capture, after processing and before mute (the RTP level, our meter).
    private let meter = LevelFilter()
    /// Capture processing, probes and the meter, in order (baresip's `aufilt` chain).
    let filters: FilterChain
    private let threadsDone = DispatchSemaphore(value: 0)
    private var threadCount = 0
    private let jitterTargetFrames: Int
    private let impairedDrops = Atomic<Int>(0)
    /// What receiving needs, held by whichever thread receives (`drainSocket`, the tunnel):
    /// the batch buffers and the receive stage (with, in benchmarks, the impairment's held packets).
    private struct ReceiveState: Sendable {
        let batch = UDPBatchReceiver(capacity: 32, timestamps: true)
        var stage: MediaReceiveStage
    }
    private let receiveState: Locked<ReceiveState>
    /// Ends the receive thread's backstop wait at `stop`.
    private let receiveWake = DispatchSemaphore(value: 0)
    /// With playback, how often the receive thread reads the socket itself (ms).
    static let backstopMilliseconds = 100
    private let processor: CaptureProcessor?
    private let pushToTalk = Atomic<Bool>(false)
    private let talking = Atomic<Bool>(false)
    let options: Options
    /// Times the playout frame boundary moved earlier (phase alignment: `PlayoutPhase`), and by
    /// how many samples in all.
    let phaseAdvances = Atomic<Int>(0)
    let phaseAdvanceSamples = Atomic<Int>(0)
    /// CPU time of Opus encoding on the capture thread (ns; `receiver.decodeCPUNanoseconds` has
    /// the decoding): the codec's share of what the process costs (`callroom bench cpu`).
    let encodeCPUNanoseconds = Atomic<UInt64>(0)
    var decodeCPUNanoseconds: UInt64 { receiver.decodeCPUNanoseconds.load(ordering: .relaxed) }
    /// The playback period in use (ms) and whether it was chosen automatically.
    let playbackPeriodMs = Atomic<Int>(0)
    var playbackPeriodIsAutomatic: Bool { options.playbackPeriodMs == nil }
    /// The period a new output should open with (nil before playback has chosen one).
    var currentPlaybackPeriodMs: Int? {
        let ms = playbackPeriodMs.load(ordering: .relaxed)
        return ms > 0 ? ms : options.playbackPeriodMs
    }
    /// The loss percentage FEC is tuned for; set from receiver reports, applied by the capture thread.
    let expectedLoss = Atomic<Int>(5)
    /// Previous frames each packet repeats (0: plain Opus), chosen from receiver reports.
    let redundancyPolicy = Locked(RedundancyPolicy())
    let redundancyDistance: Atomic<Int>
    /// Each sender's loss over the last report interval (percent), for connection quality.
    let recentLoss = Locked<[UInt32: Double]>([:])
    /// Optional timing probe (benchmarks); called on the media threads, must not block.
    let probe: (any MediaProbe)?
    /// Our camera out and everyone's video in (video sessions with a source; nil otherwise).
    private(set) var video: VideoEngine?

    /// - Parameters:
    ///   - output: nil to receive nothing (synthetic participants that only speak).
    struct Options {
        var frameMs = 20
        var jitterTargetFrames = 2
        /// Simultaneous talkers decoded and mixed: the loudest this many (`ReceiveMixer.loudest`).
        var mixLoudest = 4
        var impairment: NetworkImpairment?
        var processing: CaptureProcessing = .off
        var bitrate = 32_000
        var complexity = 9
        var dtx = false
        var profile: OpusEncoder.Profile = .voice
        /// Repeat previous frames in each packet (RFC 2198) when receivers report loss and all
        /// of them decode it (`RedundancyPolicy`); false: plain Opus with in-band FEC only.
        var redundancy = true
        /// The playback device period in ms, fixed: the device keeps this much queued when a
        /// frame is mixed (and each frame is written whole, `ALSADevice`). nil: automatic — the
        /// smallest period the device keeps up with (`PlaybackPeriodPolicy`: 5 ms, backing off
        /// on under-runs).
        var playbackPeriodMs: Int?
        /// Reopens the configured input after a device failure (nil: no retry), and the output
        /// with a device period (ms) after a failure or to change the period.
        var reopenInput: (@Sendable () throws -> any AudioInput)?
        var reopenOutput: (@Sendable (Int) throws -> any AudioOutput)?
        /// How often a lost device is retried.
        var retrySeconds: Double = 2
        /// Told (on a media thread) when a device is lost or comes back.
        var onNotice: (@Sendable (String) -> Void)?
        /// Told once (on the capture thread) when no bind was acknowledged within
        /// `udpBlockedAfterMs` of starting: UDP to the relay is blocked.
        var onUDPBlocked: (@Sendable () -> Void)?
        var udpBlockedAfterMs = 2500
        /// Video (nil: a voice session, or no source).
        var video: VideoEngine.Options?
        /// Told (receive thread) when a sender's video needs a keyframe (its SSRC).
        var onKeyframeNeeded: (@Sendable (UInt32) -> Void)?
    }

    init(input: any AudioInput, output: (any AudioOutput)?, options: Options, probe: (any MediaProbe)? = nil) throws(MediaEngineError) {
        let frameMs = options.frameMs, jitterTargetFrames = options.jitterTargetFrames, impairment = options.impairment
        self.options = options
        redundancyDistance = Atomic(options.redundancy ? RedundancyPolicy().distance : 0)
        self.probe = probe
        devices = AudioDeviceSupervisor(input: input, output: output, frameSamples: AudioFormat.samples(ms: frameMs),
                                        reopen: .init(input: options.reopenInput, output: options.reopenOutput, retrySeconds: options.retrySeconds),
                                        notice: options.onNotice)
        self.frameMs = frameMs
        self.frameSamples = AudioFormat.samples(ms: frameMs)
        self.jitterTargetFrames = jitterTargetFrames
        receiver = ReceiveMixer(frameSamples: AudioFormat.samples(ms: frameMs), jitterTargetFrames: jitterTargetFrames, loudest: options.mixLoudest)
        let processor: CaptureProcessor?
        do {
            srtpReceiver = try SRTPReceiver()
            socket = try UDPSocket(host: "0.0.0.0", port: 0)
            _ = socket.enableReceiveTimestamps()  // without: arrivals are timed when read
            encoder = try OpusEncoder(frameMs: frameMs, bitrate: Int32(options.bitrate), complexity: Int32(options.complexity),
                                      profile: options.profile)
            encoder.setDTX(options.dtx)
            processor = options.processing.isOff ? nil
                : try CaptureProcessor(frameSamples: AudioFormat.samples(ms: frameMs), options: options.processing)
        } catch let e as AudioError {
            throw .audio(e)
        } catch let e as SRTPError {
            throw .network("SRTP: \(e)")
        } catch {
            throw .network("\(error)")
        }
        self.processor = processor
        receiveState = Locked(ReceiveState(stage: MediaReceiveStage(srtp: srtpReceiver, impairment: impairment)))
        transport = Locked(RelayUDPTransport(socket: socket, relay: SocketAddress(ip: 0, port: 0)))  // (`start` names the relay)
        let chain: [(any AudioFilter)?] = [processor, probe.map { ProbeFilter($0) }, meter]
        filters = FilterChain(chain.compactMap { $0 })
        if let v = options.video {
            let keyframes = options.onKeyframeNeeded
            do {
                video = try VideoEngine(options: v, transmit: { [weak self] p in self?.transmit(p) ?? false },
                                        canSend: { [weak self] in self?.mayTransmit ?? false },
                                        onKeyframeNeeded: { keyframes?($0) })
            } catch {
                throw .video(error)
            }
        }
    }

    /// Whether media may go out: the relay's first challenge answered (or an ack) since
    /// `start`/`retarget`, or media goes over the signalling tunnel (`mediaOpen`). Any thread.
    private var mayTransmit: Bool { mediaOpen.load(ordering: .acquiring) || isTunnelled }

    /// Sends one protected packet to the relay, or over signalling when UDP is blocked (any
    /// media thread: the capture and video threads share the socket).
    private func transmit(_ p: UnsafeRawBufferPointer) -> Bool { transport.withLock { $0 }.send(p) }

    /// Starts sending to and receiving from the relay at `relay`, bound by `bindToken`, media
    /// protected with `keys` (ours, whose SSRC is `ssrc`, and the other members').
    func start(relay: SocketAddress, ssrc: UInt32, bindToken: [UInt8], keys: [WireMediaKey]) throws(MediaEngineError) {
        let sender = try Self.sender(ssrc: ssrc, keys: keys)
        srtpSender.withLock { $0 = sender }
        moveRelay(to: relay)
        ssrcValue.store(ssrc, ordering: .releasing)
        consent.withLock { $0 = MediaConsent(ssrc: ssrc, token: bindToken) }
        updateKeys(keys)
        try startVideo(ssrc: ssrc, keys: keys)
        running.store(true, ordering: .releasing)
        spawn("callroom.capture") { $0.captureLoop() }
        spawn("callroom.receive") { $0.receiveLoop() }
        if hasOutput { spawn("callroom.playback") { $0.playbackLoop() } }
    }

    /// Starts (or moves) our video stream on the video SSRC our own key names, with that key.
    private func startVideo(ssrc: UInt32, keys: [WireMediaKey]) throws(MediaEngineError) {
        guard let video, let own = keys.first(where: { $0.ssrc == ssrc }), let vssrc = own.videoSsrc, let key = SRTPKey(own) else { return }
        do { try video.start(ssrc: vssrc, key: key) } catch { throw .network("SRTP: \(error)") }
    }

    private func spawn(_ name: String, _ body: @escaping @Sendable (MediaEngine) -> Void) {
        threadCount += 1
        let t = Thread { [self] in
            ThreadName.set(name)  // Thread.name never reaches the kernel on Linux: top -H, /proc
            body(self)
            self.threadsDone.signal()
        }
        t.name = name
        t.stackSize = 1 << 20
        t.start()
    }

    /// Stops every thread and closes the endpoints. Idempotent.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        video?.stop()
        devices.stop()
        receiveWake.signal()
        for _ in 0..<threadCount { threadsDone.wait() }
        threadCount = 0
        socket.close()
    }

    func setMuted(_ m: Bool) { muted.store(m, ordering: .releasing) }

    /// Push-to-talk: when enabled, the microphone is sent only while `talking` is true.
    func setPushToTalk(_ enabled: Bool) { pushToTalk.store(enabled, ordering: .releasing) }
    func setTalking(_ t: Bool) { talking.store(t, ordering: .releasing) }
    var isTransmitting: Bool {
        !muted.load(ordering: .acquiring) && (!pushToTalk.load(ordering: .acquiring) || talking.load(ordering: .acquiring))
    }

    /// Playback gain for one sender (1 = as received, 0 = silent, up to 4).
    func setVolume(_ gain: Float, ssrc: UInt32) { receiver.setVolume(gain, ssrc: ssrc) }

    /// Binds again with a new token (after a signalling `resume`); media keeps flowing meanwhile.
    func rebind(token: [UInt8]) {
        consent.withLock { $0 = MediaConsent(ssrc: ssrc, token: token) }
        bindingSince.store(monotonicNanoseconds(), ordering: .releasing)
        bound.store(false, ordering: .releasing)
        sendBind()
    }

    /// Moves a running engine to a new participant (a rejoin after the server lost our session:
    /// new SSRC, bind token, keys, perhaps a new relay port). Devices and threads carry on; the
    /// other senders' old keys are dropped (the restarted server made new ones).
    func retarget(relay: SocketAddress, ssrc newSSRC: UInt32, bindToken: [UInt8], keys: [WireMediaKey]) throws(MediaEngineError) {
        let sender = try Self.sender(ssrc: newSSRC, keys: keys)
        // The gate shuts first: no frame goes to the new relay before it acknowledges us.
        mediaOpen.store(false, ordering: .releasing)
        bound.store(false, ordering: .releasing)
        mediaGeneration.add(1, ordering: .releasing)
        pendingSendKey.cancel()
        srtpSender.withLock { $0 = sender }
        srtpReceiver.removeAll()
        moveRelay(to: relay)
        ssrcValue.store(newSSRC, ordering: .releasing)
        consent.withLock { $0 = MediaConsent(ssrc: newSSRC, token: bindToken) }
        updateKeys(keys)
        try startVideo(ssrc: newSSRC, keys: keys)
        bindingSince.store(monotonicNanoseconds(), ordering: .releasing)
        sendBind()
    }

    /// Our SRTP sender, from our own key among `keys`.
    private static func sender(ssrc: UInt32, keys: [WireMediaKey]) throws(MediaEngineError) -> SRTPSender {
        guard let own = keys.first(where: { $0.ssrc == ssrc }), let key = SRTPKey(own) else {
            throw .network("the server sent no media key for this participant")
        }
        do { return try SRTPSender(ssrc: ssrc, key: key) } catch { throw .network("SRTP: \(error)") }
    }

    /// Installs senders' keys from the signalling (any thread): others' at once (their
    /// previous epoch stays valid), our own new epoch after `keySwitchDelay`.
    func updateKeys(_ keys: [WireMediaKey]) {
        for w in keys {
            guard let key = SRTPKey(w) else { continue }
            if w.ssrc == ssrc {
                guard srtpSender.withLock({ $0?.epoch }) != key.epoch else { continue }
                let at = monotonicNanoseconds() + Self.keySwitchDelayNanoseconds
                pendingSendKey.schedule(key, at: at)
                video?.rekey(key, at: at)
            } else {
                keyGenerations.withLock { $0[w.ssrc, default: 0] += 1 }
                try? srtpReceiver.setKey(key, for: w.ssrc)
                if let v = w.videoSsrc { try? srtpReceiver.setKey(key, for: v) }
            }
        }
    }

    /// Where our media leaves from.
    var localAddress: SocketAddress { socket.localAddress }

    /// Sends media over `send` (binary frames on the signalling connection) instead of UDP,
    /// or back over UDP (nil).
    func setTunnel(_ send: (@Sendable ([UInt8]) -> Void)?) {
        let relayTransport = relayTransport
        transport.withLock { $0 = send.map { SignallingTunnel(deliver: $0) } ?? relayTransport }
    }
    var isTunnelled: Bool { transport.withLock { $0.kind == .signalling } }

    /// Sends to `relay` from now on (over UDP unless media goes through the tunnel).
    private func moveRelay(to relay: SocketAddress) {
        relayPacked.store(UInt64(relay.ip) << 16 | UInt64(relay.port), ordering: .releasing)
        let udp = relayTransport
        transport.withLock { if $0.kind == .udp { $0 = udp } }
    }

    /// One SRTP packet that came over the signalling connection (its thread): verified,
    /// decrypted and delivered like one from the relay's UDP socket.
    func receiveTunnelled(_ bytes: [UInt8]) {
        guard hasOutput || video != nil, bytes.count <= 2048 else { return }
        var b = bytes
        let ssrc = self.ssrc
        let outcome = receiveState.withLock { st in  // one receiver at a time
            b.withUnsafeMutableBytes { raw in
                st.stage.receive(raw, length: bytes.count, ownSSRC: ssrc, arrival: monotonicNanoseconds(), impaired: false, deliver: deliver)
            }
        }
        count(outcome)
    }

    private func count(_ outcome: MediaReceiveStage.Outcome) {
        if outcome.received { packetsReceived.add(1, ordering: .relaxed) }
        if outcome == .rejected { srtpRejected.add(1, ordering: .relaxed) }
        if outcome == .impairedDrop { impairedDrops.add(1, ordering: .relaxed) }
    }

    /// A sender left: its packets no longer verify (audio, and video when it had some).
    /// Its keys go `keySwitchDelay` later: its last packets may still be in flight or waiting in
    /// the socket (read at most a frame late), and would otherwise count as forged.
    func forgetSender(_ ssrc: UInt32, videoSSRC: UInt32? = nil) {
        let receiver = srtpReceiver, generations = keyGenerations
        let given = generations.withLock { $0[ssrc] }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(Self.keySwitchDelayNanoseconds))) {
            // Unless it came back meanwhile with a key of its own (a rejoin keeps its SSRC).
            guard generations.withLock({ $0[ssrc] }) == given else { return }
            receiver.remove(ssrc)
            if let v = videoSSRC { receiver.remove(v) }
        }
        if let v = videoSSRC { video?.forgetSender(v) }
    }

    /// The epochs held for a sender (ours: the one we send with).
    func keyEpochs(of s: UInt32) -> [UInt8] {
        s == ssrc ? srtpSender.withLock { $0.map { [$0.epoch] } ?? [] } : srtpReceiver.epochs(of: s)
    }

    var isMuted: Bool { muted.load(ordering: .acquiring) }

    /// Restricts playout to these senders (the roster); buffers of others are dropped.
    func setActiveSSRCs(_ s: Set<UInt32>) { receiver.setActive(s) }

    /// Latest level per SSRC in dBFS (our own SSRC: what we capture, before mute).
    func levels() -> [UInt32: Float] {
        var l = receiver.levels()
        if let db = meter.lastDBFS { l[ssrc] = db }
        return l
    }

    var statistics: Statistics {
        Statistics(framesCaptured: framesCaptured.load(ordering: .relaxed), packetsSent: packetsSent.load(ordering: .relaxed),
                   payloadBytesSent: payloadBytesSent.load(ordering: .relaxed),
                   packetsReceived: packetsReceived.load(ordering: .relaxed), impairedDrops: impairedDrops.load(ordering: .relaxed),
                   bound: bound.load(ordering: .relaxed), srtpRejected: srtpRejected.load(ordering: .relaxed),
                   jitter: receiver.statistics(), relay: relay.description)
    }

    // MARK: Threads

    private func sendBind() {
        guard let c = consent.withLock({ $0 }) else { return }
        socket.send(c.bindDatagram, to: relay)
    }

    /// The capture thread: read a frame, run the filters, keep the binding, then (unmuted, and
    /// once the relay let us in) the send stage makes the packet, SRTP protects it and the
    /// transport sends it.
    private func captureLoop() {
        let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frameSamples)
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 8)
        defer { pcm.deallocate(); packet.deallocate() }
        let stage = AudioSendStage(encoder: encoder, baseBitrate: options.bitrate, frameSamples: frameSamples)
        var watch = BindingWatch(frameMs: frameMs, blockedAfterMs: options.udpBlockedAfterMs)
        var encoderGeneration = mediaGeneration.load(ordering: .acquiring)
        bindingSince.store(monotonicNanoseconds(), ordering: .releasing)
        sendBind()
        while running.load(ordering: .acquiring) {
            let input = devices.input
            do { try input.read(pcm) } catch {
                if running.load(ordering: .acquiring), devices.input !== input { continue }
                guard error != .closed, running.load(ordering: .acquiring) else { break }
                // The device failed (unplugged): keep the call going on silence and retry it.
                devices.inputLost(error)
                continue
            }
            filters.captured(pcm, FrameInfo(sequence: stage.sequence, at: monotonicNanoseconds()))
            let distance = redundancyDistance.load(ordering: .relaxed)
            stage.tune(expectedLossPercent: Int32(expectedLoss.load(ordering: .relaxed)), distance: distance)
            framesCaptured.add(1, ordering: .relaxed)
            let db = meter.lastDBFS ?? LevelMeter.silenceDBFS
            let due = watch.frame(bound: bound.load(ordering: .acquiring), bindingSince: bindingSince.load(ordering: .acquiring),
                                  now: monotonicNanoseconds())
            if due.bind { sendBind() }
            if due.blocked { options.onUDPBlocked?() }
            stage.advance()
            guard isTransmitting else { continue }
            // Nothing goes out before we answered the relay's challenge (or it acknowledged us),
            // unless media goes over the signalling tunnel; a new relay gets a new stream.
            guard mayTransmit else { continue }
            let generation = mediaGeneration.load(ordering: .acquiring)
            if generation != encoderGeneration { stage.restart(); encoderGeneration = generation }
            let level = RTPPacket.AudioLevel(level: LevelMeter.rfc6464(dbfs: db), voiceActivity: LevelMeter.isVoice(dbfs: db))
            let made = stage.packetize(UnsafeBufferPointer(pcm), level: level, ssrc: ssrc, distance: distance, into: packet)
            encodeCPUNanoseconds.store(stage.encodeCPUNanoseconds, ordering: .relaxed)  // (one stage for the engine's life)
            guard let made else { continue }
            pendingSendKey.applyIfDue(to: srtpSender.withLock { $0 })
            guard let sender = srtpSender.withLock({ $0 }), let length = try? sender.protect(packet, length: made.length) else { continue }
            // (A move to another relay since the gate was passed: this frame was the old stream's.)
            guard mediaGeneration.load(ordering: .acquiring) == generation else { continue }
            if transmit(UnsafeRawBufferPointer(rebasing: packet[0..<length])) {
                packetsSent.add(1, ordering: .relaxed)
                payloadBytesSent.add(made.payload, ordering: .relaxed)
                probe?.sent(sequence: stage.sequence, at: monotonicNanoseconds())
            }
            stage.sent()
        }
    }

    /// The receive thread: waits for datagrams and reads them (`drainSocket`). With playback,
    /// the playback thread reads the socket just before each mix — audio, video and control
    /// alike — so this thread is only its backstop (a device stalled or being reopened) and
    /// reads at most every `backstopMilliseconds`. Arrival times are the kernel's, so a packet
    /// read late is still timed when it came. (Waking for every packet cost a room of ten about
    /// 450 wake-ups a second: docs/benchmarks.md.) Without playback it reads as packets come.
    private func receiveLoop() {
        while running.load(ordering: .acquiring) {
            var wait: Int32 = 50
            if let next = receiveState.withLock({ $0.stage.nextRelease }) {
                let now = monotonicNanoseconds()
                wait = next <= now ? 0 : Int32(min(50, (next - now) / 1_000_000 + 1))
            }
            _ = socket.waitReadable(timeoutMs: wait)
            drainSocket()
            if hasOutput { _ = receiveWake.wait(timeout: .now() + .milliseconds(Self.backstopMilliseconds)) }
        }
    }

    /// Reads every datagram waiting on the socket (one `recvmmsg` per 32) and hands them on:
    /// consent challenges answered, bind acks noted, SRTP checked in place, RTP delivered (through
    /// the impairment, in benchmarks); impaired packets whose time has come are released. Called
    /// by the receive thread and by the playback thread before each mix, one at a time.
    func drainSocket() {
        receiveState.withLock { st in
            let realNow = UDPBatchReceiver.realtimeNanoseconds()
            let now = monotonicNanoseconds()
            let relay = self.relay, ssrc = self.ssrc
            while true {
                let n = st.batch.receive(on: socket.fd)
                for i in 0..<n {
                    guard st.batch.source(i) == relay else { continue }
                    let raw = st.batch.datagram(i)
                    if MediaBinding.isControl(raw) {
                        // (A move to another relay since this batch began: the old one's word opens nothing.)
                        guard self.relay == relay else { continue }
                        switch MediaReceiveStage.control(raw, ownSSRC: ssrc, consent: consent.withLock { $0 }) {
                        case .acknowledged:
                            bound.store(true, ordering: .releasing)
                            mediaOpen.store(true, ordering: .releasing)
                        case .answer(let answer):
                            socket.send(answer, to: relay)
                            // Audio sent from now on reaches the relay after the answer that binds us.
                            mediaOpen.store(true, ordering: .releasing)
                        case .ignored:
                            break
                        }
                        continue
                    }
                    guard hasOutput || video != nil else { continue }
                    // When the kernel had it (CLOCK_REALTIME) on the monotonic clock.
                    let stamped = st.batch.arrivalNanoseconds(i)
                    let arrival = stamped > 0 && stamped <= realNow ? now &- UInt64(realNow - stamped) : now
                    count(st.stage.receive(st.batch.mutableDatagram(i), length: st.batch.length(i), ownSSRC: ssrc, arrival: arrival, deliver: deliver))
                }
                if n < st.batch.capacity { break }
            }
            st.stage.release(now: now, deliver: deliver)
            video?.sweepDeparted()
        }
    }

    /// How many senders' video this engine decodes now (tests).
    var videoReceiverCount: Int { receiveState.withLock { _ in video?.receiverCount ?? 0 } }

    private func deliver(_ h: RTPHeader, _ datagram: UnsafeRawBufferPointer, _ arrival: UInt64) {
        if h.payloadType == VP8Payload.payloadType {
            video?.receive(h, datagram)
            return
        }
        guard hasOutput else { return }  // an engine that plays nothing keeps no jitter buffers
        guard receiver.insert(h, datagram: datagram, arrival: arrival) else { return }
        probe?.received(ssrc: h.ssrc, sequence: h.sequenceNumber, at: arrival)
    }
}
