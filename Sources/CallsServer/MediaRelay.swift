import CallsCore
import CallsTransport
import Foundation
import Synchronization

/// Counters the relay keeps; read from any thread for `/metrics`.
public final class RelayCounters: Sendable {
    public let received = Atomic<UInt64>(0)
    public let receivedBytes = Atomic<UInt64>(0)
    public let forwarded = Atomic<UInt64>(0)
    public let forwardedBytes = Atomic<UInt64>(0)
    public let binds = Atomic<UInt64>(0)
    public let droppedUnbound = Atomic<UInt64>(0)
    public let droppedMalformed = Atomic<UInt64>(0)
    public let droppedBadBind = Atomic<UInt64>(0)
    public let droppedSSRCMismatch = Atomic<UInt64>(0)
    public let droppedSendFailed = Atomic<UInt64>(0)
    public let droppedBindRateLimited = Atomic<UInt64>(0)
    public let dominantSpeakerChanges = Atomic<UInt64>(0)
    init() {}
}

/// The UDP media relay (an SFU for audio): forwards each RTP datagram from a bound participant
/// to every other bound participant of its room, unchanged. It never decodes.
///
/// ```
///  UDP ─▶ relay thread ─┬─ bind "CRB1" ─▶ check token in snapshot ─▶ bind addr ─▶ ack "CRA1"
///                       └─ RTP ─▶ addr→member ─▶ SSRC check ─▶ sendto each other member
///  room registry ──(new RelayTable)──▶ Mutex + generation counter ──▶ picked up between batches
/// ```
/// Thread rules: `start`/`stop` from the owner; `update(_:)` from any thread (the registry's
/// queue); everything else happens on the relay thread, which allocates nothing per packet.
final class MediaRelay: @unchecked Sendable {
    let socket: UDPSocket
    let counters = RelayCounters()
    private let pending = Mutex<RelayTable>(.empty)
    private let generation = Atomic<UInt64>(0)
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// Called on the relay thread when a room's loudest speaker changes (room index, member
    /// key). Set before `start()`; it must only hand off (the registry hops to its queue).
    var onDominantSpeaker: (@Sendable (Int, UInt64?) -> Void)?

    // Relay-thread state
    private var table = RelayTable.empty
    private var speakers = DominantSpeakerTracker()
    private var bindLimiters: [SocketAddress: RateLimiter] = [:]
    private let batch = UDPBatchSender()
    private var seenGeneration: UInt64 = 0
    private var addressOf: [UInt64: SocketAddress] = [:]
    private var memberAt: [SocketAddress: UInt64] = [:]

    init(host: String, port: Int) throws(UDPSocketError) {
        socket = try UDPSocket(host: host, port: port)
    }

    var port: Int { Int(socket.localAddress.port) }

    func start() {
        running.store(true, ordering: .releasing)
        let t = Thread { [self] in self.loop() }
        t.name = "callroom.relay"
        t.start()
    }

    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        done.wait()
        socket.close()
    }

    /// Publishes a new membership snapshot. Safe from any thread.
    func update(_ table: RelayTable) {
        pending.withLock { $0 = table }
        generation.add(1, ordering: .releasing)
    }

    private func adoptSnapshotIfChanged() {
        let g = generation.load(ordering: .acquiring)
        guard g != seenGeneration else { return }
        seenGeneration = g
        table = pending.withLock { $0 }
        for (key, addr) in addressOf where table.members[key] == nil {
            addressOf[key] = nil
            memberAt[addr] = nil
        }
        speakers.retain(table)
        if bindLimiters.count > 10_000 { bindLimiters.removeAll(keepingCapacity: true) }
    }

    private func loop() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        while running.load(ordering: .acquiring) {
            adoptSnapshotIfChanged()
            evaluateSpeakers()
            guard socket.waitReadable(timeoutMs: 50) else { continue }
            // A join may have published a table while we waited: its bind must see it.
            adoptSnapshotIfChanged()
            var batch = 0
            while batch < 256, let (n, from) = socket.receive(into: buffer) {
                batch += 1
                handle(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from: from)
            }
        }
        done.signal()
    }

    private func handle(_ datagram: UnsafeRawBufferPointer, from: SocketAddress) {
        counters.received.add(1, ordering: .relaxed)
        counters.receivedBytes.add(UInt64(datagram.count), ordering: .relaxed)
        if datagram.count >= 1, datagram[0] == 0x43 {  // 'C': a CallRoom control datagram
            handleBind(datagram, from: from)
            return
        }
        guard datagram.count >= 12, datagram[0] >> 6 == 2 else {
            counters.droppedMalformed.add(1, ordering: .relaxed)
            return
        }
        guard let key = memberAt[from], let member = table.members[key] else {
            counters.droppedUnbound.add(1, ordering: .relaxed)
            return
        }
        let ssrc = UInt32(datagram[8]) << 24 | UInt32(datagram[9]) << 16 | UInt32(datagram[10]) << 8 | UInt32(datagram[11])
        guard ssrc == member.ssrc else {
            counters.droppedSSRCMismatch.add(1, ordering: .relaxed)
            return
        }
        if let level = Self.audioLevel(datagram) { speakers.heard(key, level: level, now: monotonicNanoseconds()) }
        guard let others = table.rooms[member.room] else { return }
        // One sendmmsg per datagram for all its destinations (batches of 64).
        var queued = 0
        for other in others where other != key {
            guard let addr = addressOf[other] else { continue }
            if !batch.add(addr) {
                flush(datagram, queued: queued)
                queued = 0
                batch.add(addr)
            }
            queued += 1
        }
        flush(datagram, queued: queued)
    }

    private func flush(_ datagram: UnsafeRawBufferPointer, queued: Int) {
        guard queued > 0 else { return }
        let ok = batch.send(datagram, on: socket.fd)
        counters.forwarded.add(UInt64(ok), ordering: .relaxed)
        counters.forwardedBytes.add(UInt64(ok * datagram.count), ordering: .relaxed)
        if ok < queued { counters.droppedSendFailed.add(UInt64(queued - ok), ordering: .relaxed) }
    }

    private func evaluateSpeakers() {
        let now = monotonicNanoseconds()
        guard let changes = speakers.evaluate(table, now: now) else { return }
        for (room, key) in changes {
            counters.dominantSpeakerChanges.add(1, ordering: .relaxed)
            onDominantSpeaker?(room, key)
        }
    }

    /// The RFC 6464 level (0 loud … 127 silent) in a datagram's one-byte header extension, if any.
    /// Reads in place; allocates nothing.
    static func audioLevel(_ d: UnsafeRawBufferPointer) -> UInt8? {
        guard d.count >= 16, d[0] & 0x10 != 0 else { return nil }
        let start = 12 + 4 * Int(d[0] & 0x0F)
        guard d.count >= start + 4, d[start] == 0xBE, d[start + 1] == 0xDE else { return nil }
        let end = start + 4 + 4 * (Int(d[start + 2]) << 8 | Int(d[start + 3]))
        guard d.count >= end else { return nil }
        var i = start + 4
        while i < end {
            let b = d[i]
            if b == 0 { i += 1; continue }
            let id = b >> 4, len = Int(b & 0x0F) + 1
            if id == 15 || i + 1 + len > end { return nil }
            if id == RTPPacket.audioLevelExtensionID { return d[i + 1] & 0x7F }
            i += 1 + len
        }
        return nil
    }

    private func handleBind(_ datagram: UnsafeRawBufferPointer, from: SocketAddress) {
        guard let req = MediaBinding.parseBind(datagram), let token = BindToken(req.token),
              let key = table.byToken[token], let member = table.members[key], member.ssrc == req.ssrc else {
            counters.droppedBadBind.add(1, ordering: .relaxed)
            return
        }
        var limiter = bindLimiters[from] ?? RateLimiter(capacity: 20, perSecond: 10)
        guard limiter.allow(now: monotonicNanoseconds()) else {
            bindLimiters[from] = limiter
            counters.droppedBindRateLimited.add(1, ordering: .relaxed)
            return
        }
        bindLimiters[from] = limiter
        if let old = addressOf[key], old != from { memberAt[old] = nil }
        addressOf[key] = from
        memberAt[from] = key
        counters.binds.add(1, ordering: .relaxed)
        socket.send(MediaBinding.encodeAck(ssrc: member.ssrc), to: from)
    }
}
