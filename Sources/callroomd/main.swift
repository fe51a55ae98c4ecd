import CallsCore
import CallsRecording
import CallsRedis
import CallsServer
import CallsStore
import CallsSupport
import Foundation

let usage = """
    callroomd — the CallRoom calls server (REST, WebSocket signalling, UDP media relay)

    USAGE: callroomd [--config FILE] [--listen HOST:PORT] [--media-port PORT] [--webrtc-port PORT|off] [--data-dir DIR] [--database URL]
                     [--redis URL [--node-id ID]]
                     [--app-id ID] [--api-key KEY] [--auth-key KEY] [--no-auto-create-users]
                     [--log-format text|json] [--log-level debug|info|warn|error] [--relay-threads N]
                     [--relay-fast-path off|auto|on] [--tls-cert FILE --tls-key FILE | --tls-self-signed]
                     [--allow-plain-http] [--production] [--no-auth-key-login]
                     [--api-key-file FILE] [--auth-key-file FILE]

    OPTIONS:
      --config FILE           a JSON file with the same settings (keys: listen, mediaPort, dataDir, database, redis, nodeId,
                              appId, apiKey, authKey, autoCreateUsers, autoCreateUsersPerHour, autoCreateUsersMax,
                              addressLimitsExemptLoopback, trustedProxies, metricsAllow, logFormat, logLevel,
                              maxParticipantsPerRoom, region, storeHeartbeatSeconds, ringTimeoutSeconds,
                              webhooks, webhookMaxAttempts, webhookQueueLimit, publicURL, appLinks, apns, fcm,
                              restRequestsPerSecond, relayThreads, relayMaxDelayMs,
                              mediaConsentIntervalMs, mediaConsentTimeoutMs, recordingRetentionDays, deliveryRetentionDays,
                              chatRetentionDays, callLogRetentionDays, recordingQuotaMB, captionModelDir, captionDecoders, captionsEngine, whisperPython, whisperModelDir,
                              moonshinePython, moonshineModelDir,
                              streamingURL, streamingAllowSessionURLs,
                              streamingReconnectSeconds, objectStorage,
                              relayFastPath, relayFastPathObject, tlsCert, tlsKey, tlsSelfSigned,
                              allowPlainHTTP, authKeyLogin, production, authTokenTTLSeconds,
                              firstJoinerModerator, maxRooms, maxRoomsPerUser, maxConnectionsPerAddress,
                              joinTimeoutSeconds, requestBodyTimeoutSeconds, maxQueuedBytesPerConnection, maxQueuedBytesTotal,
                              maxConnections,
                              relayAudioPacketsPerSecond, relayAudioBytesPerSecond,
                              relayVideoPacketsPerSecond, relayVideoBytesPerSecond,
                              ringCallerPerMinute, ringCalleePerMinute, ringGroupPerMinute, roomAccess,
                              mediaPublicAddress, webrtc, webrtcPort, webrtcIceServers); flags given
                              here take precedence
      --listen HOST:PORT      HTTP + WebSocket address (default 127.0.0.1:7880; port 0 picks a free one)
      --media-port PORT       UDP media relay port on the same host (default 0: a free one)
      --webrtc-port PORT|off  UDP port for browsers' WebRTC media (default 0: a free one; off:
                              no browsers)
      --data-dir DIR          database and keys (default ./callroom-data)
      --database URL          keep the store in PostgreSQL instead of DIR/callroom.sqlite:
                              postgres://USER:PASSWORD@HOST:PORT/DB (or $CALLROOM_DATABASE_URL,
                              or --database-file FILE: the URL on its first line); the schema is
                              created or migrated on start
      --redis URL             join a cluster: register this node (address, load, rooms) in Redis
                              every second — redis://HOST:PORT or unix:///PATH (or $CALLROOM_REDIS_URL);
                              clients may then connect to any node (signalling is forwarded to the
                              room's node); every node needs the same keys.json; GET /v3/cluster/nodes
                              lists the live nodes
      --drain                 (with --redis) SIGTERM drains: no new rooms come here, the rooms here
                              carry on, and the server stops once they have all ended (a second
                              SIGTERM, or SIGINT, stops it at once)
      --node-id ID            this node's id in the cluster (default HOST:PORT of --listen; the host
                              name for a wildcard host)
      --app-id ID             override the stored app id
      --api-key KEY           override the stored REST admin key (visible in ps: prefer the
                              file or $CALLROOM_API_KEY)
      --auth-key KEY          override the stored client auth key (likewise; $CALLROOM_AUTH_KEY)
      --api-key-file FILE     read the REST admin key from FILE (first line)
      --auth-key-file FILE    read the client auth key from FILE (first line)
      --no-auto-create-users  login with the auth key no longer creates missing users
      --no-auth-key-login     the auth key no longer logs anyone in: only auth tokens from your
                              backend (POST /v3/users/{uid}/auth_tokens) work
      --production            both of the above (no auth-key login, no auto-created users),
                              in rooms without rules only call-token roles moderate, and a TLS
                              key others may read is refused
      --log-format FORMAT     text (default) or json, on stderr
      --log-level LEVEL       debug, info (default), warn or error
      --relay-threads N       UDP relay worker threads sharing the media port, 1…64
                              (default: one per core, at most 16)
      --relay-fast-path MODE  the relay's eBPF kernel fast path: off (default), auto (use it
                              if it loads, else say why and go on) or on (refuse to start
                              without it); needs root, Linux ≥ 6.6, scripts/build-bpf.sh
      --tls-cert FILE         serve HTTPS and WSS with this PEM certificate chain …
      --tls-key FILE          … and its PEM private key (both reloaded on SIGHUP, calls stay up)
      --tls-self-signed       development TLS: make a self-signed certificate once into DIR/tls/
                              and print its SHA-256 fingerprint (clients: --ca-file DIR/tls/cert.pem)
      --allow-plain-http      serve plain HTTP on an address other than loopback (behind a TLS
                              proxy); without TLS only loopback is allowed
      --version               print the version
      -h, --help              show this help

    On start it prints one line: callroomd listening on http(s)://HOST:PORT media udp://HOST:PORT
    On first start the keys go into DIR/keys.json (0600, DIR 0700): given ones as given, the rest generated and printed once.
    SIGINT or SIGTERM ends every call and shuts down cleanly (exit status 0). SIGHUP reloads the
    TLS certificate and key.

    """

func fail(_ message: String, code: Int32 = 2) -> Never {
    DescriptorWriter.write(STDERR_FILENO, "callroomd: \(message)\n")
    exit(code)
}

let args: ArgumentScanner
do {
    args = try ArgumentScanner(CommandLine.arguments.dropFirst(),
                               valued: ["config", "listen", "media-port", "webrtc-port", "data-dir", "app-id", "api-key", "auth-key", "log-format", "log-level", "relay-threads", "relay-fast-path",
                                        "tls-cert", "tls-key", "api-key-file", "auth-key-file", "database", "database-file", "redis", "node-id"],
                               boolean: ["no-auto-create-users", "help", "version", "tls-self-signed", "allow-plain-http", "production",
                                         "no-auth-key-login", "drain"])
} catch {
    fail("\(error.message)\nRun 'callroomd --help' for usage.")
}
if args.has("help") { print(usage, terminator: ""); exit(0) }
if args.has("version") { print("callroomd \(CallRoomVersion.string)"); exit(0) }
if let extra = args.positionals.first { fail("unexpected argument '\(extra)'\nRun 'callroomd --help' for usage.") }

var file = ServerConfigFile()
if let path = args["config"] {
    do { file = try ServerConfigFile.load(path: path) } catch { fail(error.message) }
}

/// A flag, else the config file's value.
func pick(_ flag: String, _ fromFile: String?) -> String? { args[flag] ?? fromFile }

var config = ServerConfiguration(dataDir: pick("data-dir", file.dataDir) ?? "callroom-data")
do {
    if let l = pick("listen", file.listen) { (config.host, config.port) = try ArgumentScanner.hostPort(l) }
} catch { fail(error.message) }
// The media relay and the web server listen on IPv4 (the relay's sockets are IPv4 only).
if config.host.contains(":") || config.host.hasPrefix("[") {
    fail("--listen \(config.host): callroomd listens on IPv4 only (an address such as 0.0.0.0, 127.0.0.1 or 192.0.2.10, or a name); IPv6 clients reach it through a proxy or NAT64")
}
if let m = pick("media-port", file.mediaPort.map(String.init)) {
    guard let p = Int(m), (0...65535).contains(p) else { fail("media port must be 0…65535") }
    config.mediaPort = p
}
if file.webrtc == false { config.webrtcPort = nil }
if let w = pick("webrtc-port", file.webrtcPort.map(String.init)) {
    if w == "off" {
        config.webrtcPort = nil
    } else {
        guard let p = Int(w), (0...65535).contains(p) else { fail("webrtc port must be 0…65535 or off") }
        config.webrtcPort = p
    }
}
config.appId = pick("app-id", file.appId)
/// A config-file integer within `range`, else an exit naming the key and the range.
func bounded(_ key: String, _ value: Int?, _ range: ClosedRange<Int>, _ note: String = "") -> Int? {
    guard let v = value else { return nil }
    guard range.contains(v) else { fail("\(key) must be \(range.lowerBound)…\(range.upperBound)\(note)") }
    return v
}
/// A secret: the flag, else its file (first line), else the environment, else the config file.
func secret(_ flag: String, env: String, _ fromFile: String?) -> String? {
    if let v = args[flag] { return v }
    if let path = args[flag + "-file"] {
        guard let data = FileManager.default.contents(atPath: path),
              let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init), !line.isEmpty else {
            fail("--\(flag)-file \(path) cannot be read or is empty")
        }
        return line.trimmingCharacters(in: .whitespaces)
    }
    if let v = ProcessInfo.processInfo.environment[env], !v.isEmpty { return v }
    return fromFile
}
config.apiKey = secret("api-key", env: "CALLROOM_API_KEY", file.apiKey)
config.databaseURL = secret("database", env: "CALLROOM_DATABASE_URL", file.database)
config.redisURL = args["redis"] ?? ProcessInfo.processInfo.environment["CALLROOM_REDIS_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? file.redis
if let r = config.redisURL, RedisClient.socketPath(r) == nil, RedisClient.hostPort(r) == nil {
    fail("--redis must be redis://HOST:PORT or unix:///PATH")
}
config.nodeID = pick("node-id", file.nodeId)
if args.has("drain") && config.redisURL == nil { fail("--drain needs --redis: a single node has nowhere to send new rooms") }
if let id = config.nodeID, id.isEmpty || id.count > 128 || id.contains(where: { $0.isWhitespace }) { fail("--node-id must be 1…128 characters without spaces") }
if let url = config.databaseURL, !(url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") || url.contains("=")) {
    fail("--database must be a postgres:// URL or a libpq connection string (KEY=VALUE …)")
}
config.authKey = secret("auth-key", env: "CALLROOM_AUTH_KEY", file.authKey)
let production = args.has("production") || (file.production ?? false)
config.production = production
config.autoCreateUsers = args.has("no-auto-create-users") || production ? false : (file.autoCreateUsers ?? true)
config.authKeyLogin = args.has("no-auth-key-login") || production ? false : (file.authKeyLogin ?? true)
config.firstJoinerModerator = production ? (file.firstJoinerModerator ?? false) : (file.firstJoinerModerator ?? true)
if let n = bounded("maxRooms", file.maxRooms, 1...1_000_000) { config.maxRooms = n }
if let n = bounded("maxRoomsPerUser", file.maxRoomsPerUser, 1...10_000) { config.maxRoomsPerUser = n }
if let n = bounded("maxConnectionsPerAddress", file.maxConnectionsPerAddress, 1...100_000) { config.maxConnectionsPerAddress = n }
if let n = bounded("joinTimeoutSeconds", file.joinTimeoutSeconds, 1...3600) { config.joinTimeoutSeconds = Double(n) }
if let n = bounded("requestBodyTimeoutSeconds", file.requestBodyTimeoutSeconds, 1...300) { config.requestBodyTimeoutSeconds = n }
if let n = bounded("maxQueuedBytesPerConnection", file.maxQueuedBytesPerConnection, 65_536...268_435_456) { config.maxQueuedBytesPerConnection = n }
if let n = bounded("maxQueuedBytesTotal", file.maxQueuedBytesTotal, 1_048_576...68_719_476_736) { config.maxQueuedBytesTotal = n }
if let n = bounded("maxConnections", file.maxConnections, 16...10_000_000) { config.maxConnections = n }
if let n = bounded("relayAudioPacketsPerSecond", file.relayAudioPacketsPerSecond, 0...100_000, " (0: no limit)") { config.senderLimits.audioPacketsPerSecond = UInt64(n) }
if let n = bounded("relayAudioBytesPerSecond", file.relayAudioBytesPerSecond, 0...100_000_000, " (0: no limit)") { config.senderLimits.audioBytesPerSecond = UInt64(n) }
if let n = bounded("relayVideoPacketsPerSecond", file.relayVideoPacketsPerSecond, 0...1_000_000, " (0: no limit)") { config.senderLimits.videoPacketsPerSecond = UInt64(n) }
if let a = file.roomAccess {
    guard let v = RoomRules.Access(rawValue: a) else { fail("roomAccess must be open, invited or lobby") }
    config.roomAccess = v
}
if let b = file.addressLimitsExemptLoopback { config.addressLimitsExemptLoopback = b }
if let p = file.trustedProxies { config.trustedProxies = p }
if let m = file.metricsAllow { config.metricsAllow = m }
if let n = bounded("autoCreateUsersPerHour", file.autoCreateUsersPerHour, 0...100_000, " (0: none from other addresses than loopback)") { config.autoCreateUsersPerHour = n }
if let n = bounded("autoCreateUsersMax", file.autoCreateUsersMax, 0...100_000_000) { config.autoCreateUsersMax = n }
if let n = bounded("ringCallerPerMinute", file.ringCallerPerMinute, 0...100_000, " (0: no limit)") { config.ringLimits.caller = .init(perMinute: n) }
if let n = bounded("ringCalleePerMinute", file.ringCalleePerMinute, 0...100_000, " (0: no limit)") { config.ringLimits.callee = .init(perMinute: n) }
if let n = bounded("ringGroupPerMinute", file.ringGroupPerMinute, 0...100_000, " (0: no limit)") { config.ringLimits.group = .init(perMinute: n) }
if let n = bounded("relayVideoBytesPerSecond", file.relayVideoBytesPerSecond, 0...1_000_000_000, " (0: no limit)") { config.senderLimits.videoBytesPerSecond = UInt64(n) }
if let n = bounded("resumeGraceSeconds", file.resumeGraceSeconds, 2...600) { config.gracePeriodSeconds = Double(n) }
if let t = bounded("authTokenTTLSeconds", file.authTokenTTLSeconds, 60...31_536_000, " (a minute to a year)") { config.authTokenTTLSeconds = Int64(t) }
config.tlsCertificate = pick("tls-cert", file.tlsCert)
config.tlsPrivateKey = pick("tls-key", file.tlsKey)
config.tlsSelfSigned = args.has("tls-self-signed") || (file.tlsSelfSigned ?? false)
config.allowPlainHTTP = args.has("allow-plain-http") || (file.allowPlainHTTP ?? false)
if let r = file.region { config.region = r }
if let r = bounded("restRequestsPerSecond", file.restRequestsPerSecond, 1...1_000_000) { config.restRequestsPerSecond = Double(r) }
if let w = file.webhooks { config.webhooks = w }
config.mediaPublicAddress = file.mediaPublicAddress
if let servers = file.webrtcIceServers { config.webrtcIceServers = servers }
config.apns = file.apns
config.fcm = file.fcm
config.objectStorage = file.objectStorage
if let u = file.publicURL { config.publicURL = u }
if let a = file.appleAppIDs { config.appleAppIDs = a }
if let a = file.androidApps { config.androidApps = a }
if let n = bounded("webhookQueueLimit", file.webhookQueueLimit, 10...10_000_000) { config.webhookQueueLimit = n }
if let n = bounded("webhookMaxAttempts", file.webhookMaxAttempts, 1...100) { config.webhookMaxAttempts = n }
if let r = bounded("ringTimeoutSeconds", file.ringTimeoutSeconds, 5...300) { config.ringTimeoutSeconds = r }
if let h = bounded("storeHeartbeatSeconds", file.storeHeartbeatSeconds, 1...3600) { config.storeHeartbeatSeconds = Double(h) }
if let t = pick("relay-threads", file.relayThreads.map(String.init)) {
    guard let n = Int(t), (1...64).contains(n) else { fail("relay threads must be 1…64") }
    config.relayThreads = n
}
if let m = pick("relay-fast-path", file.relayFastPath) {
    guard let v = RelayFastPathMode(rawValue: m) else { fail("relay fast path must be off, auto or on") }
    config.relayFastPath = v
}
config.relayFastPathObject = file.relayFastPathObject
if let d = bounded("relayMaxDelayMs", file.relayMaxDelayMs, 0...10_000, " (0: no limit)") { config.relayMaxDelayMs = d }
if let d = bounded("recordingRetentionDays", file.recordingRetentionDays, 0...36_500, " (0: keep)") { config.recordingRetentionDays = d }
if let d = bounded("deliveryRetentionDays", file.deliveryRetentionDays, 0...36_500, " (0: keep)") { config.deliveryRetentionDays = d }
if let d = bounded("chatRetentionDays", file.chatRetentionDays, 0...36_500, " (0: keep)") { config.chatRetentionDays = d }
if let d = bounded("callLogRetentionDays", file.callLogRetentionDays, 0...36_500, " (0: keep)") { config.callLogRetentionDays = d }
if let d = bounded("recordingQuotaMB", file.recordingQuotaMB, 0...100_000_000, " (0: no limit)") { config.recordingQuotaMB = d }
if let d = file.captionModelDir {
    var isDir: ObjCBool = false
    guard FileManager.default.fileExists(atPath: d, isDirectory: &isDir), isDir.boolValue else { fail("captionModelDir \(d) is not a directory") }
    config.captionModelDir = d
}
if let n = bounded("captionDecoders", file.captionDecoders, 1...64) { config.captionDecoders = n }
if let e = file.captionsEngine {
    guard let choice = CaptionsEngineChoice(rawValue: e) else { fail("captionsEngine must be automatic, moonshine, whisper or pocketsphinx") }
    config.captionsEngine = choice
}
if let p = file.whisperPython {
    guard FileManager.default.isExecutableFile(atPath: p) else { fail("whisperPython \(p) is not an executable") }
    config.whisperPython = p
}
if let d = file.whisperModelDir {
    guard FileManager.default.fileExists(atPath: d + "/model.bin") else { fail("whisperModelDir \(d) has no model.bin (a CTranslate2 Whisper model)") }
    config.whisperModelDir = d
}
if let p = file.moonshinePython {
    guard FileManager.default.isExecutableFile(atPath: p) else { fail("moonshinePython \(p) is not an executable") }
    config.moonshinePython = p
}
if let d = file.moonshineModelDir {
    guard FileManager.default.fileExists(atPath: d + "/encoder_model.onnx") else {
        fail("moonshineModelDir \(d) has no encoder_model.onnx (moonshine-worker.py --prepare \(d) makes it)")
    }
    config.moonshineModelDir = d
}
if let u = file.streamingURL {
    do { _ = try IcecastTarget(url: u, sessionId: "check") } catch { fail("streamingURL: \(error)") }
    config.streamingURL = u
}
config.streamingAllowSessionURLs = file.streamingAllowSessionURLs ?? false
if let n = bounded("streamingReconnectSeconds", file.streamingReconnectSeconds, 0...3600) { config.streamingReconnectSeconds = Double(n) }
if let d = bounded("mediaConsentIntervalMs", file.mediaConsentIntervalMs, 200...60_000) { config.mediaConsentIntervalMs = d }
if let d = bounded("mediaConsentTimeoutMs", file.mediaConsentTimeoutMs, 1000...600_000) { config.mediaConsentTimeoutMs = d }
if config.mediaConsentTimeoutMs <= config.mediaConsentIntervalMs {
    fail("mediaConsentTimeoutMs (\(config.mediaConsentTimeoutMs)) must be longer than mediaConsentIntervalMs (\(config.mediaConsentIntervalMs))")
}
if let n = bounded("maxParticipantsPerRoom", file.maxParticipantsPerRoom, 1...10_000) { config.maxParticipantsPerRoom = n }
if let f = pick("log-format", file.logFormat) {
    guard let v = ServerLog.Format(rawValue: f) else { fail("log format must be text or json") }
    config.logFormat = v
}
if let l = pick("log-level", file.logLevel) {
    guard let v = ServerLog.Level(name: l) else { fail("log level must be debug, info, warn or error") }
    config.logLevel = v
}

let server = CallServer(configuration: config)
// Signals are taken before the server starts: a supervisor (or a test) may send SIGTERM as
// soon as it reads "listening", and one arriving between ignoring the default action and
// the handler's start would be lost (seen once in CI: a node that never stopped). A signal
// during start is handled once the main queue runs (dispatchMain, below).
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
signal(SIGHUP, SIG_IGN)
var signalSources: [DispatchSourceSignal] = []
let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .main)
reload.setEventHandler { server.reloadTLS() }
reload.resume()
signalSources.append(reload)
var draining: DispatchSourceTimer?
for sig in [SIGINT, SIGTERM] {
    let src = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    src.setEventHandler {
        let name = sig == SIGINT ? "SIGINT" : "SIGTERM"
        // --drain: the first SIGTERM stops new rooms coming here and waits for these to end.
        if sig == SIGTERM, args.has("drain"), draining == nil, server.roomsHeld > 0 {
            server.drain()
            server.log.info("draining: no new rooms here; stopping when the rooms here have ended", ["rooms": "\(server.roomsHeld)"])
            let t = DispatchSource.makeTimerSource(queue: .main)
            t.schedule(deadline: .now() + 0.5, repeating: 0.5)
            t.setEventHandler {
                guard server.roomsHeld == 0 else { return }
                server.log.info("drained: shutting down", [:])
                server.stop()
                exit(0)
            }
            t.resume()
            draining = t
            return
        }
        server.log.info("shutting down", ["signal": name])
        server.stop()
        exit(0)
    }
    src.resume()
    signalSources.append(src)
}
do { try server.start() } catch { fail(error.description, code: 1) }

/// Writes straight to fd 1 (unbuffered), so a supervisor sees the line at once; a reader that
/// is gone (`callroomd | head -1`, a supervisor's pipe closed) loses the line, and the server
/// goes on (`FileHandle.write` trapped on EPIPE: the server died with SIGILL).
func say(_ line: String) { DescriptorWriter.write(STDOUT_FILENO, line + "\n") }
if !server.generatedKeys.isEmpty {
    // Only what was generated: a key given by a flag or file is the operator's and never printed.
    say("callroomd generated keys (shown once; stored in \(config.dataDir)/keys.json):")
    let values = ["appId": server.keys.appId, "apiKey": server.keys.apiKey, "authKey": server.keys.authKey]
    for name in server.generatedKeys { say("  \(name.padding(toLength: 7, withPad: " ", startingAt: 0)) \(values[name] ?? "")") }
}
if let fp = server.tlsFingerprint, let files = server.tlsFiles {
    say("callroomd TLS certificate \(files.certificate)\(server.generatedCertificate ? " (self-signed, made now)" : "") sha256 \(fp)")
}
say("callroomd listening on \(server.url) media udp://\(config.host):\(server.mediaPort) appId \(server.keys.appId)")

dispatchMain()
