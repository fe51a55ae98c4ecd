import CallsCore
import Foundation
import Synchronization
import CallsRedis

/// Signalling between nodes over Redis pub/sub: each node reads its own channel
/// (`ClusterEnvelope.channel(of:)`) and publishes to the others'. What one node sends another
/// arrives in the order it was sent (one publishing connection, one subscriber each); what is
/// published while Redis is away is lost, like any pub/sub — the connections concerned are
/// ended by the router when their node is seen dead, and clients resume or rejoin.
///
/// Thread rules: `publish` from any thread (it queues on `callroom.cluster.bus`, which owns the
/// publishing connection); `onEnvelope` runs on the subscriber's thread.
package final class ClusterBus: Sendable {
    package let nodeID: String
    private let queue = DispatchQueue(label: "callroom.cluster.bus")
    private let publisher: RedisClient
    private let subscriber: RedisSubscriber
    private let log: ServerLog
    /// Publishing failures, logged once a spell.
    private let outage: OutageLog
    /// Envelopes published and received (metrics, tests).
    package let published = Locked<UInt64>(0)

    package init(redis: String, nodeID: String, log: ServerLog, onEnvelope: @escaping @Sendable (ClusterEnvelope) -> Void) throws(RedisError) {
        self.nodeID = nodeID
        self.log = log
        outage = OutageLog(log, started: "cluster bus: cannot publish; messages to other nodes are lost until redis returns",
                           ended: "cluster bus: publishing again", fields: ["node": nodeID])
        publisher = try RedisClient(address: redis)
        subscriber = RedisSubscriber(address: redis, channel: ClusterEnvelope.channel(of: nodeID), onState: { up in
            if up { log.debug("cluster bus subscribed", ["node": nodeID]) } else { log.warn("cluster bus lost redis: resubscribing", ["node": nodeID]) }
        }, onMessage: { bytes in
            guard let e = ClusterEnvelope(bytes) else { return log.warn("cluster bus: a message that is not an envelope was dropped", ["bytes": "\(bytes.count)"]) }
            onEnvelope(e)
        })
    }

    package func start() throws(RedisError) { try subscriber.start() }

    /// Waits for what is queued to be published, then stops reading.
    package func stop() {
        queue.sync {}
        subscriber.stop()
    }

    /// Sends `envelope` to `node` (queued: never blocks the caller on Redis).
    package func publish(_ envelope: ClusterEnvelope, to node: String) {
        let bytes = envelope.encoded()
        queue.async { [self] in
            do {
                try publisher.command(["PUBLISH", ClusterEnvelope.channel(of: node), String(decoding: bytes, as: UTF8.self)])
                published.withLock { $0 += 1 }
                outage.succeeded()
            } catch {
                outage.failed(["error": "\(error)"])
            }
        }
    }
}
