import CallsCore
import CallsTransport
import Synchronization

/// Where each bound participant's media comes from, and the bind rate limits per source.
/// The canonical copy lives in `RelayState`; each worker keeps its own, brought up to date by
/// the same changes in the same order.
struct RelayBindings: Sendable {
    var addressOf: [UInt64: SocketAddress] = [:]
    var memberAt: [SocketAddress: UInt64] = [:]
    var bindLimiters: [SocketAddress: RateLimiter] = [:]

    mutating func bind(_ key: UInt64, to address: SocketAddress) {
        if let old = addressOf[key], old != address { memberAt[old] = nil }
        addressOf[key] = address
        memberAt[address] = key
    }

    /// Drops the bindings of members that left.
    mutating func forget(_ keys: [UInt64]) {
        for k in keys {
            if let a = addressOf.removeValue(forKey: k), memberAt[a] == k { memberAt[a] = nil }
        }
    }
}

/// One change to the relay's membership or bindings, as each worker applies it.
enum RelayChange: Sendable {
    case patch(RelayPatch)
    case bound(key: UInt64, address: SocketAddress)
}

/// The relay's canonical membership and bindings, and what each worker has yet to apply.
struct RelayState: Sendable {
    var table = RelayTable()
    var bindings = RelayBindings()
    /// Changes per worker, in order; a worker takes its list whole (an O(1) swap).
    var inboxes: [[RelayChange]]
    /// A worker whose inbox overflowed (it was not running) copies the canonical state instead.
    var resync: [Bool]

    /// More changes than this waiting for one worker: drop them and resync it.
    static let inboxLimit = 65_536

    init(workers: Int) {
        inboxes = Array(repeating: [], count: workers)
        resync = Array(repeating: false, count: workers)
    }

    mutating func post(_ change: RelayChange) {
        for i in inboxes.indices {
            if inboxes[i].count >= Self.inboxLimit {
                inboxes[i] = []
                resync[i] = true
            }
            if !resync[i] { inboxes[i].append(change) }
        }
    }
}

/// State the relay's worker threads share. Every field is thread-safe; the hot path touches it
/// once per received batch (an atomic load), never per packet.
final class RelayShared: Sendable {
    let counters: RelayCounters
    /// Membership and bindings; `generation` moves whenever a change is posted.
    let state: Locked<RelayState>
    let generation = Atomic<UInt64>(0)
    /// Levels from every worker feed one tracker; worker 0 evaluates it.
    let speakers = Locked<DominantSpeakerTracker>(DominantSpeakerTracker())
    let running = Atomic<Bool>(false)
    /// The kernel fast path, if attached. Whoever changes the bindings brings its maps in step
    /// (`syncFastPath`); worker 0 also harvests its counters and levels.
    /// Lock order: `fastPath` before `state`.
    let fastPath = Locked<RelayFastPath?>(nil)
    /// RTP older than this when a worker reads it is stale and dropped (0: never).
    let maxDelayNanoseconds: Int64

    init(workers: Int, maxDelayNanoseconds: Int64) {
        counters = RelayCounters(workers: workers)
        state = Locked(RelayState(workers: workers))
        self.maxDelayNanoseconds = maxDelayNanoseconds
    }

    /// Applies one room's new membership (any thread; the room registry's).
    func apply(_ patch: RelayPatch) {
        let removed = state.withLock { s -> [UInt64] in
            let removed = s.table.apply(patch)
            s.bindings.forget(removed)
            s.post(.patch(patch))
            return removed
        }
        if !removed.isEmpty { speakers.withLock { $0.forget(removed) } }
        generation.add(1, ordering: .releasing)
    }

    /// Records a bind from `address` for the member holding `token` with `ssrc`, if the token
    /// is current and the source is within its bind rate. Returns the member, or why not.
    func bind(token: BindToken, ssrc: UInt32, from address: SocketAddress, now: UInt64) -> BindOutcome {
        let outcome = state.withLock { s -> BindOutcome in
            guard let key = s.table.byToken[token], let member = s.table.members[key], member.ssrc == ssrc else { return .badToken }
            var limiter = s.bindings.bindLimiters[address] ?? RateLimiter(capacity: 20, perSecond: 10)
            let ok = limiter.allow(now: now)
            if s.bindings.bindLimiters.count > 10_000 { s.bindings.bindLimiters.removeAll(keepingCapacity: true) }
            s.bindings.bindLimiters[address] = limiter
            guard ok else { return .rateLimited }
            s.bindings.bind(key, to: address)
            s.post(.bound(key: key, address: address))
            return .bound(member)
        }
        if case .bound = outcome { generation.add(1, ordering: .releasing) }
        return outcome
    }

    enum BindOutcome { case bound(RelayTable.Member), badToken, rateLimited }

    /// Takes worker `index`'s pending changes; `resync` when it must copy the whole state
    /// (`table`, `bindings`) instead.
    func takeChanges(worker index: Int) -> (changes: [RelayChange], resync: (RelayTable, RelayBindings)?) {
        state.withLock { s in
            var mine: [RelayChange] = []
            swap(&mine, &s.inboxes[index])
            guard s.resync[index] else { return (mine, nil) }
            s.resync[index] = false
            return ([], (s.table, s.bindings))
        }
    }

    /// Brings the fast path's maps up to the canonical table and bindings for `rooms` (nil:
    /// every room). Any worker; a bind does this for its member's room before it is
    /// acknowledged, so a new member hears the room from its first packet on.
    func syncFastPath(rooms: Set<Int>?) {
        fastPath.withLock { fp in
            guard let fp else { return }
            state.withLock { s in
                if let rooms {
                    for r in rooms { fp.sync(room: r, s.table, s.bindings) }
                } else {
                    fp.sync(s.table, s.bindings)
                }
            }
        }
    }
}
