import CallsRelay
import CallsStore
import CallsTransport
import Foundation
import Synchronization

/// Everything a started server runs, assembled once by `CallServer.start()` and never changed
/// after: readers on any queue take the set (behind the server's lock) and use its parts; `stop()`
/// stops them in order, and a part used after that does nothing — no field is ever set to nil
/// under a reader.
///
/// Thread rules: any thread; `stop()` once from the server's owner (later calls return at once).
final class RunningServer: Sendable {
    let store: CallStore
    let relay: MediaRelay
    /// The signalling side: web server, gateway, rooms, ringing, outboxes, cluster link.
    let parts: CallServer.Assembly
    let members: MemberLauncher
    let maintenance: RecordingMaintenance
    /// Forgets finished webhook deliveries and pushes past `deliveryRetentionDays`, chat past
    /// `chatRetentionDays`, and call logs past `callLogRetentionDays`.
    let history: HistoryRetention
    /// Uploads to object storage (nil: not configured).
    let uploader: ObjectUploader?
    /// Browsers' media (nil: off).
    let webrtc: WebRTCGateway?
    /// The data directory, this server's until it has stopped.
    let directoryLock: DataDirectoryLock
    private let stopped = Atomic<Bool>(false)

    init(store: CallStore, relay: MediaRelay, parts: CallServer.Assembly, members: MemberLauncher, maintenance: RecordingMaintenance,
         history: HistoryRetention, uploader: ObjectUploader?, webrtc: WebRTCGateway?, directoryLock: DataDirectoryLock) {
        self.directoryLock = directoryLock
        self.history = history
        self.uploader = uploader
        self.webrtc = webrtc
        self.store = store
        self.relay = relay
        self.parts = parts
        self.members = members
        self.maintenance = maintenance
    }

    /// Ends every call, stops both ports and waits for the threads: the registry entry first (no
    /// room is placed here any more), then the rooms (everyone told), the server's members
    /// (their files and rows finished before the store and sockets go), the writers and
    /// outboxes, and last the bus, the web server and the relay.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        parts.cluster?.leave()
        maintenance.stop()
        history.stop()
        // (An upload under way is cut when the process ends; its row stays queued for the next start.)
        uploader?.stop()
        parts.rooms.closeAll(reason: .serverShuttingDown)
        members.stopAll()
        parts.rooms.stopHeartbeat()
        parts.calls.settle()
        parts.webhooks.stop()
        parts.push?.stop()
        // Give queued `left` messages a moment to flush before the sockets go.
        Thread.sleep(forTimeInterval: 0.05)
        parts.cluster?.stop()
        parts.web.stop()
        webrtc?.stop()
        relay.stop()
        parts.gateway.detach()
        // (The store's last writes are done; its file may still close later, as readers drop it.)
        directoryLock.release()
    }
}
