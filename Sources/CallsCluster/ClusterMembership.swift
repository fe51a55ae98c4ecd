import CallsCore
import CallsRedis
import Foundation

/// This node's place in the cluster (`--redis`): every second it tells the registry
/// (`NodeRegistry`, in Redis) where it is, its load (participants, CPU) and the rooms it holds;
/// on a clean stop it leaves at once. Redis going away is logged once (and once when it is back):
/// calls on this node are not affected, the next heartbeat after Redis returns re-registers.
///
/// Thread rules: `start`/`stop` from the server's owner. The heartbeat runs on its own queue
/// (`callroom.cluster`) with its own Redis connection; lookups and room placement (`nodes`,
/// `place`, `placeRinging`, `lookup`: called by the router for a join) run on another
/// (`callroom.cluster.place`) with another connection — a join never waits behind a heartbeat
/// (which also reads the rooms' load), and a heartbeat never waits behind a placement.
package final class ClusterMembership: @unchecked Sendable {
    package let nodeID: String
    private let queue = DispatchQueue(label: "callroom.cluster")
    private let registry: NodeRegistry
    private let placementQueue = DispatchQueue(label: "callroom.cluster.place")
    private let placement: NodeRegistry
    private let describe: @Sendable () -> (url: String, media: String, participants: Int, rooms: [String])
    private let log: ServerLog
    /// This node's keys' fingerprint, refreshed in Redis with each heartbeat (`agreeOnKeys`).
    private let keysFingerprint: String?
    private var keysDiffer = false
    private var timer: DispatchSourceTimer?
    /// Heartbeats that cannot reach Redis, logged once a spell.
    private let outage: OutageLog
    private var lastCPU: (wall: UInt64, cpu: UInt64)?
    private var draining = false
    /// This node runs ringing (its heartbeat re-asserts that after a Redis restart).
    private var runsRinging = false
    /// Told (on the queue) the ids of the live nodes after each heartbeat that reached Redis.
    package var onLiveNodes: (@Sendable (Set<String>) -> Void)?

    package init(redis: String, nodeID: String, keysFingerprint: String? = nil, log: ServerLog,
         describe: @escaping @Sendable () -> (url: String, media: String, participants: Int, rooms: [String])) throws(RedisError) {
        self.nodeID = nodeID
        self.registry = NodeRegistry(redis: try RedisClient(address: redis))
        self.placement = NodeRegistry(redis: try RedisClient(address: redis))
        self.describe = describe
        self.keysFingerprint = keysFingerprint
        self.log = log
        outage = OutageLog(log, started: "redis unavailable: this node is not registered until it returns",
                           ended: "redis is back: registered again", fields: ["node": nodeID])
    }

    package func start(every seconds: Double = 1) {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now(), repeating: seconds)
        t.setEventHandler { [weak self] in self?.beat() }
        t.resume()
        timer = t
    }

    /// Leaves the cluster now (waits for the queue: the last heartbeat cannot come after it).
    package func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
            try? registry.leave(nodeID: nodeID)
        }
    }

    /// Stops beating without leaving (tests: a node that died; its entry expires with its TTL).
    package func abandon() { queue.sync { timer?.cancel(); timer = nil } }

    /// Takes no new rooms from now on (they go to other nodes); keeps the ones it has.
    package func drain() { queue.async { self.draining = true; self.beat() } }

    /// Every live node, as the registry has it.
    package func nodes() throws(RedisError) -> [ClusterNode] {
        let r: Result<[ClusterNode], RedisError> = placementQueue.sync { Result { () throws(RedisError) in try placement.liveNodes() } }
        return try r.get()
    }

    /// The node `session` lives on, placing it (on the least-loaded live node) when it is new
    /// or its node is gone. Nil: no node takes rooms. Blocks on the placement queue.
    package func place(session: String) throws(RedisError) -> String? {
        let r: Result<String?, RedisError> = placementQueue.sync { Result { () throws(RedisError) in try placement.place(session: session)?.id } }
        return try r.get()
    }

    /// The node that runs presence and ringing for the cluster, placing it when there is none
    /// alive. Blocks on the placement queue.
    package func placeRinging() throws(RedisError) -> String? {
        let r: Result<String?, RedisError> = placementQueue.sync { Result { () throws(RedisError) in try placement.placeRinging()?.id } }
        return try r.get()
    }

    /// This node runs presence and ringing now: its heartbeats say so again after a Redis restart.
    package func markRunsRinging() { queue.async { self.runsRinging = true } }

    /// The live node `session` lives on, if any (no placing).
    package func lookup(session: String) throws(RedisError) -> String? {
        let r: Result<String?, RedisError> = placementQueue.sync { Result { () throws(RedisError) in try placement.node(forSession: session)?.id } }
        return try r.get()
    }

    /// A room of this node ended: its entry in the room map goes (queued).
    package func release(session: String) {
        queue.async { [self] in
            do { try registry.release(session: session, nodeID: nodeID) } catch {
                log.warn("redis: a room's placement could not be released (it expires with this node)", ["session": session, "error": "\(error)"])
            }
        }
    }

    private func beat() {
        dispatchPrecondition(condition: .onQueue(queue))
        let d = describe()
        let node = ClusterNode(id: nodeID, url: d.url, mediaAddress: d.media, participants: d.participants,
                               cpuPercent: cpuPercent(), draining: draining)
        do {
            try registry.heartbeat(node, rooms: d.rooms, ringing: runsRinging)
            if let fp = keysFingerprint {
                // (Checked at start; differs only if Redis lost it and another node's keys came first.)
                let differ = try registry.agreeOnKeys(fp) != fp
                if differ && !keysDiffer { log.error("this node's keys are not the cluster's any more: tokens between them are refused", ["node": nodeID]) }
                keysDiffer = differ
            }
            if let onLiveNodes { onLiveNodes(Set(try registry.liveNodes().map(\.id))) }
            outage.succeeded()
        } catch {
            outage.failed(["error": "\(error)"])
        }
    }

    /// This process's CPU over the last interval (percent of one core).
    private func cpuPercent() -> Double {
        var u = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
        let cpu = UInt64(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1_000_000 + UInt64(u.ru_utime.tv_usec + u.ru_stime.tv_usec)
        let wall = monotonicNanoseconds() / 1000
        defer { lastCPU = (wall, cpu) }
        guard let last = lastCPU, wall > last.wall else { return 0 }
        return 100 * Double(cpu - last.cpu) / Double(wall - last.wall)
    }
}
