import Foundation
import CallsRedis

/// One callroomd node as the cluster sees it: where clients and other nodes reach it, and its load.
public struct ClusterNode: Codable, Sendable, Equatable {
    public var id: String
    /// Its REST + signalling base URL, and its relay's media address (`HOST:PORT`, the public one).
    public var url: String
    public var mediaAddress: String
    public var participants: Int
    public var cpuPercent: Double
    /// Draining (SIGTERM with `--drain`): takes no new rooms, keeps the ones it has.
    public var draining: Bool

    public init(id: String, url: String, mediaAddress: String, participants: Int = 0, cpuPercent: Double = 0, draining: Bool = false) {
        self.id = id; self.url = url; self.mediaAddress = mediaAddress
        self.participants = participants; self.cpuPercent = cpuPercent; self.draining = draining
    }
}

/// The cluster's registry in Redis, the way LiveKit's multi-node routing keeps it: each node
/// registers with a heartbeat and its load; a room is placed on the least-loaded live node when
/// it first starts, and the room → node map lives in Redis.
///
/// ```
///  callroom:node:{id}      ClusterNode JSON, expiring `ttlMs` after the node's last heartbeat
///  callroom:nodes          the set of node ids (an id whose key expired is a dead node: dropped on read)
///  callroom:room:{session} the id of the node the room lives on
///
///  heartbeat(node, rooms) ─▶ SET node PX ttl; SADD nodes; SET room NX for each of its rooms
///                            (after a Redis restart the map is whole again within a heartbeat)
///  place(session)         ─▶ EVAL: the room's node if it is alive, else the candidate (the least
///                            loaded live node that is not draining) — atomic: nodes placing the
///                            same room at once agree on one
/// ```
/// A node that dies stops refreshing its key: `ttlMs` later it is gone, and the next `place` of
/// each of its rooms puts the room on a live node.
///
/// Thread rules: one owner at a time (the RedisClient is not thread-safe); callers serialise.
public final class NodeRegistry: Sendable {
    public let redis: RedisClient
    public let ttlMs: Int
    package static let nodePrefix = "callroom:node:"
    package static let nodesKey = "callroom:nodes"
    package static let roomPrefix = "callroom:room:"
    /// Rooms placed on a node since its last heartbeat (a count; the heartbeat clears it).
    package static let placedPrefix = "callroom:placed:"

    public init(redis: RedisClient, ttlMs: Int = 3000) {
        self.redis = redis
        self.ttlMs = ttlMs
    }

    /// The node that runs presence and ringing for the whole cluster.
    package static let ringingKey = "callroom:ringing"

    /// Registers (or refreshes) `node` and re-asserts the rooms it holds (and ringing, when it runs it).
    public func heartbeat(_ node: ClusterNode, rooms: [String] = [], ringing: Bool = false) throws(RedisError) {
        guard let json = try? JSONEncoder().encode(node) else { throw .reply("cannot encode the node") }
        try redis.command(["SET", Self.nodePrefix + node.id, String(decoding: json, as: UTF8.self), "PX", "\(ttlMs)"])
        try redis.command(["SADD", Self.nodesKey, node.id])
        try redis.command(["DEL", Self.placedPrefix + node.id])  // (its participants count them now)
        for r in rooms { try redis.command(["SET", Self.roomPrefix + r, node.id, "NX"]) }
        if ringing { try redis.command(["SET", Self.ringingKey, node.id, "NX"]) }
    }

    /// Whose keys the cluster runs on (`callroom:keys`, a fingerprint of them, not the keys).
    package static let keysKey = "callroom:keys"

    /// The cluster's keys fingerprint: `fingerprint` when no live node has set one (it is set),
    /// else the one they set. Refreshed with the node TTL while a node with those keys beats, so
    /// the cluster forgets it once every node has stopped (new keys for all are then taken).
    public func agreeOnKeys(_ fingerprint: String) throws(RedisError) -> String {
        let script = """
            local cur = redis.call('GET', KEYS[1])
            if not cur then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return ARGV[1] end
            if cur == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
            return cur
            """
        guard let agreed = try redis.command(["EVAL", script, "1", Self.keysKey, fingerprint, "\(ttlMs)"]).string else {
            throw .reply("no keys fingerprint")
        }
        return agreed
    }

    /// Another live node that runs with `id`, or nil once `id` is free. A node starting after a
    /// crash finds its own last entry still there for up to the TTL: an entry nobody refreshes
    /// runs out (nil, after at most `ttlMs`); one whose time to live goes up again is beaten by
    /// a live node — returned, at once. Blocks the caller while it watches.
    public func liveHolder(of id: String) throws(RedisError) -> ClusterNode? {
        let key = Self.nodePrefix + id
        var last: Int64?
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(ttlMs + 1000) * 1_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            guard let value = try redis.command(["GET", key]).string else { return nil }
            let left = try redis.command(["PTTL", key]).integer ?? -2
            if left < 0 { return nil }  // (gone between the two, or no expiry: not a heartbeat's)
            if let last, left > last + 50 { return try? JSONDecoder().decode(ClusterNode.self, from: Data(value.utf8)) }
            last = left
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }

    /// Leaves the cluster now (a clean stop): its entry goes at once, not after the TTL.
    public func leave(nodeID: String) throws(RedisError) {
        try redis.command(["DEL", Self.nodePrefix + nodeID])
        try redis.command(["SREM", Self.nodesKey, nodeID])
    }

    /// Every live node (dead ids are removed from the set as they are found).
    public func liveNodes() throws(RedisError) -> [ClusterNode] {
        let ids = try redis.command(["SMEMBERS", Self.nodesKey]).array.compactMap(\.string).sorted()
        guard !ids.isEmpty else { return [] }
        let values = try redis.command(["MGET"] + ids.map { Self.nodePrefix + $0 }).array
        var live: [ClusterNode] = []
        for (id, v) in zip(ids, values) {
            if let s = v.string, let n = try? JSONDecoder().decode(ClusterNode.self, from: Data(s.utf8)) {
                live.append(n)
            } else {
                try redis.command(["SREM", Self.nodesKey, id])
            }
        }
        return live
    }

    /// The node `session` lives on, if it lives on a live node.
    public func node(forSession session: String) throws(RedisError) -> ClusterNode? { try node(at: Self.roomPrefix + session) }

    /// Where `session` lives: its node when that node is alive, else (a new room, or its node
    /// died) the least-loaded live node that is not draining. Nil when no node can take it.
    public func place(session: String) throws(RedisError) -> ClusterNode? { try place(at: Self.roomPrefix + session) }

    /// The node that runs presence and ringing (placed like a room: kept while it lives).
    public func placeRinging() throws(RedisError) -> ClusterNode? { try place(at: Self.ringingKey) }

    private func node(at key: String) throws(RedisError) -> ClusterNode? {
        guard let id = try redis.command(["GET", key]).string,
              let json = try redis.command(["GET", Self.nodePrefix + id]).string else { return nil }
        return try? JSONDecoder().decode(ClusterNode.self, from: Data(json.utf8))
    }

    private func place(at key: String) throws(RedisError) -> ClusterNode? {
        let nodes = try liveNodes()
        let candidates = Self.byLoad(nodes)
        guard let first = candidates.first else {
            // Nobody takes new rooms: a room already on a live (draining) node stays there.
            return try node(at: key)
        }
        // Loads are a heartbeat old: a storm of new rooms inside one second would all go to the
        // same node. So the script adds the rooms placed on each node since its last heartbeat
        // (`callroom:placed:{id}`, which that heartbeat clears) to its participants, and takes
        // the lowest (ties: the order given, i.e. CPU, then id) — placing rooms in turn.
        let script = """
            local cur = redis.call('GET', KEYS[1])
            if cur and redis.call('EXISTS', ARGV[1] .. cur) == 1 then return cur end
            local best, bestScore = nil, nil
            for i = 4, #ARGV, 2 do
              local placed = tonumber(redis.call('GET', ARGV[2] .. ARGV[i]) or '0')
              local score = tonumber(ARGV[i + 1]) + placed
              if bestScore == nil or score < bestScore then best, bestScore = ARGV[i], score end
            end
            redis.call('SET', KEYS[1], best)
            redis.call('INCR', ARGV[2] .. best)
            redis.call('PEXPIRE', ARGV[2] .. best, ARGV[3])
            return best
            """
        let args = ["EVAL", script, "1", key, Self.nodePrefix, Self.placedPrefix, "\(ttlMs)"]
            + candidates.flatMap { [$0.id, "\($0.participants)"] }
        let winner = try redis.command(args).string
        return nodes.first { $0.id == winner } ?? first
    }

    /// The room ended on `nodeID`: its entry goes (only if it is still that node's).
    public func release(session: String, nodeID: String) throws(RedisError) {
        let script = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
        try redis.command(["EVAL", script, "1", Self.roomPrefix + session, nodeID])
    }

    /// The node a new room goes to: not draining, fewest participants, then least CPU, then by id
    /// (so every node computes the same answer from the same registry).
    public static func leastLoaded(_ nodes: [ClusterNode]) -> ClusterNode? { byLoad(nodes).first }

    /// The nodes that take new rooms, least loaded first (`leastLoaded`'s order).
    package static func byLoad(_ nodes: [ClusterNode]) -> [ClusterNode] {
        nodes.filter { !$0.draining }.sorted { a, b in
            if a.participants != b.participants { return a.participants < b.participants }
            if a.cpuPercent != b.cpuPercent { return a.cpuPercent < b.cpuPercent }
            return a.id < b.id
        }
    }
}
