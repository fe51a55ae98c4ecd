import CallsCore
import CallsTransport
import Synchronization

/// One relay thread and its socket of the relay's `SO_REUSEPORT` group. Receives datagrams in
/// batches (`recvmmsg`), forwards each RTP packet to every other bound member of its room with
/// one `sendmmsg`, and accepts binds. RTP that waited in the socket longer than the relay's
/// maximum delay (kernel arrival timestamps, `SO_TIMESTAMPNS`) is dropped as stale: under
/// overload the relay sheds its oldest work and stays current instead of falling further behind.
///
/// Thread rules: `loop()` runs on the worker's own thread and owns every stored property but
/// `socket` (closed by the relay after the loop ends) and `onDominantSpeaker` (set before start).
package final class RelayWorker: @unchecked Sendable {
    package let index: Int
    package let socket: UDPSocket
    package var onDominantSpeaker: (@Sendable (Int, UInt64?) -> Void)?
    private let shared: RelayShared
    private let receiver: UDPBatchReceiver
    private let sender = UDPBatchSender()

    private var table = RelayTable.empty
    private var bindings = RelayBindings()
    private var seenGeneration: UInt64 = 0
    /// Levels heard in the current batch, handed to the shared tracker once per batch.
    private var levels: [(key: UInt64, level: UInt8)] = []
    private var forwarded: UInt64 = 0
    private var forwardedBytes: UInt64 = 0
    private var sendFailed: UInt64 = 0
    private var videoForwarded: UInt64 = 0
    private var videoWithheld: UInt64 = 0
    /// Worker 0: rooms whose fast-path maps are behind (nil: all of them).
    private var fastPathDirty: Set<Int>? = nil
    private var lastHarvest: UInt64 = 0
    private var lastConsentCheck: UInt64 = 0
    /// Destinations of the datagram being forwarded that take media over signalling.
    private var tunnelTargets: [UInt64] = []
    /// Each sender's budget (`SenderLimits`). The kernel hashes a sender's address to one
    /// worker, so one worker sees all of a sender's packets.
    private var budgets: [UInt64: SenderBudget] = [:]
    private var rateLimited: UInt64 = 0
    /// The monotonic time of the batch being handled (one clock read a batch).
    private var batchNow: UInt64 = 0

    package init(index: Int, socket: UDPSocket, shared: RelayShared) {
        self.index = index
        self.socket = socket
        self.shared = shared
        let stamped = shared.maxDelayNanoseconds > 0 && socket.enableReceiveTimestamps()
        receiver = UDPBatchReceiver(capacity: 32, timestamps: stamped)
        levels.reserveCapacity(receiver.capacity)
    }

    package func loop() {
        // The kernel's thread name (top -H, /proc; at most 15 bytes): Foundation's `Thread.name` is not.
        ThreadName.set("callroom.relay\(index)")
        while shared.running.load(ordering: .acquiring) {
            refresh()
            if index == 0 {
                tendConsent()
                tendFastPath()
                evaluateSpeakers()
            }
            guard socket.waitReadable(timeoutMs: 50) else { continue }
            var rounds = 0
            while rounds < 8 {
                refresh()  // a join may have published a table while we waited: its bind must see it
                let n = receiver.receive(on: socket.fd)
                guard n > 0 else { break }
                rounds += 1
                var bytes: UInt64 = 0, stale: UInt64 = 0
                let limit = shared.maxDelayNanoseconds
                let oldest = limit > 0 ? UDPBatchReceiver.realtimeNanoseconds() - limit : 0
                batchNow = monotonicNanoseconds()
                for i in 0..<n {
                    let d = receiver.datagram(i)
                    bytes += UInt64(d.count)
                    // Stale RTP is dropped; binds ('C') are always handled.
                    if limit > 0, d.count > 0, !MediaBinding.isControl(d), case let t = receiver.arrivalNanoseconds(i), t > 0, t < oldest {
                        stale += 1
                        continue
                    }
                    handle(d, from: receiver.source(i))
                }
                if stale > 0 { shared.counters.droppedStale.add(stale, ordering: .relaxed) }
                publish(received: UInt64(n), bytes: bytes)
            }
        }
    }

    /// Applies the membership and binding changes posted since the last look, if any (one
    /// atomic load when nothing moved). Worker 0 notes which rooms the fast path must resync.
    private func refresh() {
        let g = shared.generation.load(ordering: .acquiring)
        guard g != seenGeneration else { return }
        seenGeneration = g
        let (changes, whole) = shared.takeChanges(worker: index)
        if let (t, b) = whole {
            table = t
            bindings = RelayBindings(addressOf: b.addressOf, memberAt: b.memberAt)
            budgets = budgets.filter { t.members[$0.key] != nil }
            fastPathDirty = nil
            return
        }
        for change in changes {
            switch change {
            case .patch(let p):
                let gone = table.apply(p)
                bindings.forget(gone)
                for k in gone { budgets[k] = nil }
                if index == 0 { fastPathDirty?.insert(p.room) }
            case .bound(let key, let address):
                bindings.bind(key, to: address)
                if index == 0, let room = table.members[key]?.room { fastPathDirty?.insert(room) }
            case .unbound(let key):
                bindings.unbind(key)
                if index == 0, let room = table.members[key]?.room { fastPathDirty?.insert(room) }
            }
        }
    }

    /// Adds this batch's counts to the shared counters and its levels to the shared tracker.
    private func publish(received: UInt64, bytes: UInt64) {
        let c = shared.counters
        c.received.add(received, ordering: .relaxed)
        if index < c.perWorker.count { c.perWorker[index].received.add(received, ordering: .relaxed) }
        c.receivedBytes.add(bytes, ordering: .relaxed)
        if forwarded > 0 {
            c.forwarded.add(forwarded, ordering: .relaxed)
            c.forwardedBytes.add(forwardedBytes, ordering: .relaxed)
            forwarded = 0
            forwardedBytes = 0
        }
        if sendFailed > 0 {
            c.droppedSendFailed.add(sendFailed, ordering: .relaxed)
            sendFailed = 0
        }
        if rateLimited > 0 {
            c.droppedRateLimited.add(rateLimited, ordering: .relaxed)
            rateLimited = 0
        }
        if videoForwarded > 0 || videoWithheld > 0 {
            c.videoForwarded.add(videoForwarded, ordering: .relaxed)
            c.videoWithheld.add(videoWithheld, ordering: .relaxed)
            videoForwarded = 0
            videoWithheld = 0
        }
        if !levels.isEmpty {
            let now = monotonicNanoseconds()
            shared.speakers.withLock { tracker in
                for l in levels { tracker.heard(l.key, level: l.level, now: now) }
            }
            levels.removeAll(keepingCapacity: true)
        }
    }

    private func handle(_ datagram: UnsafeRawBufferPointer, from: SocketAddress) {
        if MediaBinding.isControl(datagram) {
            handleBind(datagram, from: from)
            return
        }
        let c = shared.counters
        guard datagram.count >= 12, datagram[0] >> 6 == 2 else {
            c.droppedMalformed.add(1, ordering: .relaxed)
            return
        }
        guard let key = bindings.memberAt[from], let member = table.members[key] else {
            c.droppedUnbound.add(1, ordering: .relaxed)
            return
        }
        let admission = member.admission(of: RTPPacket.ssrc(inDatagram: datagram))
        guard case .forward(let kind) = admission else { return c.countDrop(admission) }
        let within = budgets[key, default: SenderBudget(shared.senderLimits, now: batchNow)].admit(kind, bytes: datagram.count, now: batchNow)
        guard within else {
            rateLimited += 1
            return
        }
        if kind == .audio, let level = MediaRelay.audioLevel(datagram) { levels.append((key, level)) }
        guard let others = table.rooms[member.room] else { return }
        // One sendmmsg per datagram for all its destinations (batches of 64).
        var queued = 0
        for other in others where other != key {
            guard member.sendsTo(other, kind) else { videoWithheld += 1; continue }
            if kind == .video { videoForwarded += 1 }
            guard let addr = bindings.addressOf[other] else {
                // Not bound by UDP: perhaps its media goes over signalling (looked up only then).
                if let t = table.members[other]?.tunnel { tunnelTargets.append(t) }
                continue
            }
            if !sender.add(addr) {
                flush(datagram, queued: queued)
                queued = 0
                sender.add(addr)
            }
            queued += 1
        }
        flush(datagram, queued: queued)
        if !tunnelTargets.isEmpty { tunnel(datagram) }
    }

    /// Hands a copy to each over-signalling destination's connection (the fallback path copies).
    private func tunnel(_ datagram: UnsafeRawBufferPointer) {
        defer { tunnelTargets.removeAll(keepingCapacity: true) }
        guard let sink = shared.tunnelSink.withLock({ $0 }) else { return }
        let copy = Array(datagram)
        for t in tunnelTargets { sink(t, copy) }
        forwarded += UInt64(tunnelTargets.count)
        forwardedBytes += UInt64(tunnelTargets.count * copy.count)
        shared.counters.tunnelledOut.add(UInt64(tunnelTargets.count), ordering: .relaxed)
    }

    private func flush(_ datagram: UnsafeRawBufferPointer, queued: Int) {
        guard queued > 0 else { return }
        let ok = sender.send(datagram, on: socket.fd)
        forwarded += UInt64(ok)
        forwardedBytes += UInt64(ok * datagram.count)
        if ok < queued { sendFailed += UInt64(queued - ok) }
    }

    /// Brings the fast path's maps up to date for the rooms that changed (leaves, moves), and every
    /// 50 ms adds its counts to the shared counters and its members' levels to the tracker.
    private func tendFastPath() {
        if fastPathDirty?.isEmpty != true {
            shared.syncFastPath(rooms: fastPathDirty)
            fastPathDirty = []
        }
        shared.fastPathGeneration.store(seenGeneration, ordering: .releasing)
        let now = monotonicNanoseconds()
        guard now &- lastHarvest >= 50_000_000 else { return }
        lastHarvest = now
        let harvest = shared.fastPath.withLock { fp in fp.map { ($0.statsDelta(), $0.runNanoseconds, $0.newLevels()) } }
        guard let (d, runNanoseconds, levels) = harvest else { return }
        let c = shared.counters
        if d.received > 0 {
            c.received.add(d.received, ordering: .relaxed)
            c.receivedBytes.add(d.receivedBytes, ordering: .relaxed)
            c.forwarded.add(d.forwarded, ordering: .relaxed)
            c.forwardedBytes.add(d.forwardedBytes, ordering: .relaxed)
            c.fastPathForwarded.add(d.forwarded, ordering: .relaxed)
        }
        if d.sendFailed > 0 { c.droppedSendFailed.add(d.sendFailed, ordering: .relaxed) }
        if d.rateLimited > 0 { c.droppedRateLimited.add(d.rateLimited, ordering: .relaxed) }
        if d.videoForwarded > 0 || d.videoWithheld > 0 {
            c.videoForwarded.add(d.videoForwarded, ordering: .relaxed)
            c.videoWithheld.add(d.videoWithheld, ordering: .relaxed)
        }
        c.fastPathRunNanoseconds.store(runNanoseconds, ordering: .relaxed)
        if !levels.isEmpty {
            shared.speakers.withLock { tracker in
                for l in levels { tracker.heard(l.key, level: l.level, now: l.at) }
            }
        }
    }

    private func evaluateSpeakers() {
        let now = monotonicNanoseconds()
        let t = table
        guard let changes = shared.speakers.withLock({ $0.evaluate(t, now: now) }) else { return }
        for (room, key) in changes {
            shared.counters.dominantSpeakerChanges.add(1, ordering: .relaxed)
            onDominantSpeaker?(room, key)
        }
    }

    /// Binds and consent (`MediaBinding`): a bind is answered with a challenge; only a right
    /// answer from the address the challenge went to binds it (and is acknowledged).
    private func handleBind(_ datagram: UnsafeRawBufferPointer, from: SocketAddress) {
        let c = shared.counters
        let now = monotonicNanoseconds()
        if let bind = MediaBinding.parseBind(datagram) {
            switch shared.challenge(bind, from: from, now: now) {
            case .challenge(let bytes): socket.send(bytes, to: from)
            case .badProof: c.droppedBadBind.add(1, ordering: .relaxed)
            case .rateLimited: c.droppedBindRateLimited.add(1, ordering: .relaxed)
            }
            return
        }
        guard let response = MediaBinding.parseResponse(datagram) else {
            c.droppedBadBind.add(1, ordering: .relaxed)
            return
        }
        switch shared.consent(response, from: from, now: now) {
        case .refused:
            c.droppedBadConsent.add(1, ordering: .relaxed)
        case .refreshed(let member):
            socket.send(MediaBinding.encodeAck(ssrc: member.ssrc), to: from)
        case .bound(let member):
            refresh()
            shared.syncFastPath(rooms: [member.room])
            c.binds.add(1, ordering: .relaxed)
            socket.send(MediaBinding.encodeAck(ssrc: member.ssrc), to: from)
        }
    }

    /// Worker 0, once a second (or a quarter of a shorter consent interval): challenges the
    /// bound addresses that are due, and stops media to those that stopped answering (here and
    /// in the fast path).
    private func tendConsent() {
        let now = monotonicNanoseconds()
        let period = min(1_000_000_000, shared.consentIntervalNanoseconds / 4)
        guard now &- lastConsentCheck >= period || lastConsentCheck == 0 else { return }
        lastConsentCheck = now
        let (due, expired, rooms) = shared.tendConsent(now: now)
        for (address, bytes) in due { socket.send(bytes, to: address) }
        guard expired > 0 else { return }
        shared.counters.consentExpired.add(UInt64(expired), ordering: .relaxed)
        refresh()
        shared.syncFastPath(rooms: rooms)
    }
}
