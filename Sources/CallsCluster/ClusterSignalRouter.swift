import CallsCore
import CallsSecurity
import CallsSignalling
import Foundation

/// The router of a node in a cluster (`--redis`), after LiveKit's `pkg/routing`: a room lives
/// on one node, and presence and ringing on one node for the whole cluster (the ringing node);
/// a client may hold its signalling on any node. This node's clients' messages go to the node
/// that handles them — here, or over the cluster bus — and the answers come back the same way
/// (`CallServer.send` publishes those for connections of other nodes). Keep-alives are answered
/// where the socket is.
///
/// ```
///  client ─▶ node B: ClusterSignalRouter ──join──▶ NodeRegistry.place(session) ─▶ node A
///               │  rate limit, then by family        (Redis: callroom:room:{session})
///               ├─ room, A is here ─▶ LocalSignalRouter ─▶ RoomRegistry
///               ├─ room, A elsewhere ─▶ ClusterBus ─▶ callroom:signal:A ─▶ A's router ─▶ A's RoomRegistry
///               └─ hello / calls ─▶ the ringing node (callroom:ringing) ─▶ its CallRegistry
///  A's RoomRegistry ─▶ send(to: B/7) ─▶ ClusterBus ─▶ callroom:signal:B ─▶ B's socket 7
/// ```
/// A connection is bound to the node its `join` (or `resume`) went to; its later room messages
/// follow. When the registry no longer lists a node, this node closes its clients bound there
/// for a room (their SDK resumes or rejoins through any node; the room is placed anew), says
/// their `hello` again to the new ringing node for those bound there for presence, and the
/// rooms and rings here treat that node's clients as disconnected.
///
/// Thread rules: entry points from any thread; the bindings live on `queue`
/// (`callroom.cluster.route`), which also keeps each connection's messages in order while a
/// placement waits on Redis.
package final class ClusterSignalRouter: SignalRouter, @unchecked Sendable {
    package let nodeID: String
    package let local: LocalSignalRouter
    private let queue = DispatchQueue(label: "callroom.cluster.route")
    private let outbox: any SignalOutbox
    private let signer: CallTokenSigner
    private let appID: String
    private let log: ServerLog
    private let registry: ClusterMembership
    /// This node becomes the ringing node: the rings on record are taken up (on `queue`, before
    /// the message that made it so).
    private let becameRingingNode: @Sendable () -> Void
    /// An accepted call's room ended here or on another node: the ringing registry hears it.
    private let ringRoomEnded: @Sendable (String) -> Void
    /// Set once, before the web server starts.
    private var bus: ClusterBus?
    /// On `queue`: this node's connections whose room is on another node.
    private var bound: [ConnectionID: String] = [:]
    /// On `queue`: this node's connections whose presence is on another node, with their `hello`.
    private var present: [ConnectionID: (node: String, hello: ClientMessage?)] = [:]
    /// On `queue`: the ringing node as last placed (nil: place it at the next need).
    private var ringingNode: String?
    private var runsRinging = false
    /// On `queue`: other nodes' connections with rooms or presence here, by their node.
    private var guests: [String: Set<ConnectionID>] = [:]

    package init(nodeID: String, local: LocalSignalRouter, outbox: any SignalOutbox, signer: CallTokenSigner, appID: String, log: ServerLog,
         registry: ClusterMembership, becameRingingNode: @escaping @Sendable () -> Void, ringRoomEnded: @escaping @Sendable (String) -> Void) {
        self.nodeID = nodeID
        self.local = local
        self.outbox = outbox
        self.signer = signer
        self.appID = appID
        self.log = log
        self.registry = registry
        self.becameRingingNode = becameRingingNode
        self.ringRoomEnded = ringRoomEnded
    }

    package func attach(bus: ClusterBus) { self.bus = bus }

    // MARK: This node's clients

    package func received(_ message: ClientMessage, from connection: ConnectionID) {
        guard local.admit(connection) else { return }
        if case .ping = message { return local.dispatch(message, from: connection) }
        queue.async { [self] in
            let target: String
            switch message.family {
            case .room: target = roomTarget(of: message, from: connection)
            case .presence, .calls:
                target = ringTarget()
                if target == nodeID { present[connection] = nil } else if case .hello = message {
                    present[connection] = (target, message)
                } else if present[connection] == nil {
                    present[connection] = (target, nil)
                }
            }
            guard target != nodeID, let bus else { return local.dispatch(message, from: connection) }
            if case .setMediaOverSignalling(true) = message {
                return outbox.send(.error(code: .mediaTunnelUnavailable, message: "Media over signalling needs the signalling on the room's own node (\(target)); connect there."), to: connection)
            }
            bus.publish(.forward(from: connection, message: message.json()), to: target)
        }
    }

    package func rejected(_ error: SignalDecodeError, from connection: ConnectionID) { local.rejected(error, from: connection) }

    package func connectionClosed(_ connection: ConnectionID) {
        local.connectionClosed(connection)
        queue.async { [self] in
            let nodes = Set([bound.removeValue(forKey: connection), present.removeValue(forKey: connection)?.node].compactMap { $0 })
            for node in nodes { bus?.publish(.closed(from: connection), to: node) }
        }
    }

    /// A room of this node ended: the ringing node hears it (an accepted call's room).
    package func roomEnded(_ session: String) {
        queue.async { [self] in
            if let node = ringingNode, node != nodeID, let bus { bus.publish(.roomEnded(session: session), to: node) } else { ringRoomEnded(session) }
        }
    }

    /// The node a room message goes to (on `queue`): a join or resume binds the connection.
    private func roomTarget(of message: ClientMessage, from connection: ConnectionID) -> String {
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
                node = try (placing ? registry.place(session: session) : registry.lookup(session: session)) ?? nodeID
            } catch {
                log.warn("room placement unavailable: the room is served here", ["session": session, "error": "\(error)"])
            }
        }
        if node == nodeID { bound[connection] = nil } else { bound[connection] = node }
        return node
    }

    /// The ringing node (on `queue`), placed when unknown; this node when Redis is away.
    private func ringTarget() -> String {
        dispatchPrecondition(condition: .onQueue(queue))
        if let ringingNode { return ringingNode }
        var node = nodeID
        do { node = try registry.placeRinging() ?? nodeID } catch {
            log.warn("ringing placement unavailable: presence and ringing are served here", ["error": "\(error)"])
            return nodeID
        }
        ringingNode = node
        if node == nodeID && !runsRinging {
            runsRinging = true
            log.info("this node runs presence and ringing for the cluster", ["node": nodeID])
            becameRingingNode()
        }
        return node
    }

    // MARK: Other nodes' messages (the bus's thread)

    package func arrived(_ envelope: ClusterEnvelope) {
        switch envelope {
        case .forward(let from, let text):
            guard from.node != nodeID else { return }
            guard let m = try? ClientMessage(json: Data(text.utf8)) else {
                return log.warn("cluster: a forwarded message that does not decode was dropped", ["from": "\(from)"])
            }
            queue.async { [self] in
                _ = guests[from.node, default: []].insert(from)
                // Another node sends presence here: this node is the ringing node now (take up the rings on record first).
                if m.family != .room, !runsRinging {
                    runsRinging = true
                    ringingNode = nodeID
                    log.info("this node runs presence and ringing for the cluster", ["node": nodeID])
                    becameRingingNode()
                }
                local.dispatch(m, from: from)
            }
        case .closed(let from):
            queue.async { [self] in guests[from.node]?.remove(from) }
            local.remoteConnectionClosed(from)
        case .roomEnded(let session):
            ringRoomEnded(session)
        case .toClient, .close, .revoked, .revokedAuthToken, .revokedInvite, .roomRules:
            // (The server's own work: CallServer handles these before the router.)
            break
        }
    }

    /// The registry's live nodes (each heartbeat): clients bound to a node that is gone are
    /// closed here (they resume or rejoin), presence bound there is said again to the new
    /// ringing node, and that node's clients in rooms and rings here are treated as disconnected.
    package func liveNodes(_ live: Set<String>) {
        queue.async { [self] in
            for (c, node) in bound where !live.contains(node) {
                bound[c] = nil
                log.warn("the room's node is gone: closing its client here so it rejoins", ["node": node, "connection": "\(c)"])
                outbox.close(c)
            }
            if let r = ringingNode, !live.contains(r) {
                ringingNode = nil
                log.warn("the ringing node is gone: presence moves", ["node": r])
            }
            for (c, p) in present where !live.contains(p.node) {
                present[c] = nil
                guard let hello = p.hello else { continue }
                let target = ringTarget()
                if target == nodeID { local.dispatch(hello, from: c) } else {
                    present[c] = (target, hello)
                    bus?.publish(.forward(from: c, message: hello.json()), to: target)
                }
            }
            for (node, cs) in guests where !live.contains(node) {
                guests[node] = nil
                log.warn("a node with clients here is gone", ["node": node, "clients": "\(cs.count)"])
                for c in cs { local.remoteConnectionClosed(c) }
            }
        }
    }

    /// How many of this node's connections are bound elsewhere (rooms), and other nodes' here (tests).
    package var counts: (bound: Int, guests: Int) { queue.sync { (bound.count, guests.values.reduce(0) { $0 + $1.count }) } }
}
