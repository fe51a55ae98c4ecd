import CallsCaptions
import CallsCore
import CallsRecording
import CallsSecurity
import CallsTransport
import Foundation
import Synchronization

/// The CallRoom calls server: REST + WebSocket signalling on one TCP port (libwebsockets), a
/// UDP media relay, and a SQLite store. `callroomd` and `callroom demo` both run one of these.
///
/// ```
///  TCP ─▶ WebServer (lws thread) ─┬─ HTTP ─▶ REST queue ─▶ RESTRouter ─▶ CallStore (SQLite WAL)
///                                 └─ WS ──▶ RoomRegistry (serial queue) ─▶ CallStore
///                                                 │ snapshots            └─▶ SignalOutbox ─▶ WS
///  UDP ─▶ MediaRelay (worker threads) ◀─────────────┘
/// ```
/// Thread rules: `start()` and `stop()` from one owning thread. Everything else is internal.
public final class CallServer: @unchecked Sendable {
    public let configuration: ServerConfiguration
    public private(set) var keys: ServerKeys
    /// The keys this start generated and saved in keys.json (`appId`, `apiKey`, `authKey`;
    /// empty on later starts): print them once. Keys given by flags are saved, never printed.
    public private(set) var generatedKeys: [String] = []
    public private(set) var port = 0
    public private(set) var mediaPort = 0
    public let log: ServerLog
    /// Store failures of the recordings' maintenance (retention sweep, late mixes).
    private let maintenance: StoreOutage

    private var web: WebServer?
    private var relay: MediaRelay?
    /// Server members running now (recorders, transcribers, streamers), by their feature's id
    /// (each removes itself when it has finished).
    private let members = Locked<[String: ServerMember]>([:])
    /// The recognisers every transcriber shares.
    let recognizers: RecognizerPool
    /// The receive thread of every recorder and streamer.
    private let memberHub = ServerMemberHub()
    /// Deletes recordings past their retention, hourly (with a retention configured).
    private var retentionTimer: DispatchSourceTimer?
    /// Makes the mixes a full disk held back (every 30 s).
    private var mixTimer: DispatchSourceTimer?
    private var rooms: RoomRegistry?
    /// This node in the cluster registry (`redisURL`); nil for one node.
    private var cluster: ClusterMembership?
    private var calls: CallRegistry?
    private var webhooks: WebhookDeliverer?
    private var pushSender: PushSender?
    /// Every inbound signalling message goes through here (set before the web server starts).
    private var signals: (any SignalRouter)?
    /// This process's node id: the `node` of every `ConnectionID` it holds, and its id in the
    /// cluster: `nodeID` of the configuration, else `HOST:PORT` of the listen address (the
    /// machine's host name for a wildcard host; `node-` and random hex with port 0).
    public let nodeID: String
    /// Signalling to and from other nodes (`redisURL`); nil for one node.
    private var bus: ClusterBus?
    /// Set once the port is known (the web thread reads it: behind a lock).
    private let routerBox = Locked<RESTRouter?>(nil)
    private var store: CallStore?
    private let restQueue = DispatchQueue(label: "callroom.rest", attributes: .concurrent)
    /// Every admin (API key) and moderator action, in `DATA/audit.jsonl` (set at start).
    private let auditBox = Locked<AuditLog?>(nil)
    private let openSockets = Atomic<Int>(0)
    private let httpRequests = Atomic<UInt64>(0)
    private let restLimiters: Locked<PeerLimiter>
    /// With `--redis`: the same REST limit counted over every node (checked after this node's own).
    private let sharedRESTLimiter: SharedRateLimiter?
    /// Counts and logs every refusal (REST auth, rate limits, signalling auth, room rules …).
    let refusals: Refusals
    /// Open WebSockets: their peer, and whether the server has let them in yet (`authenticated`).
    private let sockets = Locked<(peer: [UInt64: String], perAddress: [String: Int], claimed: Set<UInt64>)>(([:], [:], []))

    public init(configuration: ServerConfiguration) {
        self.configuration = configuration
        self.log = ServerLog(format: configuration.logFormat, level: configuration.logLevel)
        restLimiters = Locked(PeerLimiter(capacity: configuration.restRequestsPerSecond * 2, perSecond: configuration.restRequestsPerSecond))
        sharedRESTLimiter = configuration.redisURL.map {
            SharedRateLimiter(redis: $0, name: "rest", capacity: configuration.restRequestsPerSecond * 2, perSecond: configuration.restRequestsPerSecond)
        }
        refusals = Refusals(log: log)
        maintenance = StoreOutage("recordings", log: log)
        self.keys = ServerKeys(appId: "", apiKey: "", authKey: "", tokenSecret: "")
        nodeID = configuration.nodeID ?? Self.defaultNodeID(host: configuration.host, port: configuration.port)
        recognizers = RecognizerPool(engine: PocketSphinxEngine(modelRoot: configuration.captionModelDir), capacity: configuration.captionDecoders)
        // Low descriptors for libshout's select(2), taken while they are free.
        LowDescriptors.reserve()
    }

    /// The base URL clients use (`http://host:port`, `https://` with TLS).
    public var url: String {
        "\(tlsFiles == nil ? "http" : "https")://\(configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host):\(port)"
    }

    /// The TLS files served (nil: plain HTTP) and the certificate's SHA-256 fingerprint.
    public private(set) var tlsFiles: TLSFiles?
    public private(set) var tlsFingerprint: String?
    /// True when this start made the self-signed certificate (print its fingerprint).
    public private(set) var generatedCertificate = false

    /// Resolves TLS: the given files (checked: they parse and belong together), or the
    /// self-signed development certificate, or none — which only loopback (or `allowPlainHTTP`) may use.
    private func tls(dataDir: String) throws(ServerStartError) -> TLSFiles? {
        var files: TLSFiles?
        if configuration.tlsCertificate != nil || configuration.tlsPrivateKey != nil {
            guard let c = configuration.tlsCertificate, let k = configuration.tlsPrivateKey else {
                throw .tls("give both --tls-cert and --tls-key")
            }
            files = TLSFiles(certificate: c, privateKey: k)
        } else if configuration.tlsSelfSigned {
            let d = (dataDir as NSString).appendingPathComponent("tls")
            let f = TLSFiles(certificate: d + "/cert.pem", privateKey: d + "/key.pem")
            if !FileManager.default.fileExists(atPath: f.certificate) || !FileManager.default.fileExists(atPath: f.privateKey) {
                let host = configuration.host
                let isIP = host.allSatisfy { $0.isNumber || $0 == "." } || host.contains(":")
                let names = ["localhost"] + (isIP || host == "localhost" ? [] : [host])
                let ips = ["127.0.0.1"] + (isIP && host != "127.0.0.1" && host != "0.0.0.0" ? [host] : [])
                let id: TLSIdentity
                do { id = try SelfSignedCertificate.generate(commonName: names.last ?? "localhost", dnsNames: names, ipAddresses: ips) } catch {
                    throw .tls(error.message)
                }
                guard PrivateFiles.directory(d), PrivateFiles.write(Data(id.privateKeyPEM.utf8), to: f.privateKey),
                      PrivateFiles.write(Data(id.certificatePEM.utf8), to: f.certificate, mode: 0o644) else { throw .cannotWrite(d) }
                generatedCertificate = true
            }
            files = f
        }
        guard let files else {
            guard Self.isLoopback(configuration.host) || configuration.allowPlainHTTP else {
                throw .tls("refusing plain HTTP on \(configuration.host): tokens and keys would cross the network in the clear. "
                           + "Give --tls-cert and --tls-key (or --tls-self-signed for a test), or --allow-plain-http behind a TLS proxy")
            }
            return nil
        }
        if configuration.production, case let mode = PrivateFiles.mode(files.privateKey), let mode, mode & 0o077 != 0 {
            throw .tls("the TLS key \(files.privateKey) is readable by others (mode \(String(mode & 0o777, radix: 8))): chmod 600 it (refused under --production)")
        }
        tlsFingerprint = try Self.checkTLS(files)
        tlsFiles = files
        return files
    }

    private static func checkTLS(_ f: TLSFiles) throws(ServerStartError) -> String {
        guard let cert = FileManager.default.contents(atPath: f.certificate) else { throw .tls("cannot read the TLS certificate \(f.certificate)") }
        guard let key = FileManager.default.contents(atPath: f.privateKey) else { throw .tls("cannot read the TLS key \(f.privateKey)") }
        do {
            return try SelfSignedCertificate.check(certificatePEM: String(decoding: cert, as: UTF8.self), privateKeyPEM: String(decoding: key, as: UTF8.self))
        } catch {
            throw .tls("TLS \(f.certificate) / \(f.privateKey): \(error.message)")
        }
    }

    /// Loads the TLS files again (SIGHUP after a renewal): new connections get the new
    /// certificate, calls in progress keep theirs. A pair that does not load is refused and the
    /// old one stays. Returns the new fingerprint.
    @discardableResult
    public func reloadTLS() -> Result<String, ServerStartError> {
        guard let files = tlsFiles, let web else { return .failure(.tls("TLS is not on")) }
        let fp: String
        do { fp = try Self.checkTLS(files) } catch {
            log.error("TLS reload refused; keeping the old certificate", ["error": error.description])
            return .failure(error)
        }
        guard web.reloadCertificates() else {
            log.error("TLS reload failed; keeping the old certificate", [:])
            return .failure(.tls("libwebsockets did not take the new certificate"))
        }
        tlsFingerprint = fp
        log.info("TLS certificate reloaded", ["sha256": fp])
        return .success(fp)
    }

    /// Opens the data directory, binds both ports and starts serving.
    public func start() throws(ServerStartError) {
        let dir = configuration.dataDir
        var before = stat()
        let wasOpen = stat(dir, &before) == 0 && before.st_mode & 0o077 != 0
        guard PrivateFiles.directory(dir) else { throw .cannotCreateDataDir(dir) }
        if wasOpen {
            log.warn("the data directory was open to others: made it private (0700)",
                     ["data_dir": dir, "was": String(before.st_mode & 0o777, radix: 8)])
        }
        let tlsFiles = try tls(dataDir: dir)
        // Before anything opens: every connection, file and socket fits in the raised limit.
        let descriptors = DescriptorLimit.raiseToHard()
        let connectionBudget = min(configuration.maxConnections ?? Int.max, DescriptorLimit.connectionBudget(limit: descriptors.now))
        log.info("descriptors", ["limit": "\(descriptors.now)", "was": "\(descriptors.before)", "connections": "\(connectionBudget)"])
        let given = ServerKeys.Given(appId: configuration.appId, apiKey: configuration.apiKey, authKey: configuration.authKey)
        let (k, created, generated) = try ServerKeys.loadOrCreate(dataDir: dir, given: given)
        keys = k
        generatedKeys = generated
        // Before any port is bound: a bad key file stops the start with nothing to undo.
        let providers = try pushProviders()
        var mediaPublic = try Self.mediaAddress(configuration.mediaPublicAddress)
        if configuration.redisURL != nil && mediaPublic == nil {
            // In a cluster a client's signalling may be on another node: `joined` names this node's host.
            if Self.isWildcard(configuration.host) {
                log.warn("in a cluster, give --media-public-address: clients whose signalling is on another node would send media there", ["node": nodeID])
            } else {
                mediaPublic = (configuration.host, nil)
            }
        }
        let store: CallStore
        /// Sessions whose recording a crash cut: it starts again when their people are back.
        var cutRecordings: [String] = []
        let dbPath = (dir as NSString).appendingPathComponent("callroom.sqlite")
        if configuration.databaseURL == nil && !created { try Self.checkDatabaseBesideKeys(dbPath) }
        guard configuration.databaseURL != nil || PrivateFiles.create(dbPath) else { throw .cannotWrite(dbPath) }
        do {
            if let url = configuration.databaseURL {
                store = try CallStore(database: try PostgresDatabase(url: url))
            } else {
                store = try CallStore(path: dbPath)
            }
            if configuration.redisURL == nil {
                let closed = try store.closeInterruptedCalls()
                if closed > 0 { log.warn("closed calls left open by an unclean shutdown", ["count": "\(closed)"]) }
            } else {
                // Several nodes share the database: only this node's calls (and dead nodes', once the registry is read).
                store.nodeID = nodeID
            }
            // Several nodes share the database: only what this node's data directory holds is this node's to finish.
            let onlyLocal = configuration.redisURL != nil
            cutRecordings = try Self.finaliseInterruptedRecordings(store, dataDir: dir, log: log, onlyLocal: onlyLocal)
            try Self.finaliseInterruptedTranscripts(store, dataDir: dir, log: log, onlyLocal: onlyLocal)
        } catch {
            throw .database(error.description)
        }
        self.store = store
        let relay: MediaRelay
        do { relay = try MediaRelay(host: configuration.host, port: configuration.mediaPort, threads: configuration.relayThreads,
                                   maxDelayMs: configuration.relayMaxDelayMs, consentIntervalMs: configuration.mediaConsentIntervalMs,
                                   consentTimeoutMs: configuration.mediaConsentTimeoutMs, senderLimits: configuration.senderLimits) } catch {
            throw .cannotBindMedia("\(configuration.host):\(configuration.mediaPort) (\(error))")
        }
        if configuration.relayFastPath != .off {
            let object = configuration.relayFastPathObject ?? RelayFastPath.defaultObjectPath()
            do {
                relay.attachFastPath(try RelayFastPath(objectPath: object, host: configuration.host, port: relay.port,
                                                       senderLimits: configuration.senderLimits))
                log.info("relay fast path on", ["object": object])
            } catch {
                guard configuration.relayFastPath == .auto else {
                    relay.close()
                    throw .fastPath(error.description)
                }
                log.warn("relay fast path off", ["reason": error.description])
            }
        }
        let signer = CallTokenSigner(secret: Hex.decode(k.tokenSecret) ?? [])
        var limits = RoomLimits()
        limits.maxParticipants = configuration.maxParticipantsPerRoom
        limits.gracePeriodSeconds = configuration.gracePeriodSeconds
        limits.maxRooms = configuration.maxRooms
        limits.maxRoomsPerUser = configuration.maxRoomsPerUser
        let added: [WebhookConfig]
        do { added = try Self.added(store, beside: configuration.webhooks) } catch { throw .database(error.description) }
        let directory = WebhookDirectory(fixed: configuration.webhooks, added: added)
        let hooks = WebhookOutbox(directory: directory, appID: k.appId, region: configuration.region)
        let revocations: TokenRevocations
        let roomRules: RoomRulesDirectory
        do {
            // Auth tokens revoked one by one within a call token's lifetime: their call tokens may still be about.
            let since = epochMilliseconds() - configuration.callTokenTTLSeconds * 1000
            revocations = TokenRevocations(try store.tokenRevocations(), authTokens: try store.authTokenRevocations(since: since),
                                           invites: try store.revokedInvites(since: since))
            roomRules = RoomRulesDirectory(defaultModeration: configuration.firstJoinerModerator ? .firstJoiner : .operator,
                                           defaultAccess: configuration.roomAccess, rules: try store.allRoomRules())
        } catch {
            relay.close()
            throw .database(error.description)
        }
        let rooms = RoomRegistry(store: store, signer: signer, appID: k.appId, relay: relay, log: log, limits: limits, outbox: hooks,
                                 publicURL: configuration.publicURL, mediaPublicAddress: mediaPublic,
                                 revocations: revocations, roomRules: roomRules)
        if !cutRecordings.isEmpty { rooms.resumeRecordings(in: cutRecordings) }
        let calls = CallRegistry(store: store, log: log, defaultTimeoutSeconds: configuration.ringTimeoutSeconds, outbox: hooks,
                                 pushPlatforms: providers.keys.sorted { $0.rawValue < $1.rawValue }, limits: configuration.ringLimits)
        calls.authTokenTTLSeconds = configuration.authTokenTTLSeconds
        // (In a cluster the ringing node restores the rings on record when it becomes that.)
        do { if configuration.redisURL == nil { try calls.restore() } } catch {
            relay.close()
            throw .database(error.description)
        }
        let deliverer = WebhookDeliverer(store: store, webhooks: directory, maxAttempts: configuration.webhookMaxAttempts,
                                         queueLimit: configuration.webhookQueueLimit, log: log)
        // Each transition's event follows the commit of its outbox rows: send them now.
        let pushes = providers.isEmpty ? nil : PushSender(store: store, providers: providers, log: log)
        calls.onEvent = { [weak deliverer, weak pushes] _, _ in
            deliverer?.poke()
            pushes?.poke()
        }
        pushSender = pushes
        rooms.onCommitted = { [weak deliverer] in deliverer?.poke() }
        let audit = AuditLog(path: (dir as NSString).appendingPathComponent("audit.jsonl"))
        if audit == nil { log.warn("the audit log cannot be written", ["path": (dir as NSString).appendingPathComponent("audit.jsonl")]) }
        auditBox.withLock { $0 = audit }
        rooms.audit = audit
        // A moderator's ban for good: as the REST endpoint does it (stored, then every node told).
        rooms.setBan = { [weak self, log] sid, uid, banned in
            do {
                let rules = try roomRules.setBan(uid, banned: banned, in: sid, store: store)
                self?.roomRulesChanged(sid, rules, lifted: banned ? nil : uid)
            } catch {
                log.error("a moderator's ban could not be stored", ["session": sid, "error": "\(error)"])
            }
        }
        webhooks = deliverer
        // TCP connections per address: its WebSockets plus room for its HTTP requests.
        let web = WebServer(host: configuration.host, tls: tlsFiles, maxQueuedBytes: configuration.maxQueuedBytesPerConnection,
                            maxOpenDescriptors: connectionBudget, maxConnectionsPerAddress: configuration.maxConnectionsPerAddress + 32,
                            exemptLoopback: configuration.connectionLimitExemptsLoopback, delegate: self)
        rooms.attach(outbox: self)
        calls.attach(outbox: self)
        self.rooms = rooms
        self.calls = calls
        let localSignals = LocalSignalRouter(outbox: self, limits: limits, handlers: [.room: rooms, .presence: calls, .calls: calls])
        signals = localSignals
        if let redis = configuration.redisURL {
            // One cluster, one set of keys: a node with another keys.json would refuse the
            // others' tokens and sign tokens they refuse. Refused here, before it takes a room.
            let agreed = Result { () throws(RedisError) in try NodeRegistry(redis: RedisClient(address: redis)).agreeOnKeys(k.fingerprint) }
            switch agreed {
            case .failure(let e):
                relay.close()
                throw .redis(e.description)
            case .success(let theirs) where theirs != k.fingerprint:
                relay.close()
                throw .clusterKeys(ours: k.fingerprint, cluster: theirs)
            case .success: break
            }
            // Joined before the port opens: the first join may already be for a room elsewhere.
            do { try joinCluster(redis: redis, local: localSignals, signer: signer, appID: k.appId, rooms: rooms, calls: calls,
                                revocations: revocations, roomRules: roomRules, mediaPort: relay.port) } catch {
                relay.close()
                throw .redis(error.description)
            }
        }
        rooms.onRoomEnded = { [weak calls, weak self] sid in
            if let router = self?.signals as? ClusterSignalRouter { router.roomEnded(sid) } else { calls?.roomEnded(sid) }
            self?.cluster?.release(session: sid)
        }
        self.relay = relay
        mediaPort = relay.port
        do { port = try web.start(port: configuration.port) } catch {
            relay.close()
            throw .cannotListen("\(configuration.host):\(configuration.port)")
        }
        // (Created once the port is known: invite links need the address. Until then: 503.)
        let router = RESTRouter(store: store, keys: k, signer: signer, config: configuration, mediaPort: relay.port,
                                publicURL: configuration.publicURL ?? url, webhooks: directory, roomRules: roomRules,
                                webhooksChanged: { [weak deliverer, log, fixed = configuration.webhooks] in
            // A webhook was added, changed or removed over REST: sign and send with the new set.
            do { directory.setAdded(try Self.added(store, beside: fixed)) } catch {
                // (The REST write committed; the next change, or a restart, reads the set again.)
                log.error("webhooks changed but the store could not be read: sending with the previous set", ["error": "\(error)"])
            }
            deliverer?.start()
            log.info("webhooks changed", ["count": "\(directory.all.count)"])
        }, revoke: { [weak rooms, weak calls, weak self, log] revocation in
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
        })
        routerBox.withLock { $0 = router }
        self.web = web
        // The server's recorder joins its rooms over its own signalling, media from the relay.
        let relayHost = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        let recorderRelay = SocketAddress(host: relayHost, port: relay.port)
        let signalling = URL(string: (tlsFiles == nil ? "ws" : "wss") + "://\(relayHost):\(port)/v1/signal")
        let publicBase = configuration.publicURL ?? url
        let quotaBytes = Int64(configuration.recordingQuotaMB) * 1_000_000
        let pool = recognizers
        var offered: Set<SessionFeature> = [.recording]
        if !pool.engine.languages().isEmpty { offered.insert(.transcription) }
        if configuration.streamingURL != nil { offered.insert(.streaming) }
        rooms.setMemberLauncher(offering: offered) { [weak self, weak rooms, store, log, hooks, dir] launch in
            guard let self, let signalling, let recorderRelay else { return }
            let sink: any ServerMemberSink
            do {
                switch launch.feature {
                case .recording:
                    if quotaBytes > 0, case let used = Self.recordingBytes(dataDir: dir), used >= quotaBytes {
                        log.warn("recording refused: quota full", ["session": launch.session, "used_mb": "\(used / 1_000_000)", "quota_mb": "\(quotaBytes / 1_000_000)"])
                        return rooms?.memberFailed(launch, reason: "The server's recording quota is full (\(used / 1_000_000) of \(quotaBytes / 1_000_000) MB).") ?? ()
                    }
                    sink = try RoomRecorder(config: .init(sessionId: launch.session, rid: launch.id,
                                                          dir: (dir as NSString).appendingPathComponent("recordings/\(launch.id)"), publicURL: publicBase),
                                            store: store, log: log, outbox: hooks)
                case .transcription:
                    let language = launch.language ?? "en-US"
                    do { try pool.check(language: language) } catch {
                        return rooms?.memberFailed(launch, code: .languageUnavailable, reason: "Transcription is not available in \(language): \(error).") ?? ()
                    }
                    sink = try RoomTranscriber(config: .init(sessionId: launch.session, tid: launch.id, language: language,
                                                             dir: (dir as NSString).appendingPathComponent("transcripts")),
                                               pool: pool, store: store, log: log)
                case .streaming:
                    guard let template = launch.target ?? configuration.streamingURL else {
                        return rooms?.memberFailed(launch, code: .featureUnavailable,
                                                   reason: "Streaming is not available on this server (no streamingURL in its configuration).") ?? ()
                    }
                    guard launch.target == nil || configuration.streamingAllowSessionURLs else {
                        return rooms?.memberFailed(launch, code: .streamingFailed,
                                                   reason: "This server streams only to its configured Icecast server (streamingAllowSessionURLs is off).") ?? ()
                    }
                    let target: IcecastTarget
                    do { target = try IcecastTarget(url: template, sessionId: launch.session) } catch {
                        return rooms?.memberFailed(launch, code: .streamingFailed, reason: "The stream's target is not usable: \(error).") ?? ()
                    }
                    sink = try RoomStreamer(config: .init(sessionId: launch.session, id: launch.id, target: target,
                                                          reconnectSeconds: configuration.streamingReconnectSeconds), log: log)
                }
            } catch {
                log.error("\(launch.feature.rawValue) could not start", ["session": launch.session, "id": launch.id, "error": "\(error)"])
                return rooms?.memberFailed(launch, reason: "The \(launch.feature.noun) could not start: \(error)") ?? ()
            }
            let config = ServerMember.Config(signallingURL: signalling, trust: TLSTrust(caFile: nil, insecure: true), relay: recorderRelay,
                                             sessionId: launch.session, id: launch.id, callToken: launch.callToken, feature: launch.feature)
            // Off the rooms' queue: a stream first connects to Icecast (a refusal is the moderator's error).
            DispatchQueue.global().async { [weak self, weak rooms] in
                guard let self else { return }
                if let streamer = sink as? RoomStreamer {
                    do { try streamer.connect() } catch {
                        log.warn("stream refused", ["session": launch.session, "id": launch.id, "error": "\(error)"])
                        return rooms?.memberFailed(launch, code: .streamingFailed, reason: "The live stream could not start: \(error).") ?? ()
                    }
                }
                do {
                    let m = try ServerMember(config: config, sink: sink, hub: self.memberHub, log: log) { [weak self] done in
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
        // Media over signalling (UDP blocked): the relay's copies go out as binary frames.
        relay.setTunnelSink { [weak web] connection, bytes in web?.send(bytes, binary: true, to: connection) }
        relay.start()
        // Mixes a full disk held back are made when there is room.
        let mixes = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        mixes.schedule(deadline: .now() + 1, repeating: .seconds(30))
        mixes.setEventHandler { [weak self] in self?.mixPendingRecordings() }
        mixes.resume()
        mixTimer = mixes
        if configuration.recordingRetentionDays > 0 {
            let t = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
            t.schedule(deadline: .now(), repeating: .seconds(3600))
            t.setEventHandler { [weak self] in self?.sweepRecordings() }
            t.resume()
            retentionTimer = t
        }
        // Deliveries left from an earlier run go out too (the outbox is in the store).
        if !directory.isEmpty { webhooks?.start() }
        pushSender?.start()
        rooms.startHeartbeat(every: configuration.storeHeartbeatSeconds)
        cluster?.start()
        log.info("listening", ["http": url, "media_udp": "\(mediaPort)", "data_dir": dir])
    }

    /// Puts this node in the cluster: the membership (its heartbeats start once the port is
    /// known), the bus to the other nodes, and the router that forwards room messages.
    private func joinCluster(redis: String, local: LocalSignalRouter, signer: CallTokenSigner, appID: String, rooms: RoomRegistry, calls: CallRegistry, revocations: TokenRevocations, roomRules: RoomRulesDirectory, mediaPort: Int) throws(RedisError) {
        let media = configuration.mediaPublicAddress ?? "\(Self.isWildcard(configuration.host) ? "127.0.0.1" : configuration.host):\(mediaPort)"
        let membership = try ClusterMembership(redis: redis, nodeID: nodeID, keysFingerprint: keys.fingerprint, log: log) { [weak self, weak rooms] in
            let load = rooms?.load ?? (rooms: [], participants: 0)
            return (self.map { $0.configuration.publicURL ?? $0.url } ?? "", media, load.participants, load.rooms)
        }
        let router = ClusterSignalRouter(nodeID: nodeID, local: local, outbox: self, signer: signer, appID: appID, log: log, registry: membership,
                                         becameRingingNode: { [weak membership, weak calls, log] in
            membership?.markRunsRinging()
            do { try calls?.restore() } catch { log.error("the rings on record could not be read", ["error": "\(error)"]) }
        }, ringRoomEnded: { [weak calls] sid in calls?.roomEnded(sid) })
        let bus = try ClusterBus(redis: redis, nodeID: nodeID, log: log) { [weak self, weak router] envelope in
            switch envelope {
            case .toClient(let c, let text):
                // A room on another node admitted this connection: its join timeout ends.
                if self?.isAuthenticated(c) == false, ServerMessage.authenticates(json: text) { self?.authenticated(c) }
                self?.web?.send(text: text, to: c)
            case .close(let c): self?.web?.close(c)
            case .forward, .closed, .roomEnded: router?.arrived(envelope)
            case .revoked(let uid, let notBefore):
                Self.apply(.user(uid), notBefore: notBefore, to: revocations, rooms: rooms, calls: calls)
                self?.log.info("tokens revoked on another node: sessions here ended", ["uid": uid])
            case .revokedInvite(let id):
                Self.apply(.invite(id: id), notBefore: 0, to: revocations, rooms: rooms, calls: calls)
                self?.log.info("an invite revoked on another node: who came in with it here left", ["invite_id": id])
            case .revokedAuthToken(let uid, let id):
                Self.apply(.authToken(uid: uid, id: id), notBefore: 0, to: revocations, rooms: rooms, calls: calls)
                self?.log.info("an auth token revoked on another node: what it opened here ended", ["uid": uid, "token_id": id])
            case .roomRules(let session, let rules, let lifted):
                roomRules.set(session, rules)
                rooms.rulesChanged(session: session, liftedBan: lifted)
                self?.log.info("room rules changed on another node", ["session": session])
            }
        }
        router.attach(bus: bus)
        // Calls this node's last run left open, and those of nodes that are gone.
        if let store {
            let live = Set(try membership.nodes().map(\.id)).subtracting([nodeID])
            do {
                let owners = try store.nodesWithOpenCalls().subtracting(live).union([nodeID])
                let closed = try store.closeInterruptedCalls(of: .nodes(owners))
                if closed > 0 { log.warn("closed calls left open by an unclean shutdown", ["count": "\(closed)", "nodes": owners.sorted().joined(separator: ",")]) }
            } catch {
                // (Every live node closes a gone node's calls; a restart of this one closes its own.)
                log.error("could not close calls left open by an unclean shutdown", ["error": "\(error)"])
            }
        }
        let seen = Locked<Set<String>>([])
        membership.onLiveNodes = { [weak router, weak store, log] live in
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
        self.bus = bus
        cluster = membership
        signals = router
    }

    /// Tells every other live node (revocations, room rules): queued off the caller's thread.
    private func broadcast(_ envelope: ClusterEnvelope) {
        guard let bus, let cluster else { return }
        DispatchQueue.global().async { [nodeID, log] in
            do {
                for n in try cluster.nodes() where n.id != nodeID { bus.publish(envelope, to: n.id) }
            } catch {
                log.warn("redis unavailable: other nodes learn of this only after their restart", ["error": "\(error)"])
            }
        }
    }

    static func defaultNodeID(host: String, port: Int) -> String {
        guard port != 0 else { return "node-" + Crypto.randomHex(4) }
        guard isWildcard(host) else { return "\(host):\(port)" }
        var name = [CChar](repeating: 0, count: 256)
        let h = gethostname(&name, name.count) == 0 ? String(cString: name) : ""
        return "\(h.isEmpty ? "node" : h):\(port)"
    }

    static func isWildcard(_ host: String) -> Bool { host == "0.0.0.0" || host == "::" || host.isEmpty }

    /// Ends every call, stops both ports and waits for the threads. Idempotent.
    public func stop() {
        cluster?.stop()
        cluster = nil
        retentionTimer?.cancel()
        retentionTimer = nil
        mixTimer?.cancel()
        mixTimer = nil
        rooms?.closeAll(reason: .serverShuttingDown)
        // Server members finish their files and rows before the store and sockets go.
        for m in members.withLock({ Array($0.values) }) { m.stop() }
        memberHub?.stop()
        rooms?.stopHeartbeat()
        calls?.settle()
        webhooks?.stop()
        pushSender?.stop()
        // Give queued `left` messages a moment to flush before the sockets go.
        Thread.sleep(forTimeInterval: 0.05)
        bus?.stop()
        bus = nil
        web?.stop()
        relay?.stop()
        web = nil
        relay = nil
    }

    /// The cluster's live nodes as the registry has them (nil: not in a cluster).
    public func clusterNodes() throws(RedisError) -> [ClusterNode]? {
        guard let cluster else { return nil }
        return try cluster.nodes()
    }

    /// Stops taking new rooms (the registry stops placing them here); the rooms it has carry on.
    public func drain() { cluster?.drain() }

    /// This node's id in the cluster (nil: not in a cluster).
    public var clusterNodeID: String? { cluster?.nodeID }

    /// How many rooms this node holds now (any thread; `--drain` waits for 0).
    public var roomsHeld: Int { rooms?.roomCount ?? 0 }

    /// Tests: this node's sockets whose room is elsewhere, and other nodes' sockets in rooms here.
    var clusterRouterCounts: (bound: Int, guests: Int)? { (signals as? ClusterSignalRouter)?.counts }

    /// Tests: this node falls silent to the cluster as if it had died — no more heartbeats
    /// (its entry expires), no more bus — while its rooms and sockets stay.
    func abandonClusterForTests() {
        cluster?.abandon()
        bus?.stop()
        cluster = nil
        bus = nil
    }

    /// The Prometheus text of `GET /metrics`.
    public func metricsText() -> String {
        guard let rooms, let relay, let store else { return "" }
        return MetricsReport.render(rooms: rooms.roomCount, participants: rooms.participantCount,
                                    connections: openSockets.load(ordering: .relaxed), relay: relay.counters,
                                    store: store.metrics, httpRequests: httpRequests.load(ordering: .relaxed),
                                    webhooks: webhooksInUse ? webhooks?.counters : nil, push: pushSender?.counters,
                                    refusals: refusals.all.map { ($0.0.rawValue, $0.1) })
    }

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

    /// Whether any webhook is (or was, since start) configured: its counters are in /metrics.
    private var webhooksInUse: Bool { webhooks?.isRunning ?? false }

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
    static func isLoopback(_ host: String) -> Bool { WebServer.isLoopback(host) }

    /// A revocation here (from REST or another node): its tokens refused from now on, the
    /// sessions and presence connections it covers ended.
    private static func apply(_ r: Revocation, notBefore: Int64, to revocations: TokenRevocations, rooms: RoomRegistry?, calls: CallRegistry?) {
        revocations.revoke(r, notBefore: notBefore)
        rooms?.revoke(r)
        calls?.revoke(r)
    }

    /// A room's rules or bans changed on this node (REST or a moderator): the rooms here apply
    /// them (the banned leave; `lifted` gets back in), and every other node hears.
    private func roomRulesChanged(_ sessionId: String, _ rules: RoomRules?, lifted: String?) {
        rooms?.rulesChanged(session: sessionId, liftedBan: lifted)
        broadcast(.roomRules(session: sessionId, rules: rules, lifted: lifted))
    }

    /// Which signalling errors are refusals worth counting (and logging once a minute per peer).
    static func refusalCause(_ code: SignalErrorCode) -> RefusalCause? {
        switch code {
        case .tokenInvalid, .tokenExpired, .tokenRevoked, .appIdMismatch, .tokenSessionMismatch, .authTokenInvalid: return .signalAuth
        case .removedFromSession, .tokenInUse, .notOnAllowList, .passcodeWrong, .roomFull, .notCallParty, .bannedFromRoom: return .roomAccess
        case .notModerator: return .moderation
        case .rateLimited: return .signalRate
        default: return nil
        }
    }

    /// Push counters (nil when no push service is configured).
    public var pushCounters: PushCounters? { pushSender?.counters }

    /// Webhook delivery counters.
    public var webhookCounters: WebhookCounters? { webhooks?.counters }

    /// Relay counters (packets received, forwarded, dropped by reason).
    public var relayCounters: RelayCounters? { relay?.counters }
}

extension CallServer: WebServerDelegate, SignalOutbox {
    /// The answer to a request over this node's or the cluster's REST limit.
    private static let tooManyRequests = HTTPResponse(status: 429, json: ServerError(.rateLimited, "Too many requests from this address.").json)

    public func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        guard let router = routerBox.withLock({ $0 }) else { return respond(HTTPResponse(status: 503, json: RESTErrorCode.unavailable.json("Starting."))) }
        httpRequests.add(1, ordering: .relaxed)
        let allowed = restLimiters.withLock { $0.allow(request.peer, now: monotonicNanoseconds()) }
        guard allowed else {
            refusals.refused(.rateLimited, peer: request.peer, detail: "\(request.method) \(AuditLog.redacted(path: request.path))")
            return respond(Self.tooManyRequests)
        }
        let audit = auditBox.withLock { $0 }
        restQueue.async { [refusals, sharedRESTLimiter] in
            // (Off the service thread: the shared count is a Redis round trip.)
            if sharedRESTLimiter?.allow(request.peer) == false {
                refusals.refused(.rateLimited, peer: request.peer, detail: "\(request.method) \(AuditLog.redacted(path: request.path)) (all nodes)")
                return respond(Self.tooManyRequests)
            }
            if request.method == "GET" && request.path == "/metrics" {
                return respond(HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4", body: Array(self.metricsText().utf8)))
            }
            let response = router.handle(request)
            let path = AuditLog.redacted(path: request.path)
            if response.status == 401 || response.status == 403 {
                refusals.refused(.restAuth, peer: request.peer, detail: "\(request.method) \(path) → \(response.status)")
            }
            // What the operator's key changed (reads are not actions), and what came of it.
            if request.header("apikey") != nil && request.method != "GET" {
                audit?.record(AuditEntry(actor: "operator@\(request.peer)", action: "\(request.method) \(path)", target: "", result: "\(response.status)"))
            }
            respond(response)
        }
    }

    public func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {
        openSockets.add(1, ordering: .relaxed)
        let id = ConnectionID(node: nodeID, local: connection)
        let limit = configuration.maxConnectionsPerAddress
        let over = sockets.withLock { s -> Bool in
            s.peer[connection] = peer
            s.perAddress[peer, default: 0] += 1
            // Loopback is the operator's own (load generators, a TLS proxy in front): limit at the proxy.
            return s.perAddress[peer, default: 0] > limit && !(configuration.connectionLimitExemptsLoopback && Self.isLoopback(peer))
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
        DispatchQueue.global().asyncAfter(deadline: .now() + configuration.joinTimeoutSeconds) { [weak self] in
            guard let self else { return }
            let idle = self.sockets.withLock { $0.peer[connection] != nil && !$0.claimed.contains(connection) }
            guard idle else { return }
            self.refusals.refused(.idleConnection, peer: peer, detail: "no join within \(Int(self.configuration.joinTimeoutSeconds)) s")
            self.send(.error(code: .joinTimeout, message: "Not joined, logged in or resumed within \(Int(self.configuration.joinTimeoutSeconds)) s."), to: id)
            self.close(id)
        }
    }

    public func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {
        guard let signals else { return }
        let id = ConnectionID(node: nodeID, local: connection)
        // A binary frame is one media packet of a member whose UDP is blocked.
        if binary { return relay?.receiveTunnelled(message, from: connection) ?? () }
        do {
            signals.received(try ClientMessage(json: Data(message)), from: id)
        } catch {
            signals.rejected(error, from: id)
        }
    }

    public func webServer(_ server: WebServer, droppedSlowConnection connection: UInt64, peer: String, queuedBytes: Int) {
        refusals.refused(.slowConsumer, peer: peer, detail: "\(queuedBytes) bytes waiting: closed \(WebServer.slowConsumerCloseCode)")
    }

    public func webServer(_ server: WebServer, refusedConnectionFrom address: String, holding: Int) {
        refusals.refused(.connectionsPerAddress, peer: address, detail: "\(holding) TCP connections open: refused at accept")
    }

    public func webServer(_ server: WebServer, refusedConnectionOverDescriptorBudget descriptor: Int32) {
        refusals.refused(.descriptorBudget, peer: "*", detail: "descriptor \(descriptor): the connection budget is full")
    }

    public func webServer(_ server: WebServer, didClose connection: UInt64) {
        openSockets.subtract(1, ordering: .relaxed)
        sockets.withLock { s in
            s.claimed.remove(connection)
            if let peer = s.peer.removeValue(forKey: connection) {
                s.perAddress[peer, default: 1] -= 1
                if s.perAddress[peer] ?? 0 <= 0 { s.perAddress[peer] = nil }
            }
        }
        signals?.connectionClosed(ConnectionID(node: nodeID, local: connection))
    }

    /// The connection was told it is in (`joined`, `resumed`, `welcome`): the join timeout
    /// no longer closes it. Whatever it only *sent* (a `hello` with a wrong token) does not count.
    private func authenticated(_ connection: UInt64) {
        sockets.withLock { s in if s.peer[connection] != nil { s.claimed.insert(connection) } }
    }

    private func isAuthenticated(_ connection: UInt64) -> Bool { sockets.withLock { $0.claimed.contains(connection) } }

    /// Sends to a connection: one this node holds over its socket, another node's over the cluster bus.
    func send(_ message: ServerMessage, to connection: ConnectionID) {
        guard connection.node == nodeID else {
            guard let bus else { return log.warn("message for another node dropped", ["connection": "\(connection)"]) }
            return bus.publish(.toClient(local: connection.local, message: message.json()), to: connection.node)
        }
        if case .error(let code, let text) = message, let cause = Self.refusalCause(code) {
            refusals.refused(cause, peer: sockets.withLock { $0.peer[connection.local] } ?? "?", detail: "\(code.rawValue): \(text)")
        }
        if message.authenticates { authenticated(connection.local) }
        web?.send(text: message.json(), to: connection.local)
    }

    func close(_ connection: ConnectionID) {
        guard connection.node == nodeID else { return bus?.publish(.close(local: connection.local), to: connection.node) ?? () }
        web?.close(connection.local)
    }

    /// Keys from an earlier start, and a database file that is empty or has no schema: the
    /// data was lost or replaced (a truncated copy, a wrong file). Starting would make a new
    /// empty store under the old keys; refused instead. (No file at all is a fresh store.)
    static func checkDatabaseBesideKeys(_ path: String) throws(ServerStartError) {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: path) else { return }
        let size = (attrs[.size] as? NSNumber)?.intValue ?? 0
        let remedy = "restore the database from a backup, or move keys.json and the database away to start afresh"
        guard size > 0 else { throw .database("the database \(path) is empty (0 bytes) but keys.json is from an earlier start: \(remedy)") }
        let hasSchema: Bool
        do {
            let db = try SQLiteDatabase(path: path, readOnly: true)
            hasSchema = try !db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('schema_version', 'users')").isEmpty
        } catch {
            throw .database("the database \(path) cannot be read (\(error)) but keys.json is from an earlier start: \(remedy)")
        }
        guard hasSchema else { throw .database("the database \(path) has no CallRoom schema but keys.json is from an earlier start: \(remedy)") }
    }

    /// Bytes the recordings take on disk.
    static func recordingBytes(dataDir: String) -> Int64 {
        let root = (dataDir as NSString).appendingPathComponent("recordings")
        guard let e = FileManager.default.enumerator(atPath: root) else { return 0 }
        var total: Int64 = 0
        while let name = e.nextObject() as? String {
            total += (try? FileManager.default.attributesOfItem(atPath: root + "/" + name)[.size] as? NSNumber)?.int64Value ?? 0
        }
        return total
    }

    /// Deletes the recordings that ended more than `recordingRetentionDays` before `now`
    /// (files and rows); returns how many. At start, then hourly.
    @discardableResult
    public func sweepRecordings(now: Int64 = epochMilliseconds()) -> Int {
        guard configuration.recordingRetentionDays > 0, let store else { return 0 }
        let before = now - Int64(configuration.recordingRetentionDays) * 86_400_000
        guard let expired = maintenance.attempt("delete expired recordings", { () throws(DatabaseError) in
            try store.deleteRecordings(endedBefore: before)
        }) else { return 0 }
        for rid in expired {
            try? FileManager.default.removeItem(atPath: (configuration.dataDir as NSString).appendingPathComponent("recordings/\(rid)"))
        }
        if !expired.isEmpty { log.info("recordings past retention deleted", ["count": "\(expired.count)"]) }
        return expired.count
    }

    /// Recordings that stopped without their mix (the disk was full): the mix made now from the
    /// participants' files, where they are on this node, and added to the recording. A failure
    /// (still no room) leaves nothing behind and is tried again later. Returns how many were
    /// made. Every 30 s and at start, on a utility queue; any thread.
    @discardableResult
    public func mixPendingRecordings() -> Int {
        guard let store, let pending = maintenance.attempt("recordings without a mix", { () throws(DatabaseError) in
            try store.recordingsWithoutMix(limit: 20)
        }) else { return 0 }
        var made = 0
        for r in pending {
            let dir = (configuration.dataDir as NSString).appendingPathComponent("recordings/\(r.rid)")
            let tracks = r.tracks.map { dir + "/" + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
            guard !tracks.isEmpty else { continue }  // (another node's, or deleted)
            guard let f = try? StoredRecordingFile.mix(tracks, inDirectory: dir) else { continue }
            do {
                try store.recordingFileAdded(rid: r.rid, file: f)
                made += 1
                log.info("recording mix made after its stop", ["rid": r.rid, "seconds": "\(f.durationMs / 1000)"])
            } catch {
                log.error("store failed on a recording's late mix", ["rid": r.rid, "error": error.description])
            }
        }
        return made
    }

    /// Transcripts a crash cut: the JSON document written from the lines (every caption up to
    /// the last), the row finished.
    static func finaliseInterruptedTranscripts(_ store: CallStore, dataDir: String, log: ServerLog, onlyLocal: Bool = false) throws(DatabaseError) {
        let open = try store.unfinishedTranscripts()
        for t in open {
            let lines = (dataDir as NSString).appendingPathComponent("transcripts/\(t.tid).jsonl")
            // (Another node's transcript, perhaps running now: not this node's to finish.)
            if onlyLocal && !FileManager.default.fileExists(atPath: lines) { continue }
            let doc = try? TranscriptWriter.finalise(linesPath: lines)
            let segments = doc?.segments ?? []
            let ended = t.startedAt + Int64(((segments.map(\.end).max() ?? 0) * 1000).rounded())
            let url = RoomTranscriber.path(t.sessionId, t.tid)
            try store.transcriptionFinished(tid: t.tid, endedAt: max(ended, t.startedAt + 1), url: url,
                                             meta: RoomTranscriber.meta(doc?.language ?? "en-US", doc?.engine ?? "pocketsphinx", segments.count, url))
            log.warn("finalised a transcript an unclean shutdown cut", ["tid": t.tid, "segments": "\(segments.count)"])
        }
    }

    /// Recordings a crash cut: every file's last page marked as the end (a torn page dropped),
    /// and the row finished with what the files hold. Returns their sessions (a recording
    /// starts again in each when its people come back).
    @discardableResult
    static func finaliseInterruptedRecordings(_ store: CallStore, dataDir: String, log: ServerLog,
                                              onlyLocal: Bool = false) throws(DatabaseError) -> [String] {
        let open = try store.unfinishedRecordings()
        var sessions: [String] = []
        for r in open {
            let dir = (dataDir as NSString).appendingPathComponent("recordings/\(r.rid)")
            // (Another node's recording, perhaps running now: not this node's to finish.)
            if onlyLocal && !FileManager.default.fileExists(atPath: dir) { continue }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            var files: [StoredRecordingFile] = []
            // The mix is made when a recording stops: a cut one gets it now, from its participants' files.
            let tracks = names.filter { $0.hasSuffix(".opus") && $0 != "mixed.opus" }.sorted()
            for t in tracks {
                if let f = StoredRecordingFile.finalised(dir + "/" + t, kind: "participant", uid: nil, pid: String(t.dropLast(5))) { files.append(f) }
            }
            let mixed = names.contains("mixed.opus") ? StoredRecordingFile.finalised(dir + "/mixed.opus", kind: "mixed", uid: nil, pid: nil)
                : files.isEmpty ? nil : try? StoredRecordingFile.mix(tracks.map { dir + "/" + $0 }, inDirectory: dir)
            if let f = mixed { files.insert(f, at: 0) }
            let ended = r.startedAt + (files.map(\.durationMs).max() ?? 0)
            try store.recordingFinished(rid: r.rid, endedAt: ended, files: files)
            log.warn("finalised a recording an unclean shutdown cut", ["rid": r.rid, "files": "\(files.count)"])
            if !r.sessionId.isEmpty { sessions.append(r.sessionId) }
        }
        return sessions
    }

}
