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
    /// Consent responses that answered no challenge sent to their address, or with a wrong MAC.
    public let droppedBadConsent = Atomic<UInt64>(0)
    /// Bound addresses that stopped answering consent challenges and were unbound.
    public let consentExpired = Atomic<UInt64>(0)
    /// Packets received over signalling connections (members whose UDP is blocked), and
    /// copies sent to such members.
    public let tunnelled = Atomic<UInt64>(0)
    public let tunnelledOut = Atomic<UInt64>(0)
    public let droppedStale = Atomic<UInt64>(0)
    /// From a member a moderator muted: never forwarded, whatever the client does.
    public let droppedMuted = Atomic<UInt64>(0)
    /// Video: copies forwarded (included in `forwarded`), copies withheld from members that did
    /// not subscribe to the sender (its tile is not on their screen), packets of paused video.
    public let videoForwarded = Atomic<UInt64>(0)
    public let videoWithheld = Atomic<UInt64>(0)
    public let droppedVideoPaused = Atomic<UInt64>(0)
    /// Over the sender's packets or bytes a second (`SenderLimits`), on any path.
    public let droppedRateLimited = Atomic<UInt64>(0)

    /// Counts a packet `admission` dropped (nothing for one it forwards).
    package func countDrop(_ admission: RelayAdmission) {
        switch admission {
        case .forward: return
        case .ssrcMismatch: droppedSSRCMismatch.add(1, ordering: .relaxed)
        case .muted: droppedMuted.add(1, ordering: .relaxed)
        case .videoPaused: droppedVideoPaused.add(1, ordering: .relaxed)
        }
    }
    /// Packets the kernel fast path forwarded (also counted in `forwarded`), and its run time.
    public let fastPathForwarded = Atomic<UInt64>(0)
    public let fastPathRunNanoseconds = Atomic<UInt64>(0)
    public let dominantSpeakerChanges = Atomic<UInt64>(0)
    /// Datagrams received by each relay worker (how the kernel spread the senders).
    public var receivedPerWorker: [UInt64] { perWorker.map { $0.received.load(ordering: .relaxed) } }

    package final class WorkerCount: Sendable {
        package let received = Atomic<UInt64>(0)
        package init() {}
    }
    package let perWorker: [WorkerCount]

    package init(workers: Int) { perWorker = (0..<max(1, workers)).map { _ in WorkerCount() } }
}

/// The UDP media relay (an SFU for audio): forwards each RTP datagram from a bound participant
/// to every other bound participant of its room, unchanged. It never decodes.
///
/// ```
///                 SO_REUSEPORT group on one UDP port (the kernel hashes each sender to one socket)
///  UDP ─┬─▶ worker 0 ─┐   recvmmsg ─┬─ "CRB2" bind ─▶ proof ─▶ "CRC1" challenge ┄ "CRR1" answer ─▶ shared bindings ─▶ "CRA1"
///       ├─▶ worker 1 ─┤             └─ RTP ─▶ addr→member ─▶ SSRC ─▶ sendmmsg to the room's others
///       └─▶ worker N ─┘
///  room registry ──(RelayPatch: one room)──▶ canonical table + an inbox per worker ──▶ each worker
///                                             applies its inbox between batches (generation moved)
/// ```
/// Thread rules: `start`/`stop`/`close` from the owner; `update(_:)` from any thread (the
/// registry's queue); everything else happens on the worker threads, which allocate nothing per
/// packet and share only batch-granular state (`RelayShared`).
package final class MediaRelay: Sendable {
    private let shared: RelayShared
    private let workers: [RelayWorker]
    private let stopped = DispatchSemaphore(value: 0)
    package let port: Int

    package var counters: RelayCounters { shared.counters }

    /// Attaches the kernel fast path: the workers keep its maps in step. Before `start()`.
    package func attachFastPath(_ fastPath: RelayFastPath) { shared.fastPath.withLock { $0 = fastPath } }

    /// Called on worker 0 when a room's loudest speaker changes (room index, member key). Set
    /// before `start()`; it must only hand off (the registry hops to its queue).
    package var onDominantSpeaker: (@Sendable (Int, UInt64?) -> Void)? {
        get { workers[0].onDominantSpeaker }
        set { workers[0].onDominantSpeaker = newValue }
    }

    /// Binds `threads` sockets to `host:port` (0 picks a free port). With more than one thread
    /// the port is first claimed without `SO_REUSEPORT`, so a port another process holds is
    /// refused rather than silently shared. RTP that waited in a socket longer than
    /// `maxDelayMs` (0: no limit) is dropped instead of forwarded.
    package init(host: String, port: Int, threads: Int = 1, maxDelayMs: Int = 0,
         consentIntervalMs: Int = 5000, consentTimeoutMs: Int = 30_000, senderLimits: SenderLimits = SenderLimits()) throws(UDPSocketError) {
        let n = max(1, min(threads, 64))
        shared = RelayShared(workers: n, maxDelayNanoseconds: Int64(max(0, maxDelayMs)) * 1_000_000,
                             consentIntervalMs: consentIntervalMs, consentTimeoutMs: consentTimeoutMs, senderLimits: senderLimits)
        var sockets: [UDPSocket] = []
        if n == 1 {
            sockets = [try UDPSocket(host: host, port: port)]
        } else {
            // With port 0 another process may take the probed port before the group binds it:
            // probe again (a few times) rather than fail.
            var attempt = 0
            while sockets.isEmpty {
                attempt += 1
                let probe = try UDPSocket(host: host, port: port, receiveBufferBytes: 0)
                let chosen = Int(probe.localAddress.port)
                probe.close()
                do {
                    for _ in 0..<n { sockets.append(try UDPSocket(host: host, port: chosen, reusePort: true)) }
                } catch {
                    sockets.forEach { $0.close() }
                    sockets = []
                    if port != 0 || attempt >= 5 { throw error }
                }
            }
        }
        self.port = Int(sockets[0].localAddress.port)
        let shared = self.shared
        workers = sockets.enumerated().map { RelayWorker(index: $0.offset, socket: $0.element, shared: shared) }
    }

    /// Starts one thread per worker.
    package func start() {
        shared.running.store(true, ordering: .releasing)
        for w in workers {
            let t = Thread { [stopped] in
                w.loop()
                stopped.signal()
            }
            t.name = "callroom.relay.\(w.index)"
            t.start()
        }
    }

    /// Stops the workers (each within one 50 ms poll) and closes the sockets.
    package func stop() {
        guard shared.running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        for _ in workers { stopped.wait() }
        close()
    }

    /// Detaches the kernel fast path and closes the sockets of a relay that was never started
    /// (or has stopped).
    package func close() {
        shared.fastPath.withLock { fp in
            fp?.close()
            fp = nil
        }
        for w in workers { w.socket.close() }
    }

    /// Whether the fast path's maps hold every membership and binding change posted so far
    /// (worker 0 brings them in within one batch or 50 ms). True without a fast path.
    package var fastPathCaughtUp: Bool {
        guard shared.fastPath.withLock({ $0 != nil }) else { return true }
        return shared.fastPathGeneration.load(ordering: .acquiring) >= shared.generation.load(ordering: .acquiring)
    }

    /// Applies one room's new membership (the cost of that room, not of the server). Safe from
    /// any thread.
    package func apply(_ patch: RelayPatch) { shared.apply(patch) }

    /// Media over signalling: `sink` sends one packet to a connection (binary frame). Before `start()`.
    package func setTunnelSink(_ sink: @escaping @Sendable (UInt64, [UInt8]) -> Void) {
        shared.tunnelSink.withLock { $0 = sink }
        shared.tunnelSocket.withLock { $0 = workers[0].socket }
    }

    /// A packet a member sent over its signalling connection (the web server's thread).
    package func receiveTunnelled(_ datagram: [UInt8], from connection: UInt64) {
        shared.receiveTunnelled(datagram, from: connection, now: monotonicNanoseconds())
    }

    /// The RFC 6464 level (0 loud … 127 silent) in a datagram's one-byte header extension, if any.
    /// Reads in place; allocates nothing.
    package static func audioLevel(_ d: UnsafeRawBufferPointer) -> UInt8? { RTPPacket.audioLevel(inDatagram: d)?.level }
}
