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

    // Relay-thread state
    private var table = RelayTable.empty
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
    }

    private func loop() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        while running.load(ordering: .acquiring) {
            adoptSnapshotIfChanged()
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
        guard let others = table.rooms[member.room] else { return }
        for other in others where other != key {
            guard let addr = addressOf[other] else { continue }
            if socket.send(datagram, to: addr) {
                counters.forwarded.add(1, ordering: .relaxed)
                counters.forwardedBytes.add(UInt64(datagram.count), ordering: .relaxed)
            } else {
                counters.droppedSendFailed.add(1, ordering: .relaxed)
            }
        }
    }

    private func handleBind(_ datagram: UnsafeRawBufferPointer, from: SocketAddress) {
        guard let req = MediaBinding.parseBind(datagram), let token = BindToken(req.token),
              let key = table.byToken[token], let member = table.members[key], member.ssrc == req.ssrc else {
            counters.droppedBadBind.add(1, ordering: .relaxed)
            return
        }
        if let old = addressOf[key], old != from { memberAt[old] = nil }
        addressOf[key] = from
        memberAt[from] = key
        counters.binds.add(1, ordering: .relaxed)
        socket.send(MediaBinding.encodeAck(ssrc: member.ssrc), to: from)
    }
}
