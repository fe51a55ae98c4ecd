import CallsCaptions
import CallsCore
import CallsMembers
import CallsRecording
import CallsSecurity
import CallsStore
import CallsTransport
import Foundation

/// Starts the server's own members when a room asks for one — a recorder, a transcriber, a
/// streamer — and keeps the running ones until each has finished: it checks what the feature
/// needs (the recording quota, the caption language, the stream's target), builds the sink,
/// and joins it to the room over the server's own signalling with media from the relay. A
/// member that cannot start is the room's `memberFailed` with the reason.
///
/// Thread rules: `launch` on the rooms' queue (it returns at once: connecting happens on a
/// global queue); `stopAll` from the server's owner when it stops. The table of running members
/// is behind a lock.
final class MemberLauncher: Sendable {
    /// Where a member reaches the server: signalling (the server's own listen address) and relay.
    struct Endpoints: Sendable {
        let signalling: URL
        let relay: SocketAddress
        let publicURL: String
    }

    private let configuration: ServerConfiguration
    private let endpoints: Endpoints?
    private let store: CallStore
    private let log: ServerLog
    private let hooks: WebhookOutbox
    private let recognizers: RecognizerPool
    private let retries: WriteRetries
    /// The receive thread of every recorder and streamer.
    private let hub: ServerMemberHub?
    /// Running members by their feature's id (each removes itself when it has finished).
    private let members = Locked<[String: ServerMember]>([:])

    init(configuration: ServerConfiguration, endpoints: Endpoints?, store: CallStore, log: ServerLog, hooks: WebhookOutbox,
         recognizers: RecognizerPool, retries: WriteRetries) {
        self.configuration = configuration
        self.retries = retries
        self.endpoints = endpoints
        self.store = store
        self.log = log
        self.hooks = hooks
        self.recognizers = recognizers
        hub = ServerMemberHub()
    }

    /// The features this server offers rooms (`joined.features`).
    var offered: Set<SessionFeature> {
        var f: Set<SessionFeature> = [.recording]
        if !recognizers.engine.languages().isEmpty { f.insert(.transcription) }
        if configuration.streamingURL != nil { f.insert(.streaming) }
        return f
    }

    /// Starts the member `launch` asks for in a room of `rooms`.
    func launch(_ launch: MemberLaunch, rooms: RoomRegistry?) {
        guard let endpoints else {
            return rooms?.memberFailed(launch, reason: "The \(launch.feature.noun) cannot reach this server's own signalling.") ?? ()
        }
        let sink: any ServerMemberSink
        do {
            guard let made = try makeSink(launch, publicURL: endpoints.publicURL, rooms: rooms) else { return }
            sink = made
        } catch {
            log.error("\(launch.feature.rawValue) could not start", ["session": launch.session, "id": launch.id, "error": "\(error)"])
            return rooms?.memberFailed(launch, reason: "The \(launch.feature.noun) could not start: \(error)") ?? ()
        }
        let config = ServerMember.Config(signallingURL: endpoints.signalling, trust: TLSTrust(caFile: nil, insecure: true), relay: endpoints.relay,
                                         sessionId: launch.session, id: launch.id, callToken: launch.callToken, feature: launch.feature)
        // Off the rooms' queue: a stream first connects to Icecast (a refusal is the moderator's error).
        DispatchQueue.global().async { [weak self, weak rooms, log] in
            guard let self else { return }
            if let streamer = sink as? RoomStreamer {
                do { try streamer.connect() } catch {
                    log.warn("stream refused", ["session": launch.session, "id": launch.id, "error": "\(error)"])
                    return rooms?.memberFailed(launch, code: .streamingFailed, reason: "The live stream could not start: \(error).") ?? ()
                }
            }
            do {
                let m = try ServerMember(config: config, sink: sink, hub: self.hub, log: log) { [weak self] done in
                    self?.members.withLock { $0[done.config.id] = nil }
                }
                self.members.withLock { $0[launch.id] = m }
                try m.start()
            } catch {
                self.members.withLock { $0[launch.id] = nil }
                log.error("\(launch.feature.rawValue) could not start", ["session": launch.session, "id": launch.id, "error": "\(error)"])
                rooms?.memberFailed(launch, reason: "The \(launch.feature.noun) could not start: \(error)")
            }
        }
    }

    /// The sink for `launch`, or nil when the feature cannot run (the room was told why).
    private func makeSink(_ launch: MemberLaunch, publicURL: String, rooms: RoomRegistry?) throws -> (any ServerMemberSink)? {
        let dir = configuration.dataDir
        switch launch.feature {
        case .recording:
            let quotaBytes = Int64(configuration.recordingQuotaMB) * 1_000_000
            if quotaBytes > 0, case let used = RecordingMaintenance.recordingBytes(dataDir: dir), used >= quotaBytes {
                log.warn("recording refused: quota full", ["session": launch.session, "used_mb": "\(used / 1_000_000)", "quota_mb": "\(quotaBytes / 1_000_000)"])
                rooms?.memberFailed(launch, reason: "The server's recording quota is full (\(used / 1_000_000) of \(quotaBytes / 1_000_000) MB).")
                return nil
            }
            return try RoomRecorder(config: .init(sessionId: launch.session, rid: launch.id,
                                                  dir: (dir as NSString).appendingPathComponent("recordings/\(launch.id)"), publicURL: publicURL),
                                    store: store, log: log, outbox: hooks, retries: retries)
        case .transcription:
            let language = launch.language ?? "en-US"
            do { try recognizers.check(language: language) } catch {
                rooms?.memberFailed(launch, code: .languageUnavailable, reason: "Transcription is not available in \(language): \(error).")
                return nil
            }
            // (A recogniser started now, not when the first speaker talks: that speaker's audio
            // would pile up behind a Whisper worker's start. A failure shows on first use.)
            let pool = recognizers
            DispatchQueue.global(qos: .utility).async { try? pool.warm(language: language) }
            return try RoomTranscriber(config: .init(sessionId: launch.session, tid: launch.id, language: language,
                                                     dir: (dir as NSString).appendingPathComponent("transcripts")),
                                       pool: recognizers, store: store, log: log, retries: retries)
        case .streaming:
            guard let template = launch.target ?? configuration.streamingURL else {
                rooms?.memberFailed(launch, code: .featureUnavailable,
                                    reason: "Streaming is not available on this server (no streamingURL in its configuration).")
                return nil
            }
            guard launch.target == nil || configuration.streamingAllowSessionURLs else {
                rooms?.memberFailed(launch, code: .streamingFailed,
                                    reason: "This server streams only to its configured Icecast server (streamingAllowSessionURLs is off).")
                return nil
            }
            let target: IcecastTarget
            do { target = try IcecastTarget(url: template, sessionId: launch.session) } catch {
                rooms?.memberFailed(launch, code: .streamingFailed, reason: "The stream's target is not usable: \(error).")
                return nil
            }
            return try RoomStreamer(config: .init(sessionId: launch.session, id: launch.id, target: target,
                                                  reconnectSeconds: configuration.streamingReconnectSeconds), log: log)
        }
    }

    /// Every running member finishes its files and rows (before the store and sockets go).
    func stopAll() {
        for m in members.withLock({ Array($0.values) }) { m.stop() }
        hub?.stop()
    }
}
