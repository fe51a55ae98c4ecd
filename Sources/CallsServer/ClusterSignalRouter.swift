import CallsCore
import CallsSecurity
import Foundation

/// The router of a node in a cluster (`--redis`), after LiveKit's `pkg/routing`: a room lives
/// on one node; a client may hold its signalling on any node. This node's clients' room
/// messages go to the room's node — here, or over the cluster bus — and the room's answers come
/// back the same way (`CallServer.send` publishes those for connections of other nodes).
/// Presence and ringing stay with the node holding the socket.
///
/// ```
///  client ─▶ node B: ClusterSignalRouter ──join──▶ NodeRegistry.place(session) ─▶ node A
///               │  rate limit, then by family        (Redis: callroom:room:{session})
///               ├─ room, A is here ─▶ LocalSignalRouter ─▶ RoomRegistry
///               └─ room, A elsewhere ─▶ ClusterBus ─▶ callroom:signal:A ─▶ A's router ─▶ A's RoomRegistry
///  A's RoomRegistry ─▶ send(to: B/7) ─▶ ClusterBus ─▶ callroom:signal:B ─▶ B's socket 7
/// ```
/// A connection is bound to the node its `join` (or `resume`) went to; its later room messages
/// follow. When the registry no longer lists a node, this node closes its clients bound there
/// (their SDK resumes or rejoins through any node; the room is placed anew) and the rooms here
/// treat that node's clients as disconnected (grace period, then gone).
///
/// Thread rules: entry points from any thread; the bindings live on `queue`
/// (`callroom.cluster.route`), which also keeps each connection's messages in order while a
/// placement waits on Redis.
final class ClusterSignalRouter: SignalRouter, @unchecked Sendable {
    let nodeID: String
    let local: LocalSignalRouter
    private let queue = DispatchQueue(label: "callroom.cluster.route")
    private let outbox: any SignalOutbox
    private let signer: CallTokenSigner
    private let appID: String
    private let log: ServerLog
    /// Where a room lives (placing it when new); nil: Redis is away or no node takes rooms.
    private let place: @Sendable (String) throws(RedisError) -> String?
    /// Where a room lives now, without placing it.
    private let lookup: @Sendable (String) throws(RedisError) -> String?
    /// Set once, before the web server starts.
    private var bus: ClusterBus?
    /// On `queue`: this node's connections whose room is on another node.
    private var bound: [ConnectionID: String] = [:]
    /// On `queue`: other nodes' connections whose room is here, by their node.
    private var guests: [String: Set<ConnectionID>] = [:]

    init(nodeID: String, local: LocalSignalRouter, outbox: any SignalOutbox, signer: CallTokenSigner, appID: String, log: ServerLog,
         place: @escaping @Sendable (String) throws(RedisError) -> String?,
         lookup: @escaping @Sendable (String) throws(RedisError) -> String?) {
        self.nodeID = nodeID
        self.local = local
        self.outbox = outbox
        self.signer = signer
        self.appID = appID
        self.log = log
        self.place = place
        self.lookup = lookup
    }

    func attach(bus: ClusterBus) { self.bus = bus }

    // MARK: This node's clients

    func received(_ message: ClientMessage, from connection: ConnectionID) {
        guard local.admit(connection) else { return }
        guard message.family == .room else { return local.dispatch(message, from: connection) }
        queue.async { [self] in
            let target = self.target(of: message, from: connection)
            guard target != nodeID, let bus else { return local.dispatch(message, from: connection) }
            if case .setMediaOverSignalling(true) = message {
                return outbox.send(.error(code: .featureUnavailable, message: "Media over signalling needs the signalling on the room's own node (\(target)); connect there."), to: connection)
            }
            bus.publish(.toRoom(from: connection, message: message.json()), to: target)
        }
    }

    func rejected(_ error: SignalDecodeError, from connection: ConnectionID) { local.rejected(error, from: connection) }

    func connectionClosed(_ connection: ConnectionID) {
        local.connectionClosed(connection)
        queue.async { [self] in
            if let node = bound.removeValue(forKey: connection) { bus?.publish(.closed(from: connection), to: node) }
        }
    }

    /// The node a room message goes to (on `queue`): a join or resume binds the connection.
    private func target(of message: ClientMessage, from connection: ConnectionID) -> String {
        dispatchPrecondition(condition: .onQueue(queue))
        let session: String?, placing: Bool
        switch message {
        case .join(let j):
            // Only a valid token places a room (junk joins would fill Redis); the room's node checks it all again.
            session = (try? signer.verify(j.callToken, audience: CallTokenClaims.audience(appId: appID)))?.sid
            placing = true
        case .resume(let token):
            session = ResumeToken.session(of: token)
            placing = false
        default:
            return bound[connection] ?? nodeID
        }
        var node = nodeID
        if let session {
            do {
                node = try (placing ? place(session) : lookup(session)) ?? nodeID
            } catch {
                log.warn("room placement unavailable: the room is served here", ["session": session, "error": "\(error)"])
            }
        }
        if node == nodeID { bound[connection] = nil } else { bound[connection] = node }
        return node
    }

    // MARK: Other nodes' messages (the bus's thread)

    func arrived(_ envelope: ClusterEnvelope) {
        switch envelope {
        case .toRoom(let from, let text):
            guard from.node != nodeID else { return }
            guard let m = try? ClientMessage(json: Data(text.utf8)), m.family == .room else {
                return log.warn("cluster: a forwarded message that is not a room message was dropped", ["from": "\(from)"])
            }
            queue.async { [self] in _ = guests[from.node, default: []].insert(from) }
            local.dispatch(m, from: from)
        case .closed(let from):
            queue.async { [self] in guests[from.node]?.remove(from) }
            local.remoteConnectionClosed(from)
        case .toClient, .close:
            // (The server's own socket work: CallServer handles these before the router.)
            break
        }
    }

    /// The registry's live nodes (each heartbeat): clients bound to a node that is gone are
    /// closed here (they resume or rejoin), and that node's clients in rooms here are treated
    /// as disconnected.
    func liveNodes(_ live: Set<String>) {
        queue.async { [self] in
            for (c, node) in bound where !live.contains(node) {
                bound[c] = nil
                log.warn("the room's node is gone: closing its client here so it rejoins", ["node": node, "connection": "\(c)"])
                outbox.close(c)
            }
            for (node, cs) in guests where !live.contains(node) {
                guests[node] = nil
                log.warn("a node with clients in rooms here is gone", ["node": node, "clients": "\(cs.count)"])
                for c in cs { local.remoteConnectionClosed(c) }
            }
        }
    }

    /// How many of this node's connections are bound elsewhere, and other nodes' here (tests).
    var counts: (bound: Int, guests: Int) { queue.sync { (bound.count, guests.values.reduce(0) { $0 + $1.count }) } }
}
