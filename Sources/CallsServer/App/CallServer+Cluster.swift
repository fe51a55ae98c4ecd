import CallsCluster
import CallsCore
import CallsRedis
import CallsSecurity
import CallsSignalling
import CallsStore
import Foundation

/// The cluster part of the assembly (`redisURL`): one set of keys agreed, the membership (its
/// heartbeats start once the port is known), the bus to the other nodes and the router that
/// forwards room messages, and the calls the last run (or a gone node) left open closed.
extension CallServer {
    func joinCluster(redis: String, local: LocalSignalRouter, gateway: WebGateway, signer: CallTokenSigner, rooms: RoomRegistry,
                     calls: CallRegistry, revocations: TokenRevocations, roomRules: RoomRulesDirectory, store: CallStore,
                     mediaPort: Int) throws(ServerStartError) -> ClusterLink {
        // One cluster, one set of keys: a node with another keys.json would refuse the others'
        // tokens and sign tokens they refuse. Refused here, before it takes a room.
        let fingerprint = keys.fingerprint
        let registry: NodeRegistry
        do { registry = NodeRegistry(redis: try RedisClient(address: redis)) } catch { throw .redis(error.description) }
        switch Result(catching: { () throws(RedisError) in try registry.agreeOnKeys(fingerprint) }) {
        case .failure(let e): throw .redis(e.description)
        case .success(let theirs) where theirs != fingerprint: throw .clusterKeys(ours: fingerprint, cluster: theirs)
        case .success: break
        }
        // One live node per id: a second with this one would take the first's live calls for
        // ones its own crash left open and end them (and share its registry entry). A crash's
        // leftover entry runs out within the TTL; a live node's is beaten again — refused.
        switch Result(catching: { () throws(RedisError) in try registry.liveHolder(of: nodeID) }) {
        case .failure(let e): throw .redis(e.description)
        case .success(let holder?): throw .nodeIDInUse(nodeID, url: holder.url)
        case .success(nil): break
        }
        do {
            return try link(redis: redis, local: local, gateway: gateway, signer: signer, rooms: rooms, calls: calls,
                            revocations: revocations, roomRules: roomRules, store: store, mediaPort: mediaPort)
        } catch {
            throw .redis(error.description)
        }
    }

    private func link(redis: String, local: LocalSignalRouter, gateway: WebGateway, signer: CallTokenSigner, rooms: RoomRegistry,
                      calls: CallRegistry, revocations: TokenRevocations, roomRules: RoomRulesDirectory, store: CallStore,
                      mediaPort: Int) throws(RedisError) -> ClusterLink {
        let media = configuration.mediaPublicAddress ?? "\(Self.isWildcard(configuration.host) ? "127.0.0.1" : configuration.host):\(mediaPort)"
        let membership = try ClusterMembership(redis: redis, nodeID: nodeID, keysFingerprint: keys.fingerprint, log: log) { [weak self, weak rooms] in
            let load = rooms?.load ?? (rooms: [], participants: 0)
            return (self.map { $0.configuration.publicURL ?? $0.url } ?? "", media, load.participants, load.rooms)
        }
        let router = ClusterSignalRouter(nodeID: nodeID, local: local, outbox: gateway, signer: signer, appID: keys.appId, log: log,
                                         registry: membership, becameRingingNode: { [weak membership, weak calls, log] in
            membership?.markRunsRinging()
            do { try calls?.restore() } catch { log.error("the rings on record could not be read", ["error": "\(error)"]) }
        }, ringRoomEnded: { [weak calls] sid in calls?.roomEnded(sid) })
        let log = log
        let bus = try ClusterBus(redis: redis, nodeID: nodeID, log: log) { [weak gateway, weak router, weak rooms, weak calls] envelope in
            switch envelope {
            case .toClient(let c, let text): gateway?.deliverFromCluster(text, to: c)
            case .close(let c): gateway?.closeFromCluster(c)
            case .forward, .closed, .roomEnded: router?.arrived(envelope)
            case .revoked(let uid, let notBefore):
                Self.apply(.user(uid), notBefore: notBefore, to: revocations, rooms: rooms, calls: calls)
                log.info("tokens revoked on another node: sessions here ended", ["uid": uid])
            case .revokedInvite(let id):
                Self.apply(.invite(id: id), notBefore: 0, to: revocations, rooms: rooms, calls: calls)
                log.info("an invite revoked on another node: who came in with it here left", ["invite_id": id])
            case .revokedAuthToken(let uid, let id):
                Self.apply(.authToken(uid: uid, id: id), notBefore: 0, to: revocations, rooms: rooms, calls: calls)
                log.info("an auth token revoked on another node: what it opened here ended", ["uid": uid, "token_id": id])
            case .roomRules(let session, let rules, let lifted):
                roomRules.set(session, rules)
                rooms?.rulesChanged(session: session, liftedBan: lifted)
                log.info("room rules changed on another node", ["session": session])
            }
        }
        router.attach(bus: bus)
        closeCallsLeftOpen(store: store, live: Set(try membership.nodes().map(\.id)).subtracting([nodeID]))
        let seen = Locked<Set<String>>([])
        membership.onLiveNodes = { [weak router, weak store] live in
            router?.liveNodes(live)
            // A node that was live and is not: its open calls end at its last heartbeat (reopened
            // when the room starts again on a live node). Every node does it; the first one wins.
            let gone = seen.withLock { was in defer { was = live }; return was.subtracting(live) }
            guard !gone.isEmpty, let store else { return }
            DispatchQueue.global().async {
                do {
                    let closed = try store.closeInterruptedCalls(of: .nodes(gone))
                    if closed > 0 { log.warn("closed the calls of a node that is gone", ["count": "\(closed)", "nodes": gone.sorted().joined(separator: ",")]) }
                } catch {
                    // Another live node does it too; a restart of this one closes its own.
                    log.error("could not close the calls of a node that is gone", ["nodes": gone.sorted().joined(separator: ","), "error": "\(error)"])
                }
            }
        }
        try bus.start()
        return ClusterLink(membership: membership, bus: bus, router: router)
    }

    /// Calls this node's last run left open, and those of nodes that are gone (not `live`).
    private func closeCallsLeftOpen(store: CallStore, live: Set<String>) {
        do {
            let owners = try store.nodesWithOpenCalls().subtracting(live).union([nodeID])
            let closed = try store.closeInterruptedCalls(of: .nodes(owners))
            if closed > 0 { log.warn("closed calls left open by an unclean shutdown", ["count": "\(closed)", "nodes": owners.sorted().joined(separator: ",")]) }
        } catch {
            // (Every live node closes a gone node's calls; a restart of this one closes its own.)
            log.error("could not close calls left open by an unclean shutdown", ["error": "\(error)"])
        }
    }
}
