import CallsCore
import Synchronization

/// Everything a listener does with a room's audio, from received RTP to one mixed frame: a
/// jitter buffer, an Opus decoder, a gain and a level per sender, and the mixer (with its
/// limiter). The client's playback uses it; the server's recorder will too.
///
/// ```
///  receive thread:  insert(header, datagram) ─▶ lock ─▶ sender[ssrc].jitter buffer (payload copied into a slot)
///  playback thread: mixNext ─▶ lock: every sender's decision, its payload copied to the sender's scratch
///                   ─▶ (unlocked) decode / FEC / PLC ─▶ level ─▶ gain ─▶ Mixer + limiter ─▶ out
/// ```
/// Preallocated: after a sender's first packet, `insert` and `mixNext` allocate nothing, and
/// each takes the lock once (per packet, per frame).
///
/// Thread rules: `insert` from one thread at a time (the media engine reads the socket on its
/// receive thread and, just before each mix, on the playback thread, under one lock), `mixNext`
/// from one playback thread, the rest from any thread; shared state is behind one lock, and
/// each sender's decoder and scratch are the playback thread's alone.
public final class ReceiveMixer: @unchecked Sendable {
    /// One sender's receive state.
    final class Sender {
        let ssrc: UInt32
        /// Under the lock.
        let buffer: JitterBuffer
        var gain: Float
        var bytesReceived = 0
        var reported = JitterBuffer.Statistics()
        /// Under the lock: a report on this sender has gone (`lossSinceLastReport`, `firstReportsDue`).
        var everReported = false
        /// The playback thread's: the decoder, and this frame's payload copied out of the buffer.
        var decoder: OpusDecoder?
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: JitterBuffer.maxPayloadBytes, alignment: 8)
        var scratchCount = 0
        /// The second payload of a frame that takes two of this sender's packets (its packets
        /// are shorter than our frame: 10 ms packets into a 20 ms mix).
        let scratch2 = UnsafeMutableRawBufferPointer.allocate(byteCount: JitterBuffer.maxPayloadBytes, alignment: 8)
        var scratch2Count = 0
        /// The playback thread's: decoded audio not mixed yet (its packets are longer than our
        /// frame: a 20 ms packet is mixed over two 10 ms frames), and its packets' length (what
        /// a concealment or an FEC recovery makes).
        let pending: UnsafeMutableBufferPointer<Int16>
        var pendingCount = 0
        var packetSamples: Int
        /// The last decoded frame's level (dBFS, as float bits): written by playback, read by anyone.
        let level = Atomic<UInt32>(LevelMeter.silenceDBFS.bitPattern)
        /// The level its newest packet carries (RFC 6464, -dBov; 127: silence or none). Under the lock.
        var carriedLevel: UInt8 = 127
        /// The playback thread's: whether the last frame was decoded (it was among the loudest),
        /// and whether a frame was skipped since the decoder last ran.
        var decodedLast = false
        var skippedSinceDecode = false

        init(ssrc: UInt32, buffer: JitterBuffer, gain: Float, frameSamples: Int) {
            self.ssrc = ssrc
            self.buffer = buffer
            self.gain = gain
            packetSamples = frameSamples
            // Less than a frame left over, then at most two packets decoded onto it.
            pending = .allocate(capacity: frameSamples + 2 * OpusDecoder.maxPacketSamples)
        }

        deinit { scratch.deallocate(); scratch2.deallocate(); pending.deallocate() }
    }

    /// What a sender's frame takes: a packet decoded, recovered by FEC from the next, concealed,
    /// nothing (not playing), or nothing new (its last packet's audio covers this frame).
    private enum Step { case decode, recover, conceal, silence, buffered }

    public let frameSamples: Int
    public let maxSenders: Int
    /// With more senders sending than this, only this many are decoded and mixed: the loudest
    /// by the level each packet carries (RFC 6464; a sender decoded the frame before counts 6 dB
    /// louder, so near-equal talkers do not flap). The others cost no decode; their meters move
    /// by the levels their packets carry. (Conference bridges mix the few loudest the same way:
    /// nine people talking at once are not understood anyway.)
    public let loudest: Int
    /// Frames of a sender not decoded because others were louder (the playback thread's count).
    public let framesNotDecoded = Atomic<Int>(0)
    /// CPU time spent in Opus decoding (decode, FEC recovery, concealment), in nanoseconds of
    /// the playback thread (`threadCPUNanoseconds`, two readings a decoded frame).
    public let decodeCPUNanoseconds = Atomic<UInt64>(0)
    private let jitterTargetFrames: Int
    private let lock = Locked(State())
    private struct State {
        var senders: [UInt32: Sender] = [:]
        /// Only these senders are heard (the roster); nil: everyone.
        var active: Set<UInt32>?
        /// Gains set before (or after) a sender's first packet.
        var gains: [UInt32: Float] = [:]
        /// Packets refused because `maxSenders` were already heard.
        var refused = 0
        /// Redundant-audio payloads whose headers did not hold together (dropped).
        var malformed = 0
    }

    /// The playback thread's.
    private let mixer: Mixer
    private var steps: [(sender: Sender, step: Step, second: Step?, gain: Float, carried: UInt8)] = []
    private var chosen: [Bool] = []

    /// Packets a new sender's jitter buffer measures before it plays: 100 ms of them (5 of 20 ms,
    /// 10 of 10 ms), of the call's very first audio — what the jitter is decides the start depth.
    static func warmupPackets(frameSamples: Int) -> Int { max(1, AudioFormat.samples(ms: 100) / max(1, frameSamples)) }

    public init(frameSamples: Int, jitterTargetFrames: Int, maxSenders: Int = 64, loudest: Int = 4) {
        self.frameSamples = frameSamples
        self.jitterTargetFrames = jitterTargetFrames
        self.maxSenders = max(1, maxSenders)
        self.loudest = max(1, loudest)
        chosen.reserveCapacity(self.maxSenders)
        mixer = Mixer(frameSamples: frameSamples)
        steps.reserveCapacity(self.maxSenders)
        lock.withLock { $0.senders.reserveCapacity(self.maxSenders) }
    }


    // MARK: Receive thread

    /// Queues one received RTP packet (`header` parsed from `datagram`, which the caller
    /// reuses). Returns false when the sender is not heard (not in the roster, or one too many).
    @discardableResult
    public func insert(_ header: RTPHeader, datagram: UnsafeRawBufferPointer, arrival: UInt64) -> Bool {
        let payload = UnsafeRawBufferPointer(rebasing: datagram[header.payloadRange])
        return lock.withLock { s -> Bool in
            if let active = s.active, !active.contains(header.ssrc) { return false }
            let sender: Sender
            if let known = s.senders[header.ssrc] {
                sender = known
            } else {
                guard s.senders.count < maxSenders else { s.refused += 1; return false }
                sender = Sender(ssrc: header.ssrc, buffer: JitterBuffer(targetFrames: jitterTargetFrames, frameSamples: frameSamples,
                                                                             warmupPackets: Self.warmupPackets(frameSamples: frameSamples)),
                                gain: s.gains[header.ssrc] ?? 1, frameSamples: frameSamples)
                s.senders[header.ssrc] = sender
            }
            sender.bytesReceived += payload.count
            if let carried = header.audioLevel { sender.carriedLevel = carried.level }
            let buffer = sender.buffer
            let voice = header.audioLevel?.voiceActivity ?? false
            guard header.payloadType == RedundantAudio.payloadType else {
                buffer.noteRedundancy(distance: 0)
                buffer.insert(sequence: header.sequenceNumber, payload: payload, arrival: arrival, timestamp: header.timestamp, voice: voice)
                return true
            }
            // Redundant audio: this frame's packet, and copies of the frames before it for any
            // that have not come (RFC 2198; block j of n is the frame n - j before this one).
            guard let red = RedundantAudio.Layout(parsing: payload), red.primaryPayloadType == RTPPacket.opusPayloadType else {
                s.malformed += 1
                return true
            }
            buffer.noteRedundancy(distance: red.count)
            buffer.insert(sequence: header.sequenceNumber, payload: UnsafeRawBufferPointer(rebasing: payload[red.primary]),
                          arrival: arrival, timestamp: header.timestamp, voice: voice)
            for j in 0..<red.count where red[j].payloadType == RTPPacket.opusPayloadType {
                buffer.insertRepair(sequence: red.sequenceNumber(ofBlock: j, inPacket: header.sequenceNumber),
                                    payload: UnsafeRawBufferPointer(rebasing: payload[red[j].range]))
            }
            return true
        }
    }

    // MARK: Playback thread

    /// Decides, decodes and mixes the next frame from every sender into `out`; `extra` may add
    /// local sources (a test tone) to the mixer before it renders. Returns the shortest time a
    /// played packet waited in its buffer (nil: none played).
    @discardableResult
    public func mixNext(into out: UnsafeMutableBufferPointer<Int16>, now: UInt64, extra: (Mixer) -> Void = { _ in }) -> UInt64? {
        steps.removeAll(keepingCapacity: true)
        var waited: UInt64?
        lock.withLock { s in
            for sender in s.senders.values {
                // A sender's packets need not be our frame's length (someone on 10 ms frames in
                // a room on 20): a decision when its decoded audio runs short of a frame, two
                // when its packets are shorter than what is missing.
                let missing = frameSamples - sender.pendingCount
                var step = Step.buffered, second: Step?
                if missing > 0 {
                    step = decide(sender, into: sender.scratch, count: &sender.scratchCount, now: now, waited: &waited)
                    if step != .silence && sender.packetSamples < missing {
                        second = decide(sender, into: sender.scratch2, count: &sender.scratch2Count, now: now, waited: &waited)
                    }
                }
                steps.append((sender, step, second, sender.gain, sender.carriedLevel))
            }
        }
        chooseLoudest()
        mixer.reset()
        for i in steps.indices {
            let (sender, step, second, gain, carried) = steps[i]
            guard chosen[i] || step == .silence else {
                // Not among the loudest: the frame is passed over, its meter follows its packets.
                sender.decodedLast = false
                sender.skippedSinceDecode = true
                sender.pendingCount = 0
                framesNotDecoded.add(1, ordering: .relaxed)
                sender.level.store((-Float(carried)).bitPattern, ordering: .relaxed)
                continue
            }
            if sender.decoder == nil { sender.decoder = try? OpusDecoder() }
            guard let decoder = sender.decoder else { continue }
            if step != .silence && step != .buffered {
                if sender.skippedSinceDecode { decoder.reset(); sender.skippedSinceDecode = false }
                sender.decodedLast = true
            }
            decode(step, sender.scratch, sender.scratchCount, of: sender, with: decoder)
            if let second { decode(second, sender.scratch2, sender.scratch2Count, of: sender, with: decoder) }
            let n = min(frameSamples, sender.pendingCount)
            let frame = UnsafeBufferPointer(rebasing: sender.pending[0..<n])
            sender.level.store((n > 0 ? LevelMeter.rmsDBFS(frame) : LevelMeter.silenceDBFS).bitPattern, ordering: .relaxed)
            if n > 0 { mixer.add(frame, gain: gain) }
            // What is left (the rest of a longer packet) moves to the front for the next frame.
            let rest = sender.pendingCount - n
            if rest > 0, let base = sender.pending.baseAddress { base.update(from: base + n, count: rest) }
            sender.pendingCount = rest
        }
        steps.removeAll(keepingCapacity: true)
        extra(mixer)
        mixer.render(into: out)
        return waited
    }

    /// One playout decision of `sender`'s jitter buffer, its payload copied to `scratch` (under the lock).
    private func decide(_ sender: Sender, into scratch: UnsafeMutableRawBufferPointer, count: inout Int, now: UInt64,
                        waited: inout UInt64?) -> Step {
        let step: Step
        switch sender.buffer.nextDecision() {
        case .packet(let slot): step = .decode; copy(sender.buffer.payload(slot), to: scratch, count: &count)
        case .recovered(let slot): step = .recover; copy(sender.buffer.payload(slot), to: scratch, count: &count)
        case .concealed: step = .conceal
        case .silence: step = .silence
        }
        if let a = sender.buffer.lastPlayedArrival, a <= now { waited = min(waited ?? .max, now - a) }
        return step
    }

    /// Decodes one step's audio onto the end of `sender.pending` (the playback thread's).
    private func decode(_ step: Step, _ scratch: UnsafeMutableRawBufferPointer, _ count: Int, of sender: Sender, with decoder: OpusDecoder) {
        guard step != .silence && step != .buffered else { return }
        let room = UnsafeMutableBufferPointer(rebasing: sender.pending[sender.pendingCount...])
        // Concealment and FEC make exactly the missing packet's length.
        let exact = UnsafeMutableBufferPointer(rebasing: room.prefix(min(room.count, sender.packetSamples)))
        let packet = UnsafeBufferPointer(start: scratch.baseAddress?.assumingMemoryBound(to: UInt8.self), count: count)
        let cpu = threadCPUNanoseconds()
        let n: Int
        switch step {
        case .decode: n = decoder.decode(packet, into: room)
        case .recover: n = decoder.recover(from: packet, into: exact)
        case .conceal: n = decoder.conceal(into: exact)
        case .silence, .buffered: n = 0
        }
        decodeCPUNanoseconds.add(threadCPUNanoseconds() &- cpu, ordering: .relaxed)
        if step == .decode && n > 0 { sender.packetSamples = n }
        sender.pendingCount += n
    }

    /// Marks in `chosen` the senders to decode this frame: all, or the `loudest` with sound by
    /// the level their packets carry (no allocation: a few passes over a handful of senders).
    private func chooseLoudest() {
        chosen.removeAll(keepingCapacity: true)
        var sounding = 0
        for i in steps.indices where steps[i].step != .silence { sounding += 1 }
        for _ in steps.indices { chosen.append(sounding <= loudest) }
        guard sounding > loudest else { return }
        for _ in 0..<loudest {
            var best = -1, bestScore = Int.min
            for i in steps.indices where !chosen[i] && steps[i].step != .silence {
                let score = -Int(steps[i].carried) + (steps[i].sender.decodedLast ? 6 : 0)
                if score > bestScore { best = i; bestScore = score }
            }
            guard best >= 0 else { break }
            chosen[best] = true
        }
    }

    private func copy(_ payload: UnsafeRawBufferPointer, to scratch: UnsafeMutableRawBufferPointer, count: inout Int) {
        scratch.copyMemory(from: payload)
        count = payload.count
    }

    // MARK: Any thread

    /// Restricts playout to these senders (the roster); the others' state is dropped.
    public func setActive(_ ssrcs: Set<UInt32>) {
        lock.withLock { s in
            s.active = ssrcs
            for k in s.senders.keys where !ssrcs.contains(k) { s.senders[k] = nil }
        }
    }

    /// Playback gain for one sender (1 = as received, 0 = silent, up to 4).
    public func setVolume(_ gain: Float, ssrc: UInt32) {
        let g = min(4, max(0, gain))
        lock.withLock { s in
            s.gains[ssrc] = g
            s.senders[ssrc]?.gain = g
        }
    }

    /// The last played level of each sender (dBFS).
    public func levels() -> [UInt32: Float] {
        lock.withLock { s in s.senders.mapValues { Float(bitPattern: $0.level.load(ordering: .relaxed)) } }
    }

    /// Jitter-buffer counts per sender.
    public func statistics() -> [UInt32: JitterBuffer.Statistics] { lock.withLock { s in s.senders.mapValues(\.buffer.statistics) } }

    /// Per sender: jitter-buffer counts, RFC 3550 jitter (ms) and payload bytes received.
    public func figures() -> [UInt32: (statistics: JitterBuffer.Statistics, jitterMs: Double, bytes: Int)] {
        lock.withLock { s in s.senders.mapValues { ($0.buffer.statistics, $0.buffer.jitterNanoseconds / 1e6, $0.bytesReceived) } }
    }

    /// Loss per sender since the last call: packets lost on the network (not a sender that
    /// stopped, e.g. muted) over packets expected.
    public func lossSinceLastReport() -> [LossReport] {
        lock.withLock { s in s.senders.values.compactMap { Self.report(on: $0) } }
    }

    /// The first report on each sender heard for at least `frames` frames and not reported on
    /// yet: a sender that starts on a lossy path (a call's start, someone joining) is told
    /// within about half a second, not at the next regular report.
    public func firstReportsDue(afterFrames frames: Int) -> [LossReport] {
        lock.withLock { s in
            s.senders.values.compactMap { sender in
                let st = sender.buffer.statistics
                guard !sender.everReported, st.lost + st.played >= frames else { return nil }
                return Self.report(on: sender)
            }
        }
    }

    /// The sender's loss since its last report, and the next one counts from here (under the lock).
    private static func report(on sender: Sender) -> LossReport? {
        // Network loss: frames whose own packet never came, whether a redundant copy repaired
        // them or not (what the sender sizes its redundancy by).
        let now = sender.buffer.statistics, before = sender.reported
        let lost = now.lost - before.lost + now.repaired - before.repaired
        let total = now.lost - before.lost + (now.played - before.played)
        sender.reported = now
        guard total > 0 else { return nil }
        sender.everReported = true
        return LossReport(ssrc: sender.ssrc, lossPercent: 100 * Double(lost) / Double(total), burst: sender.buffer.takeLongestLossRun())
    }

    /// Packets refused because `maxSenders` senders were already heard.
    public var refusedPackets: Int { lock.withLock { $0.refused } }

    /// Redundant-audio packets dropped because their block headers overran the payload.
    public var malformedPackets: Int { lock.withLock { $0.malformed } }
}
