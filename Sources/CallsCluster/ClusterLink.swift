import CallsCore
import Foundation
import Synchronization

/// This node's place in a cluster (`redisURL`): its membership in the node registry (heartbeats,
/// room placement), the bus to the other nodes, and the router that forwards room messages.
/// Built once by the server's start and never changed; `abandon()` (tests) makes the node fall
/// silent as if it had died while its rooms and sockets stay.
///
/// Thread rules: any thread. After `abandon()` or `stop()` nothing more goes to the other nodes
/// (`liveBus` is nil) and the node registry is no longer asked (`isLive` false).
package final class ClusterLink: Sendable {
    package let membership: ClusterMembership
    package let router: ClusterSignalRouter
    private let bus: ClusterBus
    private let silent = Atomic<Bool>(false)

    package init(membership: ClusterMembership, bus: ClusterBus, router: ClusterSignalRouter) {
        self.membership = membership
        self.bus = bus
        self.router = router
    }

    /// Whether this node still takes part (not abandoned, not stopped).
    package var isLive: Bool { !silent.load(ordering: .acquiring) }

    /// The bus while this node takes part.
    package var liveBus: ClusterBus? { isLive ? bus : nil }

    /// Tells every other live node (revocations, room rules): queued off the caller's thread.
    package func broadcast(_ envelope: ClusterEnvelope, log: ServerLog) {
        guard let bus = liveBus else { return }
        let membership = membership
        DispatchQueue.global().async {
            do {
                for n in try membership.nodes() where n.id != membership.nodeID { bus.publish(envelope, to: n.id) }
            } catch {
                log.warn("redis unavailable: other nodes learn of this only after their restart", ["error": "\(error)"])
            }
        }
    }

    /// Leaves the registry (its entry goes) — first in a shutdown, so no room is placed here.
    package func leave() {
        membership.stop()
    }

    /// Stops the bus after what is queued was published — last, after the rooms said goodbye.
    package func stop() {
        silent.store(true, ordering: .releasing)
        bus.stop()
    }

    /// Tests: no more heartbeats (the entry expires), no more bus.
    package func abandon() {
        silent.store(true, ordering: .releasing)
        membership.abandon()
        bus.stop()
    }
}
