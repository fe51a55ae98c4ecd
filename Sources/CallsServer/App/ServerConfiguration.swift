import CallsCaptions
import CallsObjectStorage
import CallsCore
import CallsRelay
import CallsStore
import CallsTransport
import Foundation

/// `captionsEngine`.
public enum CaptionsEngineChoice: String, Sendable, CaseIterable {
    case automatic, moonshine, whisper, pocketsphinx
}

/// How a `CallServer` is run. A value; build it from flags or a config file.
public struct ServerConfiguration: Sendable {
    /// TCP interface and port for HTTP + WebSocket (port 0 picks a free one).
    public var host: String
    public var port: Int
    /// UDP media port (0 picks a free one).
    public var mediaPort: Int
    /// Browsers' media (WebRTC: ICE-lite, DTLS-SRTP) arrive on this UDP port of the same host
    /// (0: a free one; nil: no WebRTC gateway, browsers' offers are refused).
    public var webrtcPort: Int? = 0
    /// What browsers' `RTCPeerConnection` gets as `iceServers` (JSON, as the W3C spec writes it:
    /// `[{"urls": "turn:turn.example.com:3478?transport=tcp", "username": …, "credential": …}]`):
    /// a TURN server for browsers whose UDP is blocked. Default: none.
    public var webrtcIceServers = "[]"
    /// Where the database and keys live; created if missing.
    public var dataDir: String
    /// The store on PostgreSQL (`postgres://USER:PASSWORD@HOST:PORT/DB` or a libpq connection
    /// string); nil: SQLite in `dataDir` (the embedded default).
    public var databaseURL: String?
    /// Several nodes: the cluster registry in Redis (`redis://HOST:PORT` or `unix:///PATH`),
    /// and this node's id in it (default: `HOST:PORT` of its signalling address). nil: one node.
    public var redisURL: String?
    public var nodeID: String?
    /// Overrides for the keys stored in the data directory.
    public var appId: String?
    public var apiKey: String?
    public var authKey: String?
    /// Whether `login(UID:authKey:)` creates a user that does not exist (a dev-server default).
    public var autoCreateUsers: Bool
    /// Users login may create from one address: this many at once, then this many an hour (the
    /// auth key ships in every app, so anyone may log in as a new uid: a row each, for ever).
    /// 0: none from other addresses. Loopback is exempt while `addressLimitsExemptLoopback`.
    public var autoCreateUsersPerHour = 30
    /// Login creates no user once the app holds this many (users made with the `apikey` are not
    /// limited): the bound a spread of addresses cannot pass.
    public var autoCreateUsersMax = 100_000
    /// Whether the shared auth key logs in at all (`POST /v3/sdk/login`). Off in production
    /// (`--production`): only auth tokens your backend issues work, as the vendor advises.
    public var authKeyLogin = true
    /// Whether, in a room without rules, the first one in moderates (and the longest present
    /// one when the moderator leaves). Off in production: only call-token roles count.
    public var firstJoinerModerator = true
    /// Region name reported to clients.
    public var region: String
    /// Call token lifetime.
    public var callTokenTTLSeconds: Int64
    /// Auth token lifetime (nil: until revoked, as the reference API has it).
    public var authTokenTTLSeconds: Int64?
    public var maxParticipantsPerRoom: Int
    /// How long a participant whose connection dropped is held for `resume` (seconds).
    public var gracePeriodSeconds: Double = 30
    /// TLS for REST and signalling: the certificate chain and key (PEM), reloaded on SIGHUP.
    public var tlsCertificate: String?
    public var tlsPrivateKey: String?
    /// Development TLS: a self-signed certificate made once into `DATA_DIR/tls/` (its
    /// fingerprint is printed); used when no certificate is given.
    public var tlsSelfSigned = false
    /// Serve plain HTTP on an address other than loopback (refused otherwise: tokens and keys
    /// would cross the network in the clear).
    public var allowPlainHTTP = false

    /// The media relay's address as clients must reach it (`HOST` or `HOST:PORT`: behind NAT, or
    /// with several interfaces); sent in `joined`. nil: clients use the signalling host.
    public var mediaPublicAddress: String?

    /// The address people reach this server at (invite links use it); nil: the listening address.
    public var publicURL: String?
    /// Apps that open `/call/*` links: Apple app ids (`TEAMID.bundle`) and Android packages.
    public var appleAppIDs: [String] = []
    public var androidApps: [AndroidApp] = []
    /// Webhook receivers (docs/operations.md) and how many attempts a delivery gets.
    public var webhooks: [WebhookConfig] = []
    public var webhookMaxAttempts: Int = 8
    /// Undelivered events kept per webhook; past it the oldest are dropped (logged, counted).
    public var webhookQueueLimit: Int = 100_000
    /// Push services for ringing phones (docs/operations.md); nil: not configured.
    public var apns: APNsConfig?
    public var fcm: FCMConfig?
    /// How long a ringing call rings before it is `unanswered`, unless the caller says (seconds).
    public var ringTimeoutSeconds: Int = 45
    /// REST requests per second allowed from one peer address, with a burst of twice that.
    public var restRequestsPerSecond: Double = 100
    /// Rooms at once, and rooms one user may be in at once (`ERR_TOO_MANY_ROOMS`).
    public var maxRooms = 10_000
    public var maxRoomsPerUser = 10
    /// Open WebSockets per peer address (`ERR_TOO_MANY_CONNECTIONS` past it).
    public var maxConnectionsPerAddress = 64
    /// Loopback clients are not held to the per-address limits — connections
    /// (`maxConnectionsPerAddress`), users made by login (`autoCreateUsersPerHour`), wrong
    /// passcodes (`PasscodeGuesses`) — the operator's own load generators and demos (the REST
    /// request rate holds for them too). A proxy in front on the same machine makes every
    /// client loopback: name it in `trustedProxies`.
    public var addressLimitsExemptLoopback = true
    /// Proxies in front (a TLS terminator, a load balancer): a request or WebSocket from one is
    /// the client its `X-Forwarded-For` names, for every per-address limit and the logs, and its
    /// own connections are not capped per address. Empty: the header is never read.
    public var trustedProxies: [IPNetwork] = []
    /// Who may read `GET /metrics` (the client's address, as `trustedProxies` make it): others
    /// get 403. Loopback and private networks by default — the counts say how busy the server
    /// is, which is nobody's business on the internet; `["0.0.0.0/0", "::/0"]` opens it to all,
    /// `[]` to none.
    public var metricsAllow: [IPNetwork] = IPNetwork.loopbackAndPrivate
    /// Both of the above, as the web server and the limits take them.
    public var clientAddresses: ClientAddresses {
        ClientAddresses(trustedProxies: trustedProxies, exemptLoopback: addressLimitsExemptLoopback)
    }
    /// A WebSocket the server has not let in (`joined`, `welcome`, `resumed`) within this is closed (seconds).
    public var joinTimeoutSeconds: Double = 10
    /// An HTTP request's body must all be in this long after its head, or the connection
    /// closes (`slow_request`; seconds).
    public var requestBodyTimeoutSeconds = 10
    /// Bytes that may wait to be written to one WebSocket; a peer that does not read past this
    /// is closed with code 4008 and its queue freed.
    public var maxQueuedBytesPerConnection = 4 * 1024 * 1024
    /// Bytes that may wait over all WebSockets together; past it the one with the most waiting
    /// is closed with code 4008 and its queue freed, until the rest fit.
    public var maxQueuedBytesTotal = 256 * 1024 * 1024
    /// Open TCP connections (HTTP and WebSocket) at most; nil: what the descriptor limit leaves
    /// after a reserve (`DescriptorLimit.connectionBudget`). Never more than that.
    public var maxConnections: Int?
    /// `--production`: besides its effects on logging in and moderation (set by callroomd), a
    /// TLS private key that others may read is refused at start.
    public var production = false
    /// Who gets into rooms without rules of their own (`RoomRules.Access`): `open` (the vendor's
    /// model, the default), `invited`, or `lobby`.
    public var roomAccess: RoomRules.Access = .open
    /// What one member may send through the relay (packets and bytes a second, audio and video
    /// apart; 0: no limit), on the socket path, over signalling and in the kernel fast path.
    public var senderLimits = SenderLimits()
    /// How often calls may ring, per caller, callee and group (`ERR_RATE_LIMITED` past it).
    public var ringLimits = RingLimits()
    public var logFormat: ServerLog.Format
    /// How often live calls are stamped in the store; a crash loses at most this much end time.
    public var storeHeartbeatSeconds: Double = 5
    public var logLevel: ServerLog.Level
    /// Where log lines go instead of stderr (an embedder's own log; tests read it).
    public var logSink: (@Sendable (String) -> Void)?
    /// Relay worker threads sharing the UDP media port (`SO_REUSEPORT`); one per core by default.
    public var relayThreads: Int = min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 16)
    /// RTP that waited longer than this in the relay's socket (the relay is overloaded) is
    /// dropped rather than forwarded late; 0 forwards everything however late.
    public var relayMaxDelayMs: Int = 200
    /// Recordings are deleted this many days after they ended (0: kept until you delete them).
    public var recordingRetentionDays: Int = 0
    /// Webhook deliveries and pushes that are over (delivered, dead, sent, failed…) are
    /// forgotten this many days after they were made (hourly); 0 keeps them for ever.
    public var deliveryRetentionDays = 30
    /// The chat of calls that ended this many days ago is forgotten (hourly; the call logs
    /// stay); 0 keeps it for ever.
    public var chatRetentionDays = 0
    /// The logs of calls that ended this many days ago are forgotten (hourly): the call, its
    /// participants, ring members and chat — once its recordings and transcripts are gone
    /// (`recordingRetentionDays`); 0 keeps them for ever.
    public var callLogRetentionDays = 0
    /// No new recording starts while the recordings take this many MB (0: no limit).
    public var recordingQuotaMB: Int = 0
    /// Where finished recordings and transcripts are uploaded (an S3-compatible bucket), so that
    /// every node serves them and no node's loss takes them (nil: local files only).
    public var objectStorage: ObjectStorageConfiguration?
    /// Where the caption models are (PocketSphinx's layout: `{dir}/en-us/…`; Debian
    /// `pocketsphinx-en-us` installs en-US under the default).
    public var captionModelDir: String = "/usr/share/pocketsphinx/model"
    /// Which caption engine transcribes: the first installed of Whisper, Moonshine and
    /// PocketSphinx (`automatic`: the default by measurement, docs/benchmarks.md), or one by name
    /// (not installed: as `automatic`, said at start).
    public var captionsEngine: CaptionsEngineChoice = .automatic
    /// An engine of this package's own instead of the one `captionsEngine` chooses (tests: a
    /// recogniser with a known delay); not in the configuration file.
    package var captionEngineOverride: (any SpeechRecognizerEngine)?
    /// The Moonshine engine's Python (a venv with onnxruntime: scripts/install-deps.sh).
    public var moonshinePython: String = MoonshineEngine.defaultPython
    /// Its prepared model (`moonshine-worker.py --prepare DIR`).
    public var moonshineModelDir: String = MoonshineEngine.defaultModelDir
    /// The Whisper engine's Python (a venv with faster-whisper and its model: scripts/install-deps.sh).
    public var whisperPython: String = WhisperEngine.defaultPython
    /// Another CTranslate2 Whisper model (a directory with model.bin); nil: the installed tiny.en.
    public var whisperModelDir: String?
    /// Recognisers shared by every transcription on the server (a Whisper worker ≈ 220 MB, a
    /// Moonshine worker ≈ 190 MB and the ≈ 225 MB of weights its workers share, a PocketSphinx decoder ≈ 95 MB; a speaker holds one while
    /// talking, others wait their turn): about one per core.
    public var captionDecoders: Int = 2
    /// Where `startStreaming` sends a room's live mix: an Icecast source URL,
    /// `http://source:PASSWORD@HOST:PORT/MOUNT` (`{sessionId}` in the mount is the room's id);
    /// nil: streaming is unavailable.
    public var streamingURL: String?
    /// Whether a session's settings may name their own Icecast URL (off: a moderator could point
    /// the server at any host).
    public var streamingAllowSessionURLs = false
    /// How long a dropped stream keeps trying to reconnect before it stops.
    public var streamingReconnectSeconds: Double = 60
    /// Media consent (RFC 7675's model): each bound address — a native client's on the relay, a
    /// browser leg's on the WebRTC port — is challenged this often, and media to it stops when it
    /// has not answered for `mediaConsentTimeoutMs`.
    public var mediaConsentIntervalMs: Int = 5000
    public var mediaConsentTimeoutMs: Int = 30_000
    /// The relay's kernel fast path (eBPF, docs/operations.md): off, auto (use it when it loads,
    /// else log why and go on without) or on (refuse to start without it).
    public var relayFastPath: RelayFastPathMode = .off
    /// The compiled fast-path program; nil looks beside the executable, then in `.build/bpf`.
    public var relayFastPathObject: String?

    public init(host: String = "127.0.0.1", port: Int = 7880, mediaPort: Int = 0, dataDir: String,
                appId: String? = nil, apiKey: String? = nil, authKey: String? = nil, autoCreateUsers: Bool = true,
                region: String = "local", callTokenTTLSeconds: Int64 = 24 * 3600, maxParticipantsPerRoom: Int = 50,
                logFormat: ServerLog.Format = .text, logLevel: ServerLog.Level = .info) {
        self.host = host
        self.port = port
        self.mediaPort = mediaPort
        self.dataDir = dataDir
        self.appId = appId
        self.apiKey = apiKey
        self.authKey = authKey
        self.autoCreateUsers = autoCreateUsers
        self.region = region
        self.callTokenTTLSeconds = callTokenTTLSeconds
        self.maxParticipantsPerRoom = maxParticipantsPerRoom
        self.logFormat = logFormat
        self.logLevel = logLevel
    }
}

/// Whether the relay uses its kernel fast path.
public enum RelayFastPathMode: String, Sendable, CaseIterable {
    case off, auto, on
}

/// Why a server could not start.
public enum ServerStartError: Error, Equatable, Sendable, CustomStringConvertible {
    case cannotCreateDataDir(String, why: String)
    /// The data directory's disk has less room than a start needs (`free` bytes).
    case diskFull(String, free: Int64)
    /// Another `callroomd` runs on the data directory (`holder`: which process).
    case dataDirInUse(String, holder: String)
    case badKeysFile(String)
    case cannotWrite(String)
    case database(String)
    case cannotListen(String)
    case cannotBindMedia(String)
    case fastPath(String)
    /// A push key file is missing, malformed or readable by others.
    case pushKey(String)
    /// TLS: a certificate or key that does not load, or plain HTTP on a non-loopback address.
    case tls(String)
    /// A setting that cannot be used as given (the message says which).
    case badSetting(String)
    /// Redis (`--redis`) cannot be reached at start.
    case redis(String)
    /// `--redis`: a live node of the cluster runs with this node's id (at `url`).
    case nodeIDInUse(String, url: String)
    /// `--redis`: this node's keys are not the ones the cluster's live nodes run on.
    case clusterKeys(ours: String, cluster: String)
    /// `objectStorage`: the bucket refused the start's probe (credentials, permissions, no such bucket).
    case objectStorage(String)

    public var description: String {
        switch self {
        case .cannotCreateDataDir(let p, let why): return "cannot create data directory \(p): \(why)"
        case .diskFull(let p, let free):
            return "the disk that holds the data directory \(p) is full (\(free / 1024) KB free; a start needs "
                + "\(CallServer.minimumFreeBytes / 1_048_576) MB): free some space and start again — the data in it is untouched"
        case .dataDirInUse(let p, let holder):
            return "the data directory \(p) is in use by another callroomd (\(holder)): stop it first; nodes of a cluster each need a directory of their own"
        case .badKeysFile(let p): return "the keys file \(p) is not valid JSON with appId, apiKey, authKey and tokenSecret"
        case .cannotWrite(let p): return "cannot write \(p)"
        case .database(let m): return m
        case .cannotListen(let m): return "cannot listen on \(m)"
        case .cannotBindMedia(let m): return "cannot bind the UDP media port: \(m)"
        case .fastPath(let m): return "relay fast path: \(m)"
        case .pushKey(let m): return m
        case .tls(let m): return m
        case .badSetting(let m): return m
        case .redis(let m): return m
        case .nodeIDInUse(let id, let url):
            return "the node id \(id) is in use by a live node of the cluster (\(url)): give each node its own --node-id"
        case .objectStorage(let m): return m
        case .clusterKeys(let ours, let cluster):
            return "this node's keys (fingerprint \(ours)) are not the cluster's (\(cluster), set by its live nodes): "
                + "give every node the same keys — copy keys.json from a running node into this data directory, "
                + "or pass the same --api-key-file/--auth-key-file and keys"
        }
    }
}
