import CallsObjectStorage
import CallsCaptions
import CallsCluster
import CallsCore
import CallsDatabase
import CallsRecording
import CallsRedis
import CallsRelay
import CallsSecurity
import CallsSignalling
import CallsStore
import CallsTransport
import Foundation

/// The CallRoom calls server: REST + WebSocket signalling on one TCP port (libwebsockets), a
/// UDP media relay, and a store (SQLite, or PostgreSQL shared by a cluster). `callroomd` and
/// `callroom demo` both run one of these.
///
/// ```
///  TCP ─▶ WebServer (lws thread) ─▶ WebGateway ─┬─ HTTP ─▶ REST queue ─▶ RESTRouter ─▶ CallStore
///                                               └─ WS ──▶ SignalRouter ─┬▶ RoomRegistry (queue) ─▶ StoreWriter
///                                                  ◀── SignalOutbox ────┤  │ relay patches
///                                                                       └▶ CallRegistry (queue) ─▶ StoreWriter
///  UDP ─▶ MediaRelay (worker threads) ◀────────────────────────────────────┘
/// ```
/// `start()` assembles the running set (`RunningServer`) once; `stop()` stops it.
///
/// Thread rules: `start()` and `stop()` from one owning thread; the other public members from
/// any thread. The facts `start()` learns (`keys`, `port`, `mediaPort`, TLS) are written
/// before anything that reads them runs.
public final class CallServer: @unchecked Sendable {
    public let configuration: ServerConfiguration
    public internal(set) var keys: ServerKeys
    /// The keys this start generated and saved in keys.json (`appId`, `apiKey`, `authKey`;
    /// empty on later starts): print them once. Keys given by flags are saved, never printed.
    public internal(set) var generatedKeys: [String] = []
    public internal(set) var port = 0
    public internal(set) var mediaPort = 0
    public let log: ServerLog
    /// This process's node id: the `node` of every `ConnectionID` it holds, and its id in the
    /// cluster: `nodeID` of the configuration, else `HOST:PORT` of the listen address (the
    /// machine's host name for a wildcard host; `node-` and random hex with port 0).
    public let nodeID: String
    /// The recognisers every transcriber shares.
    let recognizers: RecognizerPool
    /// The store writes members are trying again (a recording's end on a full disk): stopped with
    /// the server.
    package let writeRetries = WriteRetries()
    /// The caption engine transcriptions use (`whisper`, `pocketsphinx`).
    public var captionEngine: String { recognizers.engine.name }
    /// Which caption engine was chosen and why (logged at start).
    private let captionEngineNote: (level: ServerLog.Level, message: String)
    /// Counts and logs every refusal (REST auth, rate limits, signalling auth, room rules …).
    let refusals: Refusals
    /// The TLS files served (nil: plain HTTP) and the certificate's SHA-256 fingerprint.
    public internal(set) var tlsFiles: TLSFiles?
    public internal(set) var tlsFingerprint: String?
    /// True when this start made the self-signed certificate (print its fingerprint).
    public internal(set) var generatedCertificate = false
    /// What runs, once started (set once by `start`, taken away by `stop`; readers take it under
    /// the lock and keep what they took until they are done).
    private let runningBox = Locked<RunningServer?>(nil)
    var running: RunningServer? { runningBox.withLock { $0 } }

    public init(configuration: ServerConfiguration) {
        self.configuration = configuration
        self.log = ServerLog(format: configuration.logFormat, level: configuration.logLevel, sink: configuration.logSink)
        refusals = Refusals(log: log)
        self.keys = ServerKeys(appId: "", apiKey: "", authKey: "", tokenSecret: "")
        nodeID = configuration.nodeID ?? Self.defaultNodeID(host: configuration.host, port: configuration.port)
        let captions = Self.captionEngine(configuration)
        captionEngineNote = captions.note
        recognizers = RecognizerPool(engine: captions.engine, capacity: configuration.captionDecoders)
        // Low descriptors for libshout's select(2), taken while they are free.
        LowDescriptors.reserve()
    }

    /// The base URL clients use (`http://host:port`, `https://` with TLS).
    public var url: String {
        "\(tlsFiles == nil ? "http" : "https")://\(configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host):\(port)"
    }

    /// Opens the data directory, binds both ports and starts serving. Everything that can be
    /// refused (TLS, keys, push keys, the database, the media port, the cluster's keys) is
    /// checked before the TCP port opens.
    public func start() throws(ServerStartError) {
        let dir = configuration.dataDir
        try prepareDataDirectory(dir)
        // (Dropped, so let go, if anything below stops the start.)
        let directoryLock = try DataDirectoryLock.acquire(dir)
        let tlsFiles = try tls(dataDir: dir)
        // Before anything opens: every connection, file and socket fits in the raised limit.
        let descriptors = DescriptorLimit.raiseToHard()
        let connectionBudget = min(configuration.maxConnections ?? Int.max, DescriptorLimit.connectionBudget(limit: descriptors.now))
        log.info("descriptors", ["limit": "\(descriptors.now)", "was": "\(descriptors.before)", "connections": "\(connectionBudget)"])
        if !configuration.trustedProxies.isEmpty {
            log.info("clients behind these proxies are counted by X-Forwarded-For",
                     ["trusted_proxies": configuration.trustedProxies.map(\.description).joined(separator: ",")])
        }
        let given = ServerKeys.Given(appId: configuration.appId, apiKey: configuration.apiKey, authKey: configuration.authKey)
        let (k, created, generated) = try ServerKeys.loadOrCreate(dataDir: dir, given: given)
        keys = k
        generatedKeys = generated
        // Before any port is bound: a bad key file stops the start with nothing to undo.
        let providers = try pushProviders()
        try probeObjectStorage()
        let mediaPublic = try mediaPublicAddress()
        let (store, cutRecordings) = try openStore(dir, keysCreatedNow: created)
        let relay = try openRelay()
        let built: Assembly
        do { built = try assemble(store: store, relay: relay, mediaPublic: mediaPublic, providers: providers, cutRecordings: cutRecordings,
                                  tlsFiles: tlsFiles, connectionBudget: connectionBudget) } catch {
            relay.close()
            throw error
        }
        mediaPort = relay.port
        do { port = try built.web.start(port: configuration.port) } catch {
            built.cluster?.abandon()
            relay.close()
            if case .cannotBind(_, _, let reason) = error { throw .cannotListen("\(configuration.host):\(configuration.port): \(reason)") }
            throw .cannotListen("\(configuration.host):\(configuration.port)")
        }
        let members = MemberLauncher(configuration: configuration, endpoints: memberEndpoints(relayPort: relay.port, tls: tlsFiles != nil),
                                     store: store, log: log, hooks: built.hooks, recognizers: recognizers, retries: writeRetries)
        let maintenance = RecordingMaintenance(store: store, dataDir: dir, retentionDays: configuration.recordingRetentionDays, log: log)
        let uploader = configuration.objectStorage.map {
            ObjectUploader(configuration: $0, store: store, dataDir: dir, nodeID: configuration.redisURL == nil ? nil : nodeID, log: log)
        }
        let webrtc = openWebRTC(relay: relay, rooms: built.rooms, mediaPublic: mediaPublic)
        let history = HistoryRetention(store: store, deliveryDays: configuration.deliveryRetentionDays, chatDays: configuration.chatRetentionDays,
                                       callLogDays: configuration.callLogRetentionDays, authTokenTTLSeconds: configuration.authTokenTTLSeconds, log: log)
        let running = RunningServer(store: store, relay: relay, parts: built, members: members, maintenance: maintenance,
                                    history: history, uploader: uploader, webrtc: webrtc, directoryLock: directoryLock)
        runningBox.withLock { $0 = running }
        // (Created once the port is known: invite links need the address. Until then: 503.)
        built.gateway.attach(router: restRouter(built, store: store, relayPort: relay.port))
        built.rooms.setMemberLauncher(offering: members.offered) { [weak members, weak rooms = built.rooms] launch in
            members?.launch(launch, rooms: rooms)
        }
        // Tunnelled members: a browser's leg (the WebRTC gateway re-protects for it), else media
        // over signalling (UDP blocked): the relay's copies go out as binary frames.
        relay.setTunnelSink { [weak web = built.web] connection, bytes in
            if webrtc?.deliver(bytes, to: connection) == true { return }
            web?.send(bytes, binary: true, to: connection)
        }
        relay.start()
        maintenance.start()
        history.start()
        uploader?.start()
        // Deliveries left from an earlier run go out too (the outbox is in the store).
        if !built.directory.isEmpty { built.webhooks.start() }
        built.push?.start()
        built.rooms.startHeartbeat(every: configuration.storeHeartbeatSeconds)
        built.cluster?.membership.start()
        webrtc?.start()
        log.write(captionEngineNote.level, captionEngineNote.message, ["engine": recognizers.engine.name])
        log.info("listening", ["http": url, "media_udp": "\(mediaPort)", "webrtc_udp": webrtc.map { "\($0.port)" } ?? "off", "data_dir": dir])
    }

    /// Ends every call, stops both ports and waits for the threads, then lets go of the running
    /// parts — their descriptors (store, Redis, files) close as the last reader drops them.
    /// Idempotent; what the server reported (counters, metrics) is empty from here on.
    public func stop() {
        running?.stop()
        runningBox.withLock { $0 = nil }
        // (The transcribers have stopped: idle Whisper workers end now, not with the process.)
        recognizers.drain()
        // (What a retry had not written yet is the next start's crash recovery's.)
        writeRetries.cancelAll()
    }

    // MARK: Assembly

    /// What `assemble` built: the running parts before the port opens, and what the REST router
    /// and the members need beside them.
    struct Assembly: Sendable {
        /// Where connections arrive and how the signalling gets out.
        let web: WebServer, gateway: WebGateway
        /// The two cores' runners, the outboxes, and this node's cluster link (nil: one node).
        let rooms: RoomRegistry, calls: CallRegistry
        let webhooks: WebhookDeliverer, push: PushSender?, cluster: ClusterLink?
        /// What the REST router shares with them.
        let hooks: WebhookOutbox, directory: WebhookDirectory, revocations: TokenRevocations, roomRules: RoomRulesDirectory, signer: CallTokenSigner
    }

    /// The room a start needs on the data directory's disk: the database's WAL and shared-memory
    /// files, the keys, the lock (a running server refuses what does not fit, and says so).
    static let minimumFreeBytes: Int64 = 1 << 20

    /// The data directory, created (or tightened) to 0700, on a disk with `minimumFreeBytes` free.
    private func prepareDataDirectory(_ dir: String) throws(ServerStartError) {
        var before = stat()
        let wasOpen = stat(dir, &before) == 0 && before.st_mode & 0o077 != 0
        guard PrivateFiles.directory(dir) else { throw .cannotCreateDataDir(dir, why: PrivateFiles.whyNotDirectory(dir)) }
        // A full disk is said as one — not as a database that cannot be read (whose remedy is a
        // backup) or a key file that cannot be written.
        if let free = DiskSpace.availableBytes(dir), free < Self.minimumFreeBytes { throw .diskFull(dir, free: free) }
        if wasOpen {
            log.warn("the data directory was open to others: made it private (0700)", ["data_dir": dir, "was": String(before.st_mode & 0o777, radix: 8)])
        }
    }

    /// `mediaPublicAddress`; in a cluster without one, the listen host (clients whose signalling
    /// is on another node are told this node's host in `joined`).
    private func mediaPublicAddress() throws(ServerStartError) -> (host: String, port: Int?)? {
        let given = try Self.mediaAddress(configuration.mediaPublicAddress)
        guard configuration.redisURL != nil && given == nil else { return given }
        guard !Self.isWildcard(configuration.host) else {
            log.warn("in a cluster, give --media-public-address: clients whose signalling is on another node would send media there", ["node": nodeID])
            return nil
        }
        return (configuration.host, nil)
    }

    /// The store (SQLite in the data directory, or PostgreSQL), with the last run's unclean end
    /// dealt with; returns the sessions whose recording a crash cut (it starts again when their
    /// people are back).
    private func openStore(_ dir: String, keysCreatedNow: Bool) throws(ServerStartError) -> (CallStore, cutRecordings: [String]) {
        let dbPath = (dir as NSString).appendingPathComponent("callroom.sqlite")
        if configuration.databaseURL == nil && !keysCreatedNow { try CrashRecovery.checkDatabaseBesideKeys(dbPath) }
        guard configuration.databaseURL != nil || PrivateFiles.create(dbPath) else { throw .cannotWrite(dbPath) }
        do {
            let store: CallStore
            if let url = configuration.databaseURL { store = try CallStore(database: try PostgresDatabase(url: url)) } else { store = try CallStore(path: dbPath) }
            // (Before crash recovery: what it finishes is queued for the bucket too.)
            store.queuesUploads = configuration.objectStorage != nil
            if configuration.redisURL == nil {
                let closed = try store.closeInterruptedCalls()
                if closed > 0 { log.warn("closed calls left open by an unclean shutdown", ["count": "\(closed)"]) }
            } else {
                // Several nodes share the database: only this node's calls (and dead nodes', once the registry is read).
                store.nodeID = nodeID
            }
            // Several nodes share the database: only what this node's data directory holds is this node's to finish.
            let onlyLocal = configuration.redisURL != nil
            let cut = try CrashRecovery.finaliseInterruptedRecordings(store, dataDir: dir, log: log, onlyLocal: onlyLocal)
            try CrashRecovery.finaliseInterruptedTranscripts(store, dataDir: dir, log: log, onlyLocal: onlyLocal)
            return (store, cut)
        } catch {
            throw .database(error.description)
        }
    }

    /// The caption engine `captionsEngine` asks for, when it is installed (a cheap check: no
    /// process starts until someone is transcribed); else, as `automatic` chooses, the first
    /// installed of Moonshine, Whisper and PocketSphinx (the order by measurement on read human
    /// speech and the final caption's delay, on two CPUs: docs/benchmarks.md) — said at start, as
    /// a warning when the one asked for by name is not installed.
    static func captionEngine(_ c: ServerConfiguration) -> (engine: SpeechRecognizerEngine, note: (level: ServerLog.Level, message: String)) {
        if let e = c.captionEngineOverride { return (e, (.info, "captions by \(e.name) (captionEngineOverride)")) }
        let moonshine = MoonshineEngine(python: c.moonshinePython, modelDir: c.moonshineModelDir)
        let whisper = WhisperEngine(python: c.whisperPython, modelDir: c.whisperModelDir)
        typealias Candidate = (choice: CaptionsEngineChoice, engine: SpeechRecognizerEngine, installed: Bool, said: String, missing: String)
        let automatic: [Candidate] = [
            (.moonshine, moonshine, moonshine.isInstalled, "Moonshine (base, worker processes under \(c.moonshinePython))",
             "the Moonshine engine is not installed at \(c.moonshinePython) with its model in \(c.moonshineModelDir) (scripts/install-deps.sh)"),
            (.whisper, whisper, whisper.isInstalled, "Whisper (\(c.whisperModelDir ?? "tiny.en"), worker processes under \(c.whisperPython))",
             "the Whisper engine is not installed at \(c.whisperPython) (scripts/install-deps.sh)"),
            (.pocketsphinx, PocketSphinxEngine(modelRoot: c.captionModelDir), true, "PocketSphinx", ""),
        ]
        let candidates = automatic.filter { $0.choice == c.captionsEngine } + automatic.filter { $0.choice != c.captionsEngine }
        var missing: [String] = []
        for candidate in candidates {
            guard candidate.installed else {
                missing.append(candidate.missing)
                continue
            }
            let said = "captions by \(candidate.said)" + (candidate.choice == c.captionsEngine ? " (captionsEngine)" : "")
            let asked = c.captionsEngine == .automatic || candidate.choice == c.captionsEngine
            return (candidate.engine, (asked ? .info : .warn, (missing + [said]).joined(separator: "; ")))
        }
        return (automatic[automatic.count - 1].engine, (.warn, missing.joined(separator: "; ")))  // (PocketSphinx is always installed)
    }

    /// `objectStorage`: a small object stored and deleted before the ports open, so wrong
    /// credentials, a missing bucket or a refused write stop the start with the store's code; a
    /// store that does not answer now is only warned of (uploads wait in the queue for it).
    private func probeObjectStorage() throws(ServerStartError) {
        guard let c = configuration.objectStorage else { return }
        let fields = ["endpoint": c.endpoint, "bucket": c.bucket]
        if c.endpoint.hasPrefix("http://"), !Self.isLoopbackEndpoint(c.endpoint) {
            log.warn("object storage over plain http: recordings cross the network unencrypted", fields)
        }
        guard let (message, transient) = ObjectUploader.probe(c, nodeID: nodeID) else {
            log.info("object storage ready", fields)
            return
        }
        guard transient else {
            throw .objectStorage("object storage \(c.endpoint) bucket '\(c.bucket)' refused a test write: \(message) "
                                 + "(check objectStorage's accessKeyID and secret, the bucket's name and region, and that the key may put and delete objects)")
        }
        log.warn("object storage does not answer now; uploads wait in their queue", fields.merging(["error": message]) { a, _ in a })
    }

    static func isLoopbackEndpoint(_ endpoint: String) -> Bool {
        guard let host = URL(string: endpoint)?.host else { return false }
        return host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
    }

    /// The UDP relay, with the kernel fast path where configured (and loadable, for `auto`).
    /// The WebRTC gateway on `webrtcPort` (nil: off, or its port would not open — said, and
    /// browsers' offers are refused). Its candidate is the media's public host, else the
    /// listening host (a wildcard one: 127.0.0.1, with a warning).
    private func openWebRTC(relay: MediaRelay, rooms: RoomRegistry, mediaPublic: (host: String, port: Int?)?) -> WebRTCGateway? {
        guard let port = configuration.webrtcPort else { return nil }
        var candidate = mediaPublic?.host ?? configuration.host
        if Self.isWildcard(candidate) {
            log.warn("browsers are told to send media to 127.0.0.1: give --media-public-address for others to reach it", ["webrtc_port": "\(port)"])
            candidate = "127.0.0.1"
        }
        do {
            let gateway = try WebRTCGateway(host: configuration.host, port: port, candidateAddress: candidate, relay: relay, log: log,
                                            consentIntervalMs: configuration.mediaConsentIntervalMs,
                                            consentTimeoutMs: configuration.mediaConsentTimeoutMs) {
                [weak rooms] connection, pid in rooms?.received(.requestKeyframe(pid: pid), from: connection)
            }
            rooms.webrtc = gateway
            return gateway
        } catch {
            log.error("no WebRTC gateway: browsers cannot join", ["webrtc_port": "\(port)", "error": "\(error)"])
            return nil
        }
    }

    private func openRelay() throws(ServerStartError) -> MediaRelay {
        let c = configuration
        let relay: MediaRelay
        do { relay = try MediaRelay(host: c.host, port: c.mediaPort, threads: c.relayThreads, maxDelayMs: c.relayMaxDelayMs,
                                   consentIntervalMs: c.mediaConsentIntervalMs, consentTimeoutMs: c.mediaConsentTimeoutMs,
                                   senderLimits: c.senderLimits) } catch {
            throw .cannotBindMedia("\(c.host):\(c.mediaPort): \(error)")
        }
        guard c.relayFastPath != .off else { return relay }
        let object = c.relayFastPathObject ?? RelayFastPath.defaultObjectPath()
        do {
            relay.attachFastPath(try RelayFastPath(objectPath: object, host: c.host, port: relay.port, senderLimits: c.senderLimits))
            log.info("relay fast path on", ["object": object])
        } catch {
            guard c.relayFastPath == .auto else {
                relay.close()
                throw .fastPath(error.description)
            }
            log.warn("relay fast path off", ["reason": error.description])
        }
        return relay
    }

    /// The signalling side, wired but not yet serving: rooms, ringing, their outboxes, the
    /// gateway and (with `redisURL`) this node's cluster link. The caller closes the relay when
    /// this throws.
    private func assemble(store: CallStore, relay: MediaRelay, mediaPublic: (host: String, port: Int?)?,
                          providers: [PushPlatform: any PushProvider], cutRecordings: [String], tlsFiles: TLSFiles?,
                          connectionBudget: Int) throws(ServerStartError) -> Assembly {
        let signer = CallTokenSigner(secret: Hex.decode(keys.tokenSecret) ?? [])
        let limits = roomLimits
        let directory: WebhookDirectory, revocations: TokenRevocations, roomRules: RoomRulesDirectory
        do {
            directory = WebhookDirectory(fixed: configuration.webhooks, added: try Self.added(store, beside: configuration.webhooks))
            // Auth tokens revoked one by one within a call token's lifetime: their call tokens may still be about.
            let since = epochMilliseconds() - configuration.callTokenTTLSeconds * 1000
            revocations = TokenRevocations(try store.tokenRevocations(), authTokens: try store.authTokenRevocations(since: since),
                                           invites: try store.revokedInvites(since: since))
            roomRules = RoomRulesDirectory(defaultModeration: configuration.firstJoinerModerator ? .firstJoiner : .operator,
                                           defaultAccess: configuration.roomAccess, rules: try store.allRoomRules())
        } catch {
            throw .database(error.description)
        }
        let hooks = WebhookOutbox(directory: directory, appID: keys.appId, region: configuration.region)
        let rooms = RoomRegistry(store: store, signer: signer, appID: keys.appId, relay: relay, log: log, limits: limits, outbox: hooks,
                                 publicURL: configuration.publicURL, mediaPublicAddress: mediaPublic,
                                 revocations: revocations, roomRules: roomRules)
        if !cutRecordings.isEmpty { rooms.resumeRecordings(in: cutRecordings) }
        let calls = CallRegistry(store: store, log: log, defaultTimeoutSeconds: configuration.ringTimeoutSeconds, outbox: hooks,
                                 pushPlatforms: providers.keys.sorted { $0.rawValue < $1.rawValue }, limits: configuration.ringLimits)
        calls.authTokenTTLSeconds = configuration.authTokenTTLSeconds
        // (In a cluster the ringing node restores the rings on record when it becomes that.)
        do { if configuration.redisURL == nil { try calls.restore() } } catch { throw .database(error.description) }
        let webhooks = WebhookDeliverer(store: store, webhooks: directory, maxAttempts: configuration.webhookMaxAttempts,
                                        queueLimit: configuration.webhookQueueLimit, log: log)
        // Each transition's event follows the commit of its outbox rows: send them now.
        let push = providers.isEmpty ? nil : PushSender(store: store, providers: providers, log: log)
        calls.onEvent = { [weak webhooks, weak push] _, _ in
            webhooks?.poke()
            push?.poke()
        }
        rooms.onCommitted = { [weak webhooks] in webhooks?.poke() }
        let auditPath = (configuration.dataDir as NSString).appendingPathComponent("audit.jsonl")
        let audit = AuditLog(path: auditPath)
        if audit == nil { log.warn("the audit log cannot be written", ["path": auditPath]) }
        rooms.audit = audit
        let gateway = WebGateway(configuration: configuration, nodeID: nodeID, log: log, refusals: refusals, audit: audit,
                                 metrics: { [weak self] in self?.metricsText() ?? "" })
        // A moderator's ban for good: as the REST endpoint does it (stored, then every node told).
        rooms.setBan = { [weak self, log] sid, uid, banned in
            do {
                let rules = try roomRules.setBan(uid, banned: banned, in: sid, store: store)
                self?.roomRulesChanged(sid, rules, lifted: banned ? nil : uid)
            } catch {
                log.error("a moderator's ban could not be stored", ["session": sid, "error": "\(error)"])
            }
        }
        // TCP connections per address: its WebSockets plus room for its HTTP requests.
        let web = WebServer(host: configuration.host, tls: tlsFiles, bodyTimeoutSeconds: configuration.requestBodyTimeoutSeconds,
                            maxQueuedBytes: configuration.maxQueuedBytesPerConnection, maxQueuedBytesTotal: configuration.maxQueuedBytesTotal,
                            maxOpenDescriptors: connectionBudget, maxConnectionsPerAddress: configuration.maxConnectionsPerAddress + 32,
                            addresses: configuration.clientAddresses, delegate: gateway)
        rooms.attach(outbox: gateway)
        calls.attach(outbox: gateway)
        let localSignals = LocalSignalRouter(outbox: gateway, signalBurst: limits.signalBurst, signalPerSecond: limits.signalPerSecond, handlers: [.room: rooms, .presence: calls, .calls: calls])
        var cluster: ClusterLink?
        if let redis = configuration.redisURL {
            // Joined before the port opens: the first join may already be for a room elsewhere.
            cluster = try joinCluster(redis: redis, local: localSignals, gateway: gateway, signer: signer, rooms: rooms, calls: calls,
                                      revocations: revocations, roomRules: roomRules, store: store, mediaPort: relay.port)
        }
        rooms.onRoomEnded = { [weak calls, weak cluster] sid in
            if let cluster { cluster.router.roomEnded(sid) } else { calls?.roomEnded(sid) }
            cluster?.membership.release(session: sid)
        }
        gateway.attach(.init(web: web, relay: relay, signals: cluster?.router ?? localSignals, cluster: cluster))
        return Assembly(web: web, gateway: gateway, rooms: rooms, calls: calls, webhooks: webhooks, push: push, cluster: cluster,
                        hooks: hooks, directory: directory, revocations: revocations, roomRules: roomRules, signer: signer)
    }

    private var roomLimits: RoomLimits {
        var limits = RoomLimits()
        limits.maxParticipants = configuration.maxParticipantsPerRoom
        limits.gracePeriodSeconds = configuration.gracePeriodSeconds
        limits.maxRooms = configuration.maxRooms
        limits.maxRoomsPerUser = configuration.maxRoomsPerUser
        return limits
    }

    /// Where the server's own members reach it: its signalling and its relay on the listen host.
    private func memberEndpoints(relayPort: Int, tls: Bool) -> MemberLauncher.Endpoints? {
        let host = Self.isWildcard(configuration.host) ? "127.0.0.1" : configuration.host
        guard let relay = SocketAddress(host: host, port: relayPort),
              let signalling = URL(string: (tls ? "wss" : "ws") + "://\(host):\(port)/v1/signal") else { return nil }
        return .init(signalling: signalling, relay: relay, publicURL: configuration.publicURL ?? url)
    }

    /// The REST routes, with what REST changes told to the rest of the server.
    private func restRouter(_ a: Assembly, store: CallStore, relayPort: Int) -> RESTRouter {
        let directory = a.directory, revocations = a.revocations
        return RESTRouter(store: store, keys: keys, signer: a.signer, config: configuration, log: log, mediaPort: relayPort,
                          publicURL: configuration.publicURL ?? url, webhooks: directory, roomRules: a.roomRules,
                          webhooksChanged: { [weak deliverer = a.webhooks, log, fixed = configuration.webhooks] in
            // A webhook was added, changed or removed over REST: sign and send with the new set.
            do { directory.setAdded(try Self.added(store, beside: fixed)) } catch {
                // (The REST write committed; the next change, or a restart, reads the set again.)
                log.error("webhooks changed but the store could not be read: sending with the previous set", ["error": "\(error)"])
            }
            deliverer?.start()
            log.info("webhooks changed", ["count": "\(directory.all.count)"])
        }, revoke: { [weak rooms = a.rooms, weak calls = a.calls, weak self, log] revocation in
            // Seconds: a token issued in the revoking second is refused too (iat has no finer grain).
            let notBefore = epochMilliseconds() / 1000 + 1
            switch revocation {
            case .user(let uid):
                try store.revokeTokens(uid: uid, notBefore: notBefore)
                log.info("tokens revoked: sessions ended", ["uid": uid])
                self?.broadcast(.revoked(uid: uid, notBefore: notBefore))
            case .authToken(let uid, let id):
                // (The store kept its id as it deleted it.)
                log.info("an auth token revoked: what it opened ended", ["uid": uid, "token_id": id])
                self?.broadcast(.revokedAuthToken(uid: uid, id: id))
            case .invite(let id):
                log.info("an invite revoked: who came in with it left", ["invite_id": id])
                self?.broadcast(.revokedInvite(id: id))
            }
            Self.apply(revocation, notBefore: notBefore, to: revocations, rooms: rooms, calls: calls)
        }, roomRulesChanged: { [weak self] sessionId, rules, lifted in
            self?.roomRulesChanged(sessionId, rules, lifted: lifted)
        }, cluster: { [weak self] () throws(RedisError) -> (node: String, nodes: [ClusterNode])? in
            guard let self, let id = self.clusterNodeID, let nodes = try self.clusterNodes() else { return nil }
            return (id, nodes)
        }, signups: SignupLimiter(configuration),
           storeOutage: OutageLog(log, started: "REST: the database failed; requests are answered ERR_STORAGE",
                                  ended: "REST: the database answers again"))
    }

    // MARK: Running

    /// The cluster's live nodes as the registry has them (nil: not in a cluster).
    public func clusterNodes() throws(RedisError) -> [ClusterNode]? {
        guard let cluster = running?.parts.cluster, cluster.isLive else { return nil }
        return try cluster.membership.nodes()
    }

    /// Stops taking new rooms (the registry stops placing them here); the rooms it has carry on.
    public func drain() { running?.parts.cluster?.membership.drain() }

    /// This node's id in the cluster (nil: not in a cluster).
    public var clusterNodeID: String? { running?.parts.cluster.flatMap { $0.isLive ? $0.membership.nodeID : nil } }

    /// How many rooms this node holds now (any thread; `--drain` waits for 0).
    public var roomsHeld: Int { running?.parts.rooms.roomCount ?? 0 }

    /// Tests: this node's sockets whose room is elsewhere, and other nodes' sockets in rooms here.
    var clusterRouterCounts: (bound: Int, guests: Int)? { running?.parts.cluster?.router.counts }

    /// Tests: this node falls silent to the cluster as if it had died — no more heartbeats
    /// (its entry expires), no more bus — while its rooms and sockets stay.
    func abandonClusterForTests() { running?.parts.cluster?.abandon() }

    /// The Prometheus text of `GET /metrics`.
    public func metricsText() -> String {
        guard let r = running else { return "" }
        return MetricsReport.render(rooms: r.parts.rooms.roomCount, participants: r.parts.rooms.participantCount,
                                    connections: r.parts.gateway.openSockets.load(ordering: .relaxed), relay: r.relay.counters,
                                    store: r.store.metrics, httpRequests: r.parts.gateway.httpRequests.load(ordering: .relaxed),
                                    webhooks: r.parts.webhooks.isRunning ? r.parts.webhooks.counters : nil, push: r.parts.push?.counters,
                                    refusals: refusals.all.map { ($0.0.rawValue, $0.1) }, webrtc: r.webrtc,
                                    objects: r.uploader.map { ($0.counters, (try? r.store.objectCounts()) ?? [:]) })
    }

    /// Uploads and deletions due in object storage, now rather than on the next 2 s turn;
    /// returns how many succeeded (0 without object storage). Any thread.
    @discardableResult
    public func uploadDueObjects() -> Int { running?.uploader?.turn() ?? 0 }

    /// Aborts the bucket's incomplete multipart uploads begun more than `olderThan` seconds ago
    /// (at start and every 6 hours: a day); returns how many. Any thread.
    @discardableResult
    public func abortAbandonedUploads(olderThan: TimeInterval) -> Int { running?.uploader?.abortAbandonedUploads(olderThan: olderThan) ?? 0 }

    /// Push counters (nil when no push service is configured).
    public var pushCounters: PushCounters? { running?.parts.push?.counters }

    /// Webhook delivery counters.
    public var webhookCounters: WebhookCounters? { running?.parts.webhooks.counters }

    /// Relay counters (packets received, forwarded, dropped by reason).
    public var relayCounters: RelayCounters? { running?.relay.counters }

    /// Deletes the recordings and transcripts that ended more than `recordingRetentionDays`
    /// before `now` (files and rows); returns how many of each. At start, then hourly.
    @discardableResult
    public func sweepRecordings(now: Int64 = epochMilliseconds()) -> (recordings: Int, transcripts: Int) {
        let s = running?.maintenance.sweep(now: now)
        return (s?.recordings ?? 0, s?.transcripts ?? 0)
    }

    /// Makes the mixes a full disk held back, where there is room now; returns how many. Every
    /// 30 s and at start, on a utility queue; any thread.
    @discardableResult
    public func mixPendingRecordings() -> Int { running?.maintenance.mixPending() ?? 0 }

    /// Tells every other live node (revocations, room rules): queued off the caller's thread.
    private func broadcast(_ envelope: ClusterEnvelope) { running?.parts.cluster?.broadcast(envelope, log: log) }

    /// A revocation here (from REST or another node): its tokens refused from now on, the
    /// sessions and presence connections it covers ended.
    static func apply(_ r: Revocation, notBefore: Int64, to revocations: TokenRevocations, rooms: RoomRegistry?, calls: CallRegistry?) {
        revocations.revoke(r, notBefore: notBefore)
        rooms?.revoke(r)
        calls?.revoke(r)
    }

    /// A room's rules or bans changed on this node (REST or a moderator): the rooms here apply
    /// them (the banned leave; `lifted` gets back in), and every other node hears.
    private func roomRulesChanged(_ sessionId: String, _ rules: RoomRules?, lifted: String?) {
        running?.parts.rooms.rulesChanged(session: sessionId, liftedBan: lifted)
        broadcast(.roomRules(session: sessionId, rules: rules, lifted: lifted))
    }

    // MARK: Settings

    /// The push services configured, keys loaded (a key file readable by others, or one that
    /// does not parse, stops the start: the message names the file, never its content).
    private func pushProviders() throws(ServerStartError) -> [PushPlatform: any PushProvider] {
        var out: [PushPlatform: any PushProvider] = [:]
        do {
            if let c = configuration.apns {
                let p = try APNsProvider(config: c, signer: APNsProvider.signer(c), log: log)
                out[.apnsVoip] = p
                log.info("APNs VoIP push on", ["endpoint": c.endpoint, "key_id": c.keyId, "team_id": c.teamId])
            }
            if let c = configuration.fcm {
                let account = try ServiceAccount.load(c.serviceAccountFile)
                out[.fcm] = try FCMProvider(config: c, account: account, log: log)
                log.info("FCM push on", ["endpoint": c.endpoint, "project": account.projectId])
            }
        } catch let e as PushKeyError {
            throw .pushKey(e.message)
        } catch {
            throw .pushKey("push: \(error)")
        }
        return out
    }

    /// The REST-added webhooks (a config-file id takes precedence over the same id in the store).
    private static func added(_ store: CallStore, beside fixed: [WebhookConfig]) throws(DatabaseError) -> [WebhookConfig] {
        try store.addedWebhooks().filter { w in !fixed.contains { $0.id == w.id } }
    }

    static func defaultNodeID(host: String, port: Int) -> String {
        guard port != 0 else { return "node-" + Crypto.randomHex(4) }
        guard isWildcard(host) else { return "\(host):\(port)" }
        var name = [CChar](repeating: 0, count: 256)
        let h = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        return "\(h.isEmpty ? "node" : h):\(port)"
    }

    static func isWildcard(_ host: String) -> Bool { host == "0.0.0.0" || host == "::" || host.isEmpty }

    /// `HOST` or `HOST:PORT` (an IPv6 host in brackets).
    static func mediaAddress(_ s: String?) throws(ServerStartError) -> (host: String, port: Int?)? {
        guard let s else { return nil }
        if let (h, p) = try? ArgumentScanner.hostPort(s), (1...65535).contains(p) { return (h, p) }
        guard !s.isEmpty, !s.contains("/"), !s.contains(" "), s.split(separator: ":").count <= 1 || s.hasPrefix("[") else {
            throw .badSetting("mediaPublicAddress must be HOST or HOST:PORT, not '\(s)'")
        }
        return (s.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), nil)
    }

    /// A loopback address (or name): a listen host, or a peer as libwebsockets reports it.
    static func isLoopback(_ host: String) -> Bool { ClientAddresses.isLoopback(host) }
}
