import CallsTransport
import Foundation
import Synchronization
import CallsRelay

/// Everything a started server runs, assembled once by `CallServer.start()` and never changed
/// after: readers on any queue take the set (behind the server's lock) and use its parts; `stop()`
/// stops them in order, and a part used after that does nothing — no field is ever set to nil
/// under a reader.
///
/// Thread rules: any thread; `stop()` once from the server's owner (later calls return at once).
final class RunningServer: Sendable {
    let store: CallStore
    let relay: MediaRelay
    let web: WebServer
    let gateway: WebGateway
    let rooms: RoomRegistry
    let calls: CallRegistry
    let webhooks: WebhookDeliverer
    let push: PushSender?
    /// This node's cluster link (nil: one node).
    let cluster: ClusterLink?
    let members: MemberLauncher
    let maintenance: RecordingMaintenance
    private let stopped = Atomic<Bool>(false)

    init(store: CallStore, relay: MediaRelay, web: WebServer, gateway: WebGateway, rooms: RoomRegistry, calls: CallRegistry,
         webhooks: WebhookDeliverer, push: PushSender?, cluster: ClusterLink?, members: MemberLauncher, maintenance: RecordingMaintenance) {
        self.store = store
        self.relay = relay
        self.web = web
        self.gateway = gateway
        self.rooms = rooms
        self.calls = calls
        self.webhooks = webhooks
        self.push = push
        self.cluster = cluster
        self.members = members
        self.maintenance = maintenance
    }

    /// Ends every call, stops both ports and waits for the threads: the registry entry first (no
    /// room is placed here any more), then the rooms (everyone told), the server's members
    /// (their files and rows finished before the store and sockets go), the writers and
    /// outboxes, and last the bus, the web server and the relay.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cluster?.leave()
        maintenance.stop()
        rooms.closeAll(reason: .serverShuttingDown)
        members.stopAll()
        rooms.stopHeartbeat()
        calls.settle()
        webhooks.stop()
        push?.stop()
        // Give queued `left` messages a moment to flush before the sockets go.
        Thread.sleep(forTimeInterval: 0.05)
        cluster?.stop()
        web.stop()
        relay.stop()
    }
}
