import CallsCore

/// A per-sender jitter buffer keyed by RTP sequence number. It absorbs network jitter and
/// reordering, drops late and duplicate packets, and tells the decoder what to do for each
/// playout tick: play a packet, recover a lost one from the next packet's in-band FEC, conceal
/// (PLC), or output silence.
///
/// It has no clock of its own: every call to `next()` is one playout tick of one frame, so
/// tests drive it deterministically with a virtual clock.
///
/// ```
/// insert(seq) ─▶ [slots by seq] ─▶ next(): buffering until `targetFrames` ─▶ playing:
///     slot[n] ─▶ .packet      slot[n+1] only ─▶ .recovered(FEC)      neither ─▶ .concealed
///     more than `maxFrames` queued ─▶ drop oldest (sender clock faster than ours)
///     `maxConcealFrames` of nothing ─▶ back to buffering (.silence)
/// ```
///
/// Adaptive depth: given arrival times and RTP timestamps, it keeps the RFC 3550 inter-arrival
/// jitter estimate and raises its target depth to cover three times that beyond a quarter frame
/// (the playout tick's own slack; never below `targetFrames`, the minimum — 1 by default, so the
/// start depth is the measured jitter's, not a configured guess). Playout starts only once
/// `warmupPackets` have come (their jitter measured, the first averaged rather than smoothed),
/// with the oldest of them dropped down to the target depth while they are quiet (a frame its
/// sender marked as voice, RFC 6464, is played: dropping the first words would also start the
/// decoder mid-stream, where SILK plays them at half level); when the queue stays two frames
/// deeper than the target for half a second it drops the next quiet frame to shrink back
/// (latency returns after a burst of jitter), and a voiced one only after `voicedShrinkTicks`
/// (continuous speech). A sender whose clock runs fast fills the queue and is trimmed the same
/// way; one that runs slow drains it and is concealed — clock drift costs at most one frame per
/// drift period.
/// Payloads live in preallocated slots (`slotCount` × `maxPayloadBytes`), so inserting and
/// playing allocate nothing in steady state: `insert(…payload: UnsafeRawBufferPointer…)` copies
/// into a free slot, `nextDecision()` names the slot to decode, and `payload(_:)` reads it.
///
/// Thread rules: owned by one thread at a time (`ReceiveMixer` guards it with its lock).
public final class JitterBuffer {
    /// A playout decision with the payload as an array (tests, and callers that may allocate).
    public enum Playout: Equatable, Sendable {
        case packet([UInt8])
        /// The expected packet is missing but the next one is here: decode it with FEC.
        case recovered(fromNext: [UInt8])
        case concealed
        case silence
    }

    /// A playout decision naming the slot to decode; the slot's bytes stay valid until the
    /// next `nextDecision()` or `insert`.
    public enum Decision: Equatable, Sendable {
        case packet(slot: Int)
        case recovered(fromNextSlot: Int)
        case concealed
        case silence
    }

    /// The largest payload a slot holds (an Opus packet is at most 1,275 bytes).
    public static let maxPayloadBytes = 1500

    public struct Statistics: Equatable, Sendable {
        public var received = 0
        public var played = 0
        public var late = 0
        public var duplicate = 0
        public var concealed = 0
        public var recovered = 0
        public var overflowDropped = 0
        public var resets = 0
        /// Frames dropped to shrink back to the target depth.
        public var shrunk = 0
        /// Packets that never came while later ones did (network loss, as opposed to a sender
        /// that stopped sending, e.g. muted).
        public var lost = 0
        /// Frames played from a redundant copy a later packet carried (their own packet was
        /// lost or late): network loss the listener did not hear.
        public var repaired = 0
        /// Redundant copies that came after their frame had been played or concealed.
        public var lateRepairs = 0
        /// Of `concealed` and `late`: frames concealed while waiting for a packet, and packets
        /// that came after their turn, whose transit then was more than
        /// `delayToleranceNanoseconds` longer than the sender's shortest of late — a sender,
        /// relay or path that stalled, not playout timing. The rest were packets that came as
        /// early as ever and still missed their frame: playout too close to arrival.
        public var delayed = 0
        /// Frames concealed after a sender's last packet (until it came back, or playout went
        /// quiet at `maxConcealFrames`), when the sender came back where it had left off with its
        /// clock moved on past them: it stopped sending (muted, or silence suppressed) — no loss,
        /// and not in `concealed`. A sender that never comes back (it left) is in neither.
        public var stopped = 0
        public init() {}
    }

    /// The minimum start depth (frames).
    public let targetFrames: Int
    /// Previous frames the sender's packets repeat (RFC 2198), as of its latest packet: from two
    /// on, the depth is kept at least one more than that, so the last copy of a lost frame can
    /// still arrive in time (`noteRedundancy`).
    public private(set) var redundancyDistance = 0
    public let maxFrames: Int
    public let maxConcealFrames: Int
    public let frameSamples: Int
    /// The current adaptive target depth (frames), ≥ `targetFrames`.
    public private(set) var adaptiveTarget: Int
    /// RFC 3550 inter-arrival jitter estimate, in nanoseconds.
    public private(set) var jitterNanoseconds: Double = 0
    private var lastTransit: Double?
    /// Transit differences the estimate has seen (its gain is 1/n until 16, then 1/16).
    private var jitterSamples = 0
    /// Packets received before playout first starts: the jitter they show sets the start depth.
    public let warmupPackets: Int
    private var startedOnce = false
    /// When the packet `next()` last returned as `.packet` arrived (monotonic ns), if known.
    public private(set) var lastPlayedArrival: UInt64?
    private var deepTicks = 0
    /// Frames beyond the target that the first start kept because they were voiced.
    private var startSurplus = 0
    /// Frames in a row whose own packet never came (repaired, recovered or concealed past), and
    /// the longest such run since `takeLongestLossRun()`.
    private var lossRun = 0
    private var longestLossRun = 0
    private var tally = Statistics()
    /// What happened so far. Frames concealed for a packet still awaited with nothing queued
    /// behind it are not in `concealed` yet: until something comes, a sender that stopped
    /// (muted, or gone) and a packet held up or lost look the same (`Statistics.stopped`).
    public var statistics: Statistics {
        var s = tally
        if slots.isEmpty, let w = awaited, w.sequence == nextSeq { s.concealed -= w.concealments }
        return s
    }
    public private(set) var isPlaying = false
    /// Queued packets: sequence number → slot.
    private var slots: [UInt16: Int]
    private var nextSeq: UInt16 = 0
    private var concealRun = 0
    /// Slot storage: bytes, lengths, arrival times, the free list, and the slot played last
    /// (freed at the next decision, so its bytes can be decoded first).
    public let slotCount: Int
    private let bytes: UnsafeMutableRawBufferPointer
    private var lengths: [Int]
    private var arrivalOf: [UInt64]
    private var free: [Int]
    private var playedSlot: Int?
    /// Slots filled from a redundant copy rather than their own packet.
    private var isRepair: [Bool]
    /// Slots whose packet its sender marked as voice (RFC 6464): dropped to shrink the queue
    /// only when it has stayed too deep for `voicedShrinkTicks`.
    private var isVoice: [Bool]
    /// Ticks of excess depth before a voiced frame is dropped (a quiet one goes after 25): 250
    /// (5 s at 20 ms), so speech waits for its next pause, and a sender whose clock runs up to
    /// 0.4 % fast (real ones: under 0.01 %) in continuous speech is still trimmed faster than it
    /// fills the queue.
    public static let voicedShrinkTicks = 250
    /// The last frames passed over as lost (FEC or concealment), to tell a copy that came too late.
    private var missed = RecentSequences()
    /// How much longer than its sender's shortest recent transit a packet that missed its
    /// frame took, at most, to count as playout's miss rather than a delay (`Statistics.delayed`).
    public let delayToleranceNanoseconds: UInt64
    /// The margin playout phase alignment leaves every packet (the SDK's `PlayoutPhase` keeps
    /// this one): a packet held up by less is never late unless playout cut it too fine.
    public static let defaultDelayToleranceNanoseconds: UInt64 = 4_000_000
    private var transitFloor = TransitFloor(window: 50)
    /// The frame concealments are waiting for, and how many it has cost so far: kept after
    /// playout goes quiet, until a packet says why it never came (`settle`).
    private var awaited: (sequence: UInt16, concealments: Int)?
    /// The newest packet stored: its sequence number and RTP timestamp.
    private var newest: (sequence: UInt16, timestamp: UInt32)?

    /// - Parameters:
    ///   - targetFrames: frames buffered before playout starts (the jitter margin + one).
    ///   - maxFrames: beyond this depth the oldest frames are dropped.
    ///   - maxConcealFrames: consecutive concealed frames before returning to silence.
    ///   - slotCount: packets held at once before the oldest are dropped (at least `maxFrames` + 2).
    ///   - warmupPackets: packets measured before the first playout (1: start on the first).
    ///   - delayToleranceNanoseconds: see `Statistics.delayed`.
    public init(targetFrames: Int = 2, maxFrames: Int = 15, maxConcealFrames: Int = 10, frameSamples: Int = 960, slotCount: Int = 64,
                warmupPackets: Int = 1, delayToleranceNanoseconds: UInt64 = JitterBuffer.defaultDelayToleranceNanoseconds) {
        self.delayToleranceNanoseconds = delayToleranceNanoseconds
        self.targetFrames = max(1, targetFrames)
        self.warmupPackets = max(1, warmupPackets)
        self.maxFrames = max(self.targetFrames + 1, maxFrames)
        self.maxConcealFrames = maxConcealFrames
        self.frameSamples = frameSamples
        adaptiveTarget = self.targetFrames
        self.slotCount = max(self.maxFrames + 2, slotCount)
        bytes = .allocate(byteCount: self.slotCount * Self.maxPayloadBytes, alignment: 8)
        lengths = Array(repeating: 0, count: self.slotCount)
        arrivalOf = Array(repeating: 0, count: self.slotCount)
        free = Array((0..<self.slotCount).reversed())
        isRepair = Array(repeating: false, count: self.slotCount)
        isVoice = Array(repeating: false, count: self.slotCount)
        slots = Dictionary(minimumCapacity: self.slotCount)
    }

    deinit { bytes.deallocate() }

    /// The bytes of a slot a decision named (valid until the next decision or insert).
    public func payload(_ slot: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[(slot * Self.maxPayloadBytes)..<(slot * Self.maxPayloadBytes + lengths[slot])])
    }

    private func release(_ slot: Int) { free.append(slot) }

    /// Inserts a packet with its arrival time (monotonic ns) and RTP timestamp, updating the
    /// jitter estimate and the adaptive target. `voice`: its sender marked it as voice (the
    /// RFC 6464 V flag; false when unsaid), which keeps it from being dropped to shrink the queue.
    public func insert(sequence: UInt16, payload: [UInt8], arrival: UInt64, timestamp: UInt32, voice: Bool = false) {
        payload.withUnsafeBytes { insert(sequence: sequence, payload: $0, arrival: arrival, timestamp: timestamp, voice: voice) }
    }

    /// The same, copying the payload into a free slot (no allocation).
    public func insert(sequence: UInt16, payload: UnsafeRawBufferPointer, arrival: UInt64, timestamp: UInt32, voice: Bool = false) {
        let transit = Double(arrival) - Double(timestamp) * 1e9 / 48_000
        if let last = lastTransit {
            var d = abs(transit - last)
            // A timestamp wrap (or a restarted sender) is not jitter.
            if d > 5e9 { d = jitterNanoseconds }
            jitterSamples += 1
            jitterNanoseconds += (d - jitterNanoseconds) / Double(min(jitterSamples, 16))
        }
        lastTransit = transit
        updateTarget()
        let delayed = transitFloor.delay(of: transit) > Double(delayToleranceNanoseconds)
        if let w = awaited { settle(w, sequence: sequence, timestamp: timestamp, delayed: delayed) }
        if newest.map({ SequenceNumber.distance(from: $0.sequence, to: sequence) > 0 }) ?? true { newest = (sequence, timestamp) }
        store(sequence: sequence, payload: payload, arrival: arrival, voice: voice, delayed: delayed)
    }

    /// A packet says why the frames concealed for `w.sequence` were. Its own packet, with its
    /// timestamp more than a frame past the packet before it: the sender stopped sending
    /// (muted; `Statistics.stopped`, out of `concealed`). Its own packet otherwise: it was held
    /// up (`delayed` if its transit says so). A later number once playout has gone quiet: the
    /// ones between never came while this one did (`lost`; while playing, playout counts them
    /// as it moves past). An older one leaves the question open.
    private func settle(_ w: (sequence: UInt16, concealments: Int), sequence: UInt16, timestamp: UInt32?, delayed: Bool) {
        let gap = SequenceNumber.distance(from: w.sequence, to: sequence)
        if gap == 0 {
            awaited = nil
            if let timestamp, let n = newest, n.sequence == sequence &- 1, timestamp &- n.timestamp > UInt32(frameSamples) {
                tally.concealed -= w.concealments
                tally.stopped += w.concealments
            } else if delayed {
                tally.delayed += w.concealments
            }
        } else if gap > 0, !isPlaying {
            awaited = nil
            if gap <= 1000 { tally.lost += gap }
        }
    }

    private func updateTarget() {
        let frameNs = Double(frameSamples) * 1e9 / 48_000
        // Three times the jitter (the whole spread of a uniform delay; twice misses its tail),
        // less the quarter frame the playout tick absorbs anyway: on a clean path (under 1/12
        // frame of jitter) one frame; 0…30 ms of delay at 20 ms frames (J ≈ 10 ms) three.
        let forJitter = Int(max(0, 3 * jitterNanoseconds / frameNs - 0.25).rounded(.up)) + 1
        // Two or more copies: hold enough for the last to come. One copy needs no floor: the next
        // packet is usually there, and when it is not, waiting for it deepens the queue by itself.
        let forRedundancy = redundancyDistance >= 2 ? redundancyDistance + 1 : 0
        adaptiveTarget = min(maxFrames - 1, max(targetFrames, forJitter, forRedundancy))
    }

    /// The sender's latest packet repeated `distance` previous frames (0: a plain packet).
    public func noteRedundancy(distance: Int) {
        guard distance != redundancyDistance else { return }
        redundancyDistance = max(0, min(RedundantAudio.maxBlocks, distance))
        updateTarget()
    }

    /// Inserts a redundant copy of frame `sequence` that a later packet carried: kept only when
    /// the frame's own packet has not come and its turn has not passed. No jitter update (the
    /// copy's arrival says nothing about its frame's timing), not counted as received.
    /// Before playout starts copies are ignored: they are of frames from before the first
    /// packet, and queuing them would start playout a frame (or more) later for good.
    public func insertRepair(sequence: UInt16, payload: UnsafeRawBufferPointer) {
        guard isPlaying else { return }
        let d = SequenceNumber.distance(from: nextSeq, to: sequence)
        if d < 0 { if missed.contains(sequence) { tally.lateRepairs += 1 }; return }
        if d > maxFrames { return }
        guard slots[sequence] == nil, payload.count <= Self.maxPayloadBytes, let slot = free.popLast() else { return }
        // A copy's own level is not carried: counted as voice, so shrinking never cuts a word
        // where a lost packet was repaired.
        place(sequence, payload, in: slot, arrival: 0, repair: true, voice: true)
    }

    /// Copies `payload` into the free `slot` and queues it as frame `sequence`.
    private func place(_ sequence: UInt16, _ payload: UnsafeRawBufferPointer, in slot: Int, arrival: UInt64, repair: Bool, voice: Bool) {
        UnsafeMutableRawBufferPointer(rebasing: bytes[(slot * Self.maxPayloadBytes)...]).copyMemory(from: payload)
        lengths[slot] = payload.count
        arrivalOf[slot] = arrival
        isRepair[slot] = repair
        isVoice[slot] = voice
        slots[sequence] = slot
    }

    /// Frames currently queued.
    public var depth: Int { slots.count }

    /// Inserts without timing (no jitter estimate, no arrival time).
    public func insert(sequence: UInt16, payload: [UInt8]) {
        if let w = awaited { settle(w, sequence: sequence, timestamp: nil, delayed: false) }
        payload.withUnsafeBytes { store(sequence: sequence, payload: $0, arrival: nil, voice: false, delayed: false) }
    }

    /// `delayed`: its transit was longer than the sender's shortest of late by more than the
    /// tolerance (`Statistics.delayed`).
    private func store(sequence: UInt16, payload: UnsafeRawBufferPointer, arrival: UInt64?, voice: Bool, delayed: Bool) {
        tally.received += 1
        if isPlaying {
            let d = SequenceNumber.distance(from: nextSeq, to: sequence)
            if d < 0 {
                if d < -1000 { restart() } else {
                    tally.late += 1
                    if delayed { tally.delayed += 1 }
                    return
                }
            } else if d > 1000 {
                restart()
            }
        }
        if let held = slots[sequence] {
            // The frame's own packet after a redundant copy of it: it takes the copy's place
            // (the same bytes; its arrival time is real; the frame was reordered, not lost).
            if isRepair[held] {
                arrivalOf[held] = arrival ?? 0
                isRepair[held] = false
                isVoice[held] = voice
                return
            }
            tally.duplicate += 1
            return
        }
        guard payload.count <= Self.maxPayloadBytes else { tally.overflowDropped += 1; return }
        if free.isEmpty {
            // Every slot is queued (a burst after a stall): the oldest goes, as on overflow.
            guard let oldest = oldestSequence else { return }
            drop(oldest)
        }
        guard let slot = free.popLast() else { return }
        place(sequence, payload, in: slot, arrival: arrival ?? 0, repair: false, voice: voice)
    }

    /// Drops the queued packet `seq` as overflow.
    private func drop(_ seq: UInt16) {
        guard let slot = slots.removeValue(forKey: seq) else { return }
        release(slot)
        tally.overflowDropped += 1
        if isPlaying && SequenceNumber.distance(from: nextSeq, to: seq) >= 0 { nextSeq = seq &+ 1 }
    }

    /// Drops the frame due next to shrink the queue, unless it is voice and `evenIfVoiced` is
    /// false (or it has not come). Returns whether it dropped one.
    private func shedNext(evenIfVoiced: Bool) -> Bool {
        guard let held = slots[nextSeq], evenIfVoiced || !isVoice[held] else { return false }
        slots.removeValue(forKey: nextSeq)
        release(held)
        nextSeq &+= 1
        tally.shrunk += 1
        return true
    }

    private func restart() {
        for slot in slots.values { release(slot) }
        slots.removeAll(keepingCapacity: true)
        isPlaying = false
        concealRun = 0
        startSurplus = 0
        awaited = nil
        tally.resets += 1
    }

    private var oldestSequence: UInt16? {
        guard let any = slots.keys.first else { return nil }
        return slots.keys.min { SequenceNumber.distance(from: any, to: $0) < SequenceNumber.distance(from: any, to: $1) }
    }

    /// The playout decision for the next frame, with the payload copied out.
    public func next() -> Playout {
        switch nextDecision() {
        case .packet(let slot): return .packet(Array(payload(slot)))
        case .recovered(let slot): return .recovered(fromNext: Array(payload(slot)))
        case .concealed: return .concealed
        case .silence: return .silence
        }
    }

    /// The playout decision for the next frame (no allocation).
    public func nextDecision() -> Decision {
        if let s = playedSlot {
            release(s)
            playedSlot = nil
        }
        if !isPlaying {
            guard tally.received >= warmupPackets || slots.count >= maxFrames else { return .silence }
            guard slots.count >= adaptiveTarget else { return .silence }
            // After the warm-up (the first start only): the frames beyond the target are the
            // call's first few, dropped while quiet rather than played late; the first voiced
            // one starts playout (deeper for now: the queue shrinks back in the next pause).
            let firstStart = warmupPackets > 1 && !startedOnce
            while firstStart && slots.count > adaptiveTarget, let oldest = oldestSequence {
                guard let held = slots[oldest], !isVoice[held], let slot = slots.removeValue(forKey: oldest) else { break }
                release(slot)
                tally.shrunk += 1
            }
            guard let oldest = oldestSequence else { return .silence }
            if firstStart { startSurplus = max(0, slots.count - adaptiveTarget) }
            startedOnce = true
            isPlaying = true
            nextSeq = oldest
            concealRun = 0
        }
        while slots.count > maxFrames, let oldest = oldestSequence { drop(oldest) }
        // Voiced frames kept at the start beyond the target: the first quiet frames to reach the
        // head go at once, down to the target (not to the target and one, as below).
        if startSurplus > 0 {
            if slots.count <= adaptiveTarget {
                startSurplus = 0
            } else if shedNext(evenIfVoiced: false) {
                startSurplus -= 1
            }
        }
        // Shrink back toward the target after sustained excess depth (25 ticks ≈ 0.5 s at 20 ms),
        // one frame at a time (the depth at a tick is noisy under jitter; 25 ticks of excess
        // are not): a quiet frame, or a voiced one once the excess has lasted `voicedShrinkTicks`.
        deepTicks = slots.count > adaptiveTarget + 1 ? deepTicks + 1 : 0
        if deepTicks >= 25, shedNext(evenIfVoiced: deepTicks >= Self.voicedShrinkTicks) { deepTicks = 0 }
        lastPlayedArrival = nil
        if let slot = slots.removeValue(forKey: nextSeq) {
            lastPlayedArrival = arrivalOf[slot] == 0 ? nil : arrivalOf[slot]
            playedSlot = slot
            nextSeq &+= 1
            concealRun = 0
            tally.played += 1
            if isRepair[slot] { tally.repaired += 1; lostOwnPacket() } else { lossRun = 0 }
            return .packet(slot: slot)
        }
        if let following = slots[nextSeq &+ 1] {
            missed.add(nextSeq)
            nextSeq &+= 1
            concealRun = 0
            tally.recovered += 1
            tally.lost += 1
            lostOwnPacket()
            return .recovered(fromNextSlot: following)
        }
        concealRun += 1
        if concealRun > maxConcealFrames && slots.isEmpty {
            isPlaying = false
            concealRun = 0
            tally.resets += 1
            // (The frames concealed for `awaited` are told once a packet says why it never
            // came: a sender that went quiet, muted, lost nothing.)
            return .silence
        }
        tally.concealed += 1
        if let waited = awaited, waited.sequence == nextSeq {
            awaited = (nextSeq, waited.concealments + 1)
        } else {
            awaited = (nextSeq, 1)
        }
        // Nothing queued: the packet is late, not lost (jitter, or a sender clock running slow).
        // Conceal without skipping it, which also deepens the queue by one frame. With later
        // packets queued, it is lost: move past it.
        if !slots.isEmpty {
            missed.add(nextSeq)
            nextSeq &+= 1
            tally.lost += 1
            lostOwnPacket()
        }
        return .concealed
    }

    private func lostOwnPacket() {
        lossRun += 1
        longestLossRun = max(longestLossRun, lossRun)
    }

    /// The longest run of consecutive frames lost on the network (their own packets never came,
    /// whether a copy repaired them or not) since the last call; a run still going is counted
    /// whole when it goes on into the next. What a sender sizes its redundancy by, beside the
    /// loss rate.
    public func takeLongestLossRun() -> Int {
        defer { longestLossRun = 0 }
        return longestLossRun
    }
}

/// The last 16 sequence numbers added, in a fixed ring (no allocation).
struct RecentSequences {
    private var ring = InlineArray<16, UInt16>(repeating: 0)
    private var count = 0
    private var next = 0

    mutating func add(_ s: UInt16) {
        ring[next] = s
        next = (next + 1) % 16
        count = min(count + 1, 16)
    }

    func contains(_ s: UInt16) -> Bool {
        for i in 0..<count where ring[i] == s { return true }
        return false
    }
}
