import CallsCore
import CallsSecurity
import CallsTransport
import Synchronization

/// Where each bound participant's media comes from, and the bind rate limits per source.
/// The canonical copy lives in `RelayState`; each worker keeps its own, brought up to date by
/// the same changes in the same order.
package struct RelayBindings: Sendable {
    package var addressOf: [UInt64: SocketAddress] = [:]
    package var memberAt: [SocketAddress: UInt64] = [:]
    package var bindLimiters: [SocketAddress: RateLimiter] = [:]
    /// Consent (canonical copy only): when each bound member last answered a challenge, when
    /// it was last challenged, and the challenges awaiting an answer by the address they went to.
    package var consentAt: [UInt64: UInt64] = [:]
    package var challengedAt: [UInt64: UInt64] = [:]
    package var challenges: [SocketAddress: PendingChallenge] = [:]

    package struct PendingChallenge: Sendable {
        package var key: UInt64
        package var nonce: [UInt8]
        package var sentAt: UInt64
    }

    /// Sends `address` a fresh challenge for `key` (or, within a second, the one in flight, so a
    /// re-sent bind does not invalidate the answer on its way): the datagram to send.
    package mutating func challenge(_ key: UInt64, ssrc: UInt32, at address: SocketAddress, now: UInt64) -> [UInt8] {
        if let c = challenges[address], c.key == key, now &- c.sentAt < 1_000_000_000 {
            return MediaBinding.encodeChallenge(.init(ssrc: ssrc, nonce: c.nonce))
        }
        let nonce = Crypto.randomBytes(MediaBinding.nonceLength)
        challenges[address] = PendingChallenge(key: key, nonce: nonce, sentAt: now)
        return MediaBinding.encodeChallenge(.init(ssrc: ssrc, nonce: nonce))
    }

    package mutating func bind(_ key: UInt64, to address: SocketAddress) {
        if let old = addressOf[key], old != address { memberAt[old] = nil }
        addressOf[key] = address
        memberAt[address] = key
    }

    /// Stops media to and from a member's address (its consent lapsed); it may bind again.
    package mutating func unbind(_ key: UInt64) {
        if let a = addressOf.removeValue(forKey: key), memberAt[a] == key { memberAt[a] = nil }
        consentAt[key] = nil
        challengedAt[key] = nil
    }

    /// Drops the bindings of members that left.
    package mutating func forget(_ keys: [UInt64]) {
        for k in keys { unbind(k) }
    }
}

/// One change to the relay's membership or bindings, as each worker applies it.
package enum RelayChange: Sendable {
    case patch(RelayPatch)
    case bound(key: UInt64, address: SocketAddress)
    case unbound(key: UInt64)
}

/// The relay's canonical membership and bindings, and what each worker has yet to apply.
package struct RelayState: Sendable {
    package var table = RelayTable()
    package var bindings = RelayBindings()
    /// Media over signalling: each tunnelled member's sending budget.
    package var tunnelBudgets: [UInt64: SenderBudget] = [:]
    /// Changes per worker, in order; a worker takes its list whole (an O(1) swap).
    package var inboxes: [[RelayChange]]
    /// A worker whose inbox overflowed (it was not running) copies the canonical state instead.
    package var resync: [Bool]

    /// More changes than this waiting for one worker: drop them and resync it.
    package static let inboxLimit = 65_536

    package init(workers: Int) {
        inboxes = Array(repeating: [], count: workers)
        resync = Array(repeating: false, count: workers)
    }

    package mutating func post(_ change: RelayChange) {
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
package final class RelayShared: Sendable {
    package let counters: RelayCounters
    /// Membership and bindings; `generation` moves whenever a change is posted.
    package let state: Locked<RelayState>
    package let generation = Atomic<UInt64>(0)
    /// The `generation` whose changes worker 0 has brought into the fast path's maps (tests and
    /// the operator's view: the kernel forwards by the current membership once it catches up).
    package let fastPathGeneration = Atomic<UInt64>(0)
    /// Levels from every worker feed one tracker; worker 0 evaluates it.
    package let speakers = Locked<DominantSpeakerTracker>(DominantSpeakerTracker())
    package let running = Atomic<Bool>(false)
    /// The kernel fast path, if attached. Whoever changes the bindings brings its maps in step
    /// (`syncFastPath`); worker 0 also harvests its counters and levels.
    /// Lock order: `fastPath` before `state`.
    package let fastPath = Locked<RelayFastPath?>(nil)
    /// RTP older than this when a worker reads it is stale and dropped (0: never).
    package let maxDelayNanoseconds: Int64
    /// A bound address is challenged this often, and unbound when it has not answered for
    /// `consentTimeout` (RFC 7675's 5 s and 30 s by default).
    package let consentIntervalNanoseconds: UInt64
    package let consentTimeoutNanoseconds: UInt64
    /// What each member may send (every path).
    package let senderLimits: SenderLimits

    package init(workers: Int, maxDelayNanoseconds: Int64, consentIntervalMs: Int = 5000, consentTimeoutMs: Int = 30_000,
         senderLimits: SenderLimits = SenderLimits()) {
        self.senderLimits = senderLimits
        counters = RelayCounters(workers: workers)
        state = Locked(RelayState(workers: workers))
        self.maxDelayNanoseconds = maxDelayNanoseconds
        consentIntervalNanoseconds = UInt64(max(100, consentIntervalMs)) * 1_000_000
        consentTimeoutNanoseconds = UInt64(max(consentIntervalMs + 100, consentTimeoutMs)) * 1_000_000
    }

    /// Media over signalling: hands one packet to a member's signalling connection (the web
    /// server's send; set by the server before the relay starts), and the UDP socket packets
    /// from such members leave by.
    package let tunnelSink = Locked<(@Sendable (UInt64, [UInt8]) -> Void)?>(nil)
    package let tunnelSocket = Locked<UDPSocket?>(nil)

    /// Applies one room's new membership (any thread; the room registry's).
    package func apply(_ patch: RelayPatch) {
        let removed = state.withLock { s -> [UInt64] in
            let removed = s.table.apply(patch)
            s.bindings.forget(removed)
            // A member whose media goes over signalling gets nothing by UDP.
            for m in patch.members where m.tunnel != nil { s.bindings.unbind(m.key) }
            s.post(.patch(patch))
            return removed
        }
        if !removed.isEmpty { speakers.withLock { $0.forget(removed) } }
        generation.add(1, ordering: .releasing)
    }

    /// A bind from `address`: if its proof is its member's and the source is within its bind
    /// rate, the challenge to send back there (the same one again within a second, so a
    /// client re-sending its bind does not invalidate the answer in flight). Nothing is bound
    /// until the challenge is answered (`consent`).
    package func challenge(_ bind: MediaBinding.Bind, from address: SocketAddress, now: UInt64) -> ChallengeOutcome {
        state.withLock { s -> ChallengeOutcome in
            guard let key = s.table.bySSRC[bind.ssrc], let member = s.table.members[key],
                  member.consent?.verifies(bind) == true else { return .badProof }
            var limiter = s.bindings.bindLimiters[address] ?? RateLimiter(capacity: 20, perSecond: 10)
            let ok = limiter.allow(now: now)
            if s.bindings.bindLimiters.count > 10_000 { s.bindings.bindLimiters.removeAll(keepingCapacity: true) }
            s.bindings.bindLimiters[address] = limiter
            guard ok else { return .rateLimited }
            return .challenge(s.bindings.challenge(key, ssrc: bind.ssrc, at: address, now: now))
        }
    }

    package enum ChallengeOutcome { case challenge([UInt8]), badProof, rateLimited }

    /// A consent response from `address`: when it answers the challenge sent there, in time,
    /// with its member's MAC, media flows to and from that address (a new address replaces
    /// the old only now) and its consent is fresh again.
    package func consent(_ response: MediaBinding.Response, from address: SocketAddress, now: UInt64) -> ConsentOutcome {
        let outcome = state.withLock { s -> ConsentOutcome in
            guard let c = s.bindings.challenges[address], now &- c.sentAt <= consentTimeoutNanoseconds,
                  let member = s.table.members[c.key], member.tunnel == nil,
                  member.consent?.verifies(response, nonce: c.nonce) == true else { return .refused }
            s.bindings.challenges[address] = nil
            s.bindings.consentAt[c.key] = now
            if s.bindings.addressOf[c.key] == address { return .refreshed(member) }
            s.bindings.bind(c.key, to: address)
            s.bindings.challengedAt[c.key] = now
            s.post(.bound(key: c.key, address: address))
            return .bound(member)
        }
        if case .bound = outcome { generation.add(1, ordering: .releasing) }
        return outcome
    }

    package enum ConsentOutcome { case bound(RelayTable.Member), refreshed(RelayTable.Member), refused }

    /// Consent freshness, once a second from worker 0: the challenges due (each bound address
    /// every interval), and the members whose address stopped answering — unbound here, their
    /// rooms returned so the fast path drops them too.
    package func tendConsent(now: UInt64) -> (challenges: [(SocketAddress, [UInt8])], expired: Int, rooms: Set<Int>) {
        let result = state.withLock { s -> ([(SocketAddress, [UInt8])], Int, Set<Int>) in
            var due: [(SocketAddress, [UInt8])] = []
            var expired: [UInt64] = []
            for (key, address) in s.bindings.addressOf {
                let answered = s.bindings.consentAt[key] ?? 0
                if now &- answered > consentTimeoutNanoseconds {
                    expired.append(key)
                } else if now &- max(s.bindings.challengedAt[key] ?? 0, answered) >= consentIntervalNanoseconds, let m = s.table.members[key] {
                    s.bindings.challengedAt[key] = now
                    due.append((address, s.bindings.challenge(key, ssrc: m.ssrc, at: address, now: now)))
                }
            }
            var rooms = Set<Int>()
            for key in expired {
                if let r = s.table.members[key]?.room { rooms.insert(r) }
                s.bindings.unbind(key)
                s.post(.unbound(key: key))
            }
            if s.bindings.challenges.count > 1024 {
                s.bindings.challenges = s.bindings.challenges.filter { now &- $0.value.sentAt <= consentTimeoutNanoseconds }
            }
            return (due, expired.count, rooms)
        }
        if result.1 > 0 { generation.add(1, ordering: .releasing) }
        return result
    }

    /// One RTP packet that came over signalling connection `connection` (the web server's
    /// thread): forwarded as if it had come by UDP — to the room's UDP members from the relay's
    /// socket, to its other over-signalling members by their connections — after the same
    /// checks (a member of a room, its SSRC, not muted). Returns false when dropped.
    @discardableResult
    package func receiveTunnelled(_ datagram: [UInt8], from connection: UInt64, now: UInt64) -> Bool {
        guard datagram.count >= 12, datagram[0] >> 6 == 2 else {
            counters.droppedMalformed.add(1, ordering: .relaxed)
            return false
        }
        let ssrc = datagram.withUnsafeBytes { RTPPacket.ssrc(inDatagram: $0) }
        let plan = state.withLock { s -> (key: UInt64, udp: [SocketAddress], tunnels: [UInt64])? in
            guard let key = s.table.byTunnel[connection], let m = s.table.members[key] else { return nil }
            let admission = m.admission(of: ssrc)
            guard case .forward(let kind) = admission else {
                counters.countDrop(admission)
                return (key, [], [])
            }
            // The same budget as over UDP (a member's budget goes when it leaves the table).
            if s.tunnelBudgets.count > s.table.members.count { s.tunnelBudgets = s.tunnelBudgets.filter { s.table.members[$0.key] != nil } }
            var budget = s.tunnelBudgets[key] ?? SenderBudget(senderLimits, now: now)
            let within = budget.admit(kind, bytes: datagram.count, now: now)
            s.tunnelBudgets[key] = budget
            guard within else {
                counters.droppedRateLimited.add(1, ordering: .relaxed)
                return (key, [], [])
            }
            var udp: [SocketAddress] = [], tunnels: [UInt64] = []
            for other in s.table.rooms[m.room] ?? [] where other != key {
                guard m.sendsTo(other, kind) else { counters.videoWithheld.add(1, ordering: .relaxed); continue }
                if kind == .video { counters.videoForwarded.add(1, ordering: .relaxed) }
                if let t = s.table.members[other]?.tunnel { tunnels.append(t) } else if let a = s.bindings.addressOf[other] { udp.append(a) }
            }
            return (key, udp, tunnels)
        }
        guard let plan else {
            counters.droppedUnbound.add(1, ordering: .relaxed)
            return false
        }
        counters.received.add(1, ordering: .relaxed)
        counters.receivedBytes.add(UInt64(datagram.count), ordering: .relaxed)
        if let level = datagram.withUnsafeBytes({ MediaRelay.audioLevel($0) }) {
            speakers.withLock { $0.heard(plan.key, level: level, now: now) }
        }
        var sent = 0
        if !plan.udp.isEmpty, let socket = tunnelSocket.withLock({ $0 }) {
            for a in plan.udp where socket.send(datagram, to: a) { sent += 1 }
        }
        if !plan.tunnels.isEmpty, let sink = tunnelSink.withLock({ $0 }) {
            for t in plan.tunnels { sink(t, datagram) }
            sent += plan.tunnels.count
            counters.tunnelledOut.add(UInt64(plan.tunnels.count), ordering: .relaxed)
        }
        counters.forwarded.add(UInt64(sent), ordering: .relaxed)
        counters.forwardedBytes.add(UInt64(sent * datagram.count), ordering: .relaxed)
        counters.tunnelled.add(1, ordering: .relaxed)
        return true
    }

    /// Takes worker `index`'s pending changes; `resync` when it must copy the whole state
    /// (`table`, `bindings`) instead.
    package func takeChanges(worker index: Int) -> (changes: [RelayChange], resync: (RelayTable, RelayBindings)?) {
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
    package func syncFastPath(rooms: Set<Int>?) {
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
