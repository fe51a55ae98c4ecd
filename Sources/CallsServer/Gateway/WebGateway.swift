import CallsCluster
import CallsCore
import CallsTransport
import Foundation
import Synchronization
import CallsRelay
import CallsSignalling

/// Where the web server meets the rest of the server, both ways: REST requests (limits, the
/// route table, the audit of operator writes), WebSocket admission (per-address limit, the join
/// timeout), signalling in (to the signal router) and signalling out (`SignalOutbox`: this
/// node's sockets, or another node's over the cluster bus).
///
/// Thread rules: the `WebServerDelegate` calls come on the web server's service thread; `send`
/// and `close` from any thread (the rooms' and calls' queues, the cluster bus). What it reaches
/// is attached once (`attach`, before the web server starts) and never changes; REST answers
/// 503 "Starting." until the router is attached (`attach(router:)`, once the port is known).
final class WebGateway: WebServerDelegate, SignalOutbox, Sendable {
    /// The parts the gateway reaches.
    struct Links: Sendable {
        let web: WebServer
        let relay: MediaRelay
        let signals: any SignalRouter
        /// This node's cluster link (nil: one node).
        let cluster: ClusterLink?
    }

    /// The answer to a request over this node's or the cluster's REST limit.
    private static let tooManyRequests = HTTPResponse(status: 429, json: ServerError(.rateLimited, "Too many requests from this address.").json)

    private let configuration: ServerConfiguration
    private let nodeID: String
    private let log: ServerLog
    private let refusals: Refusals
    private let audit: AuditLog?
    /// The Prometheus text of `GET /metrics` (the server renders it).
    private let metrics: @Sendable () -> String
    private let links = Locked<Links?>(nil)
    private let router = Locked<RESTRouter?>(nil)
    private let restQueue = DispatchQueue(label: "callroom.rest", attributes: .concurrent)
    private let restLimiters: Locked<PeerLimiter>
    /// With `--redis`: the same REST limit counted over every node (checked after this node's own).
    private let sharedRESTLimiter: SharedRateLimiter?
    /// Wrong room passcodes per address (the rooms count them per user).
    private let passcodes: PasscodeGuesses
    /// Open WebSockets: their peer, and whether the server has let them in yet (`authenticated`).
    private struct Sockets {
        var peer: [UInt64: String] = [:]
        /// Open WebSockets per `IPAddress.limitKey` (an IPv6 client's /64).
        var perAddress: [String: Int] = [:]
        var claimed: Set<UInt64> = []
        /// The peers of the last `closedKept` sockets closed, oldest first: a refusal answered
        /// after its client hung up (a bad token sent, then gone) still names the address.
        var closed: [(connection: UInt64, peer: String)] = []
        static let closedKept = 1024

        func peer(of connection: UInt64) -> String? {
            peer[connection] ?? closed.last { $0.connection == connection }?.peer
        }
    }
    private let sockets = Locked(Sockets())
    let openSockets = Atomic<Int>(0)
    let httpRequests = Atomic<UInt64>(0)

    init(configuration: ServerConfiguration, nodeID: String, log: ServerLog, refusals: Refusals, audit: AuditLog?,
         metrics: @escaping @Sendable () -> String) {
        self.configuration = configuration
        self.nodeID = nodeID
        self.log = log
        self.refusals = refusals
        self.audit = audit
        self.metrics = metrics
        let perSecond = configuration.restRequestsPerSecond
        restLimiters = Locked(PeerLimiter(capacity: perSecond * 2, perSecond: perSecond))
        sharedRESTLimiter = configuration.redisURL.map { SharedRateLimiter(redis: $0, name: "rest", capacity: perSecond * 2, perSecond: perSecond) }
        passcodes = PasscodeGuesses(addresses: configuration.clientAddresses, redis: configuration.redisURL)
    }

    /// Once, before the web server starts.
    func attach(_ l: Links) { links.withLock { $0 = l } }

    /// Once, when the port is known (invite links need the address).
    func attach(router r: RESTRouter) { router.withLock { $0 = r } }

    /// The server stopped: the gateway lets go of what it reached (the signal router holds the
    /// gateway as its outbox, so this is what lets the stopped server's parts go). Requests and
    /// messages from here on are dropped.
    func detach() {
        links.withLock { $0 = nil }
        router.withLock { $0 = nil }
    }

    // MARK: REST

    func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        guard let router = router.withLock({ $0 }) else { return respond(HTTPResponse(status: 503, json: RESTErrorCode.unavailable.json("Starting."))) }
        httpRequests.add(1, ordering: .relaxed)
        let allowed = restLimiters.withLock { $0.allow(request.peer, now: monotonicNanoseconds()) }
        guard allowed else {
            refusals.refused(.rateLimited, peer: request.peer, detail: "\(request.method) \(AuditLog.redacted(path: request.path))")
            return respond(Self.tooManyRequests)
        }
        restQueue.async { [refusals, sharedRESTLimiter, audit, metrics, metricsAllow = configuration.metricsAllow] in
            // (Off the service thread: the shared count is a Redis round trip.)
            if sharedRESTLimiter?.allow(request.peer) == false {
                refusals.refused(.rateLimited, peer: request.peer, detail: "\(request.method) \(AuditLog.redacted(path: request.path)) (all nodes)")
                return respond(Self.tooManyRequests)
            }
            if request.method == "GET" && request.path == "/metrics" {
                guard let client = IPAddress(request.peer), metricsAllow.contains(where: { $0.contains(client) }) else {
                    refusals.refused(.restAuth, peer: request.peer, detail: "GET /metrics → 403 (not in metricsAllow)")
                    return respond(HTTPResponse(status: 403, json: RESTErrorCode.forbidden.json("Metrics are served only to the addresses in metricsAllow.")))
                }
                return respond(HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4", body: Array(metrics().utf8)))
            }
            let response = router.handle(request)
            let path = AuditLog.redacted(path: request.path)
            if response.status == 401 || response.status == 403 {
                refusals.refused(.restAuth, peer: request.peer, detail: "\(request.method) \(path) → \(response.status)")
            } else if response.status == 429 {
                refusals.refused(.rateLimited, peer: request.peer, detail: "\(request.method) \(path) → 429")
            }
            // What the operator's key changed (reads are not actions), and what came of it.
            if request.header("apikey") != nil && request.method != "GET" {
                audit?.record(AuditEntry(actor: "operator@\(request.peer)", action: "\(request.method) \(path)", target: "", result: "\(response.status)"))
            }
            respond(response)
        }
    }

    // MARK: WebSockets

    func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {
        openSockets.add(1, ordering: .relaxed)
        let id = ConnectionID(node: nodeID, local: connection)
        let limit = configuration.maxConnectionsPerAddress
        let exempt = configuration.clientAddresses.isExempt(peer)
        let key = IPAddress.limitKey(peer)
        let over = sockets.withLock { s -> Bool in
            s.peer[connection] = peer
            s.perAddress[key, default: 0] += 1
            return s.perAddress[key, default: 0] > limit && !exempt
        }
        guard path == "/v1/signal" else {
            send(.error(code: .notFound, message: "No WebSocket endpoint \(path); use /v1/signal."), to: id)
            close(id)
            return
        }
        if over {
            refusals.refused(.connectionsPerAddress, peer: peer, detail: "over \(limit) open WebSockets")
            send(.error(code: .tooManyConnections, message: "Too many connections from this address (at most \(limit))."), to: id)
            close(id)
            return
        }
        // A connection not let in (joined, welcomed or resumed) within the timeout does not stay, whatever it sent.
        let timeout = configuration.joinTimeoutSeconds
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in
            guard let self else { return }
            let idle = self.sockets.withLock { $0.peer[connection] != nil && !$0.claimed.contains(connection) }
            guard idle else { return }
            self.refusals.refused(.idleConnection, peer: peer, detail: "no join within \(Int(timeout)) s")
            self.send(.error(code: .joinTimeout, message: "Not joined, logged in or resumed within \(Int(timeout)) s."), to: id)
            self.close(id)
        }
    }

    func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {
        guard let l = links.withLock({ $0 }) else { return }
        let id = ConnectionID(node: nodeID, local: connection)
        // A binary frame is one media packet of a member whose UDP is blocked.
        if binary { return l.relay.receiveTunnelled(message, from: connection) }
        do {
            let m = try ClientMessage(json: Data(message))
            if case .join(let j) = m, j.passcode != nil, let peer = sockets.withLock({ $0.peer[connection] }),
               let why = passcodes.admit(connection, peer: peer) {
                send(.error(code: .rateLimited, message: why), to: id)
                return close(id)
            }
            l.signals.received(m, from: id)
        } catch {
            l.signals.rejected(error, from: id)
        }
    }

    func webServer(_ server: WebServer, droppedSlowConnection connection: UInt64, peer: String, queuedBytes: Int) {
        refusals.refused(.slowConsumer, peer: peer, detail: "\(queuedBytes) bytes waiting: closed \(WebServer.slowConsumerCloseCode)")
    }

    func webServer(_ server: WebServer, refusedSlowBodyFrom peer: String, received: Int, of length: Int) {
        refusals.refused(.slowRequest, peer: peer, detail: "\(received) of \(length) body bytes in \(server.bodyTimeoutSeconds) s: closed")
    }

    func webServer(_ server: WebServer, refusedRequestHeadFrom peer: String, code: RESTErrorCode, reason: String) {
        refusals.refused(.requestHead, peer: peer, detail: "\(code.status) \(code.rawValue): \(reason) Closed")
    }

    func webServer(_ server: WebServer, refusedOversizedMessage connection: UInt64, peer: String) {
        refusals.refused(.oversizedMessage, peer: peer, detail: "a message over \(server.maxMessageBytes) bytes: closed 1009")
    }

    func webServer(_ server: WebServer, refusedConnectionFrom address: String, holding: Int) {
        refusals.refused(.connectionsPerAddress, peer: address, detail: "\(holding) TCP connections open: refused at accept")
    }

    func webServer(_ server: WebServer, refusedConnectionOverDescriptorBudget descriptor: Int32) {
        refusals.refused(.descriptorBudget, peer: "*", detail: "descriptor \(descriptor): the connection budget is full")
    }

    func webServer(_ server: WebServer, didClose connection: UInt64) {
        openSockets.subtract(1, ordering: .relaxed)
        passcodes.closed(connection)
        sockets.withLock { s in
            s.claimed.remove(connection)
            if let peer = s.peer.removeValue(forKey: connection) {
                let key = IPAddress.limitKey(peer)
                s.perAddress[key, default: 1] -= 1
                if s.perAddress[key] ?? 0 <= 0 { s.perAddress[key] = nil }
                if s.closed.count >= Sockets.closedKept { s.closed.removeFirst(s.closed.count - Sockets.closedKept + 1) }
                s.closed.append((connection, peer))
            }
        }
        links.withLock { $0 }?.signals.connectionClosed(ConnectionID(node: nodeID, local: connection))
    }

    /// The connection was told it is in (`joined`, `resumed`, `welcome`): the join timeout
    /// no longer closes it. Whatever it only *sent* (a `hello` with a wrong token) does not count.
    func authenticated(_ connection: UInt64) {
        sockets.withLock { s in if s.peer[connection] != nil { s.claimed.insert(connection) } }
    }

    func isAuthenticated(_ connection: UInt64) -> Bool { sockets.withLock { $0.claimed.contains(connection) } }

    // MARK: SignalOutbox

    /// Sends to a connection: one this node holds over its socket, another node's over the cluster bus.
    func send(_ message: ServerMessage, to connection: ConnectionID) {
        let l = links.withLock { $0 }
        guard connection.node == nodeID else {
            guard let bus = l?.cluster?.liveBus else { return log.warn("message for another node dropped", ["connection": "\(connection)"]) }
            return bus.publish(.toClient(local: connection.local, message: message.json()), to: connection.node)
        }
        if case .error(let code, let text) = message, let cause = Self.refusalCause(code) {
            refusals.refused(cause, peer: sockets.withLock { $0.peer(of: connection.local) } ?? "?", detail: "\(code.rawValue): \(text)")
        }
        if message.authenticates { authenticated(connection.local) }
        passcodes.sent(message, to: connection.local)
        l?.web.send(text: message.json(), to: connection.local)
    }

    func close(_ connection: ConnectionID) {
        let l = links.withLock { $0 }
        guard connection.node == nodeID else { return l?.cluster?.liveBus?.publish(.close(local: connection.local), to: connection.node) ?? () }
        l?.web.close(connection.local)
    }

    /// A message from another node for one of this node's sockets (a room there admitted it:
    /// its join timeout ends).
    func deliverFromCluster(_ text: String, to connection: UInt64) {
        if !isAuthenticated(connection), ServerMessage.authenticates(json: text) { authenticated(connection) }
        if passcodes.isPending(connection), let m = try? ServerMessage(json: Data(text.utf8)) { passcodes.sent(m, to: connection) }
        links.withLock { $0 }?.web.send(text: text, to: connection)
    }

    /// Another node closes one of this node's sockets.
    func closeFromCluster(_ connection: UInt64) { links.withLock { $0 }?.web.close(connection) }

    /// Which signalling errors are refusals worth counting (and logging once a minute per peer).
    static func refusalCause(_ code: SignalErrorCode) -> RefusalCause? {
        switch code {
        case .tokenInvalid, .tokenExpired, .tokenRevoked, .appIdMismatch, .tokenSessionMismatch, .authTokenInvalid: return .signalAuth
        case .removedFromSession, .tokenInUse, .notOnAllowList, .passcodeWrong, .roomFull, .notCallParty, .bannedFromRoom: return .roomAccess
        case .notModerator: return .moderation
        case .rateLimited: return .signalRate
        case .webrtcOfferRefused: return .webrtcOffer
        case .tooManyDevices: return .devicesPerUser
        default: return nil
        }
    }
}
