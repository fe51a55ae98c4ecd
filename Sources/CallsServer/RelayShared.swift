import CallsTransport
import Synchronization

/// Where each bound participant's media comes from, and the bind rate limits per source.
/// Written under `RelayShared.bindings` by the worker that accepted a bind; every worker reads
/// its own copy (adopted when `bindingsGeneration` moves), so destinations bound on one worker
/// are reachable from all of them.
struct RelayBindings: Sendable {
    var addressOf: [UInt64: SocketAddress] = [:]
    var memberAt: [SocketAddress: UInt64] = [:]
    var bindLimiters: [SocketAddress: RateLimiter] = [:]

    /// Drops the bindings of members no longer in `table`; returns whether any went.
    mutating func retain(_ table: RelayTable) -> Bool {
        var changed = false
        for (key, addr) in addressOf where table.members[key] == nil {
            addressOf[key] = nil
            memberAt[addr] = nil
            changed = true
        }
        if bindLimiters.count > 10_000 { bindLimiters.removeAll(keepingCapacity: true) }
        return changed
    }
}

/// State the relay's worker threads share. Every field is thread-safe; the hot path touches it
/// once per received batch (two atomic loads), never per packet.
final class RelayShared: Sendable {
    let counters: RelayCounters
    /// The newest membership snapshot (from the room registry) and its generation.
    let pendingTable = Mutex<RelayTable>(.empty)
    let tableGeneration = Atomic<UInt64>(0)
    let bindings = Mutex<RelayBindings>(RelayBindings())
    let bindingsGeneration = Atomic<UInt64>(0)
    /// Levels from every worker feed one tracker; worker 0 evaluates it.
    let speakers = Mutex<DominantSpeakerTracker>(DominantSpeakerTracker())
    let running = Atomic<Bool>(false)
    /// The kernel fast path, if attached. Whoever changes the bindings brings its maps in step
    /// (`syncFastPath`); worker 0 also harvests its counters and levels.
    let fastPath = Mutex<RelayFastPath?>(nil)
    /// RTP older than this when a worker reads it is stale and dropped (0: never).
    let maxDelayNanoseconds: Int64

    /// Brings the fast path's maps up to the newest table and bindings: all rooms, or only the
    /// room of `member` (what a bind changes). Any worker; called before a bind is acknowledged,
    /// so a new member hears the room from its first packet on.
    func syncFastPath(member: UInt64? = nil) {
        fastPath.withLock { fp in
            guard let fp else { return }
            let table = pendingTable.withLock { $0 }, bound = bindings.withLock { $0 }
            if let member {
                if let room = table.members[member]?.room { fp.sync(room: room, table, bound) }
            } else {
                fp.sync(table, bound)
            }
        }
    }

    init(workers: Int, maxDelayNanoseconds: Int64) {
        counters = RelayCounters(workers: workers)
        self.maxDelayNanoseconds = maxDelayNanoseconds
    }
}
