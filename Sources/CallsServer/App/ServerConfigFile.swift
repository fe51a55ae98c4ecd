import CallsObjectStorage
import CallsStore
import CallsTransport
import Foundation

/// `callroomd --config FILE`: a JSON object whose keys mirror the command-line flags. Flags
/// given on the command line take precedence. Unknown keys and wrong types are errors, so a
/// typo never silently falls back to a default.
///
/// ```json
/// {"listen": "0.0.0.0:7880", "mediaPort": 7882, "dataDir": "/var/lib/callroom",
///  "autoCreateUsers": false, "logFormat": "json", "logLevel": "info", "maxParticipantsPerRoom": 50}
/// ```
public struct ServerConfigFile: Sendable, Equatable {
    public var listen: String?
    public var mediaPort: Int?
    /// Browsers' WebRTC media port (`webrtc: false` turns the gateway off).
    public var webrtcPort: Int?
    public var webrtc: Bool?
    /// Browsers' ICE servers (a TURN server), as JSON text: `[{"urls": …, "username"?, "credential"?}]`.
    public var webrtcIceServers: String?
    public var dataDir: String?
    /// The store on PostgreSQL (a URL; nil: SQLite in the data directory).
    public var database: String?
    /// The cluster registry (Redis URL) and this node's id in it.
    public var redis: String?
    public var nodeId: String?
    public var appId: String?
    public var apiKey: String?
    public var authKey: String?
    public var autoCreateUsers: Bool?
    /// Users login may create per address an hour, and in all (`ServerConfiguration`).
    public var autoCreateUsersPerHour: Int?
    public var autoCreateUsersMax: Int?
    /// Whether loopback is exempt from the per-address limits (default true).
    public var addressLimitsExemptLoopback: Bool?
    /// Proxies whose `X-Forwarded-For` names the client (`ServerConfiguration.trustedProxies`).
    public var trustedProxies: [IPNetwork]?
    /// Who may read `/metrics` (`ServerConfiguration.metricsAllow`).
    public var metricsAllow: [IPNetwork]?
    public var logFormat: String?
    public var logLevel: String?
    public var maxParticipantsPerRoom: Int?
    public var region: String?
    public var storeHeartbeatSeconds: Int?
    public var ringTimeoutSeconds: Int?
    public var webhooks: [WebhookConfig]?
    public var publicURL: String?
    public var appleAppIDs: [String]?
    public var androidApps: [AndroidApp]?
    public var webhookMaxAttempts: Int?
    public var webhookQueueLimit: Int?
    public var tlsCert: String?
    public var tlsKey: String?
    public var tlsSelfSigned: Bool?
    public var allowPlainHTTP: Bool?
    public var authKeyLogin: Bool?
    public var authTokenTTLSeconds: Int?
    public var firstJoinerModerator: Bool?
    public var maxRooms: Int?
    public var mediaPublicAddress: String?
    public var maxRoomsPerUser: Int?
    public var maxConnectionsPerAddress: Int?
    public var joinTimeoutSeconds: Int?
    public var requestBodyTimeoutSeconds: Int?
    public var maxQueuedBytesPerConnection: Int?
    public var maxQueuedBytesTotal: Int?
    public var maxConnections: Int?
    /// Per-sender relay limits (0: none): packets and bytes a second, audio and video apart.
    public var relayAudioPacketsPerSecond: Int?
    public var relayAudioBytesPerSecond: Int?
    public var relayVideoPacketsPerSecond: Int?
    public var relayVideoBytesPerSecond: Int?
    /// Calls a minute per caller, per callee, per group (a burst of half; 0: no limit).
    /// `open`, `invited` or `lobby`: who gets into rooms without rules of their own.
    public var roomAccess: String?
    public var ringCallerPerMinute: Int?
    public var ringCalleePerMinute: Int?
    public var ringGroupPerMinute: Int?
    /// How long a dropped participant is held for `resume` (seconds; default 30).
    public var resumeGraceSeconds: Int?
    public var production: Bool?
    public var apns: APNsConfig?
    public var fcm: FCMConfig?
    public var objectStorage: ObjectStorageConfiguration?

    /// Every trigger a webhook may ask for (calls-api.md §9).
    public static let webhookTriggers: Set<String> = [
        "call_initiated", "call_started", "call_participant_joined", "call_participant_left", "call_ended", "call_busy",
        "call_cancelled", "call_rejected", "call_unanswered", "meeting_started", "meeting_participant_joined",
        "meeting_participant_left", "meeting_ended", "recording_generated",
    ]
    public var restRequestsPerSecond: Int?
    public var relayThreads: Int?
    public var relayMaxDelayMs: Int?
    public var recordingRetentionDays: Int?
    public var deliveryRetentionDays: Int?
    public var chatRetentionDays: Int?
    public var callLogRetentionDays: Int?
    public var recordingQuotaMB: Int?
    public var captionModelDir: String?
    public var captionDecoders: Int?
    public var captionsEngine: String?
    public var whisperPython: String?
    public var whisperModelDir: String?
    public var moonshinePython: String?
    public var moonshineModelDir: String?
    public var streamingURL: String?
    public var streamingAllowSessionURLs: Bool?
    public var streamingReconnectSeconds: Int?
    public var mediaConsentIntervalMs: Int?
    public var mediaConsentTimeoutMs: Int?
    public var relayFastPath: String?
    public var relayFastPathObject: String?

    public static let keys: Set<String> = ["listen", "mediaPort", "webrtcPort", "webrtc", "webrtcIceServers", "dataDir", "database", "redis", "nodeId", "appId", "apiKey", "authKey", "autoCreateUsers", "autoCreateUsersPerHour", "autoCreateUsersMax", "addressLimitsExemptLoopback", "trustedProxies", "metricsAllow",
                                           "logFormat", "logLevel", "maxParticipantsPerRoom", "region", "storeHeartbeatSeconds", "ringTimeoutSeconds", "webhooks", "webhookMaxAttempts", "webhookQueueLimit", "publicURL", "tlsCert", "tlsKey", "tlsSelfSigned", "allowPlainHTTP", "authKeyLogin", "production", "authTokenTTLSeconds", "firstJoinerModerator", "maxRooms", "mediaPublicAddress", "maxRoomsPerUser", "maxConnectionsPerAddress", "joinTimeoutSeconds", "requestBodyTimeoutSeconds", "maxQueuedBytesPerConnection", "maxQueuedBytesTotal", "maxConnections", "relayAudioPacketsPerSecond", "relayAudioBytesPerSecond", "relayVideoPacketsPerSecond", "relayVideoBytesPerSecond", "roomAccess", "ringCallerPerMinute", "ringCalleePerMinute", "ringGroupPerMinute", "resumeGraceSeconds", "appLinks", "apns", "fcm",
                                           "restRequestsPerSecond", "relayThreads", "relayMaxDelayMs", "mediaConsentIntervalMs", "mediaConsentTimeoutMs", "recordingRetentionDays", "deliveryRetentionDays", "chatRetentionDays", "callLogRetentionDays", "recordingQuotaMB",
                                           "relayFastPath", "relayFastPathObject", "captionModelDir", "captionDecoders", "objectStorage", "captionsEngine", "whisperPython", "whisperModelDir", "moonshinePython", "moonshineModelDir",
                                           "streamingURL", "streamingAllowSessionURLs", "streamingReconnectSeconds"]

    /// Why a config file was refused (the message names the file and the key).
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public init() {}

    public static func load(path: String) throws(Invalid) -> ServerConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw Invalid(message: "cannot read config file \(path)") }
        return try parse(data, path: path)
    }

    /// JSON `true`/`false` (Foundation bridges numbers and booleans both ways, so ask the type).
    private static func isBoolean(_ v: Any) -> Bool {
        String(describing: type(of: v)).contains("Boolean") || (v as? NSNumber).map { String(cString: $0.objCType) == "c" } == true
    }

    public static func parse(_ data: Data, path: String = "config") throws(Invalid) -> ServerConfigFile {
        guard let obj = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Invalid(message: "\(path) is not a JSON object")
        }
        if let unknown = obj.keys.sorted().first(where: { !keys.contains($0) }) {
            throw Invalid(message: "\(path): unknown key '\(unknown)' (known: \(keys.sorted().joined(separator: ", ")))")
        }
        func string(_ k: String) throws(Invalid) -> String? {
            guard let v = obj[k] else { return nil }
            guard let s = v as? String else { throw Invalid(message: "\(path): '\(k)' must be a string") }
            return s
        }
        func int(_ k: String) throws(Invalid) -> Int? {
            guard let v = obj[k] else { return nil }
            guard !isBoolean(v), let n = v as? Int else { throw Invalid(message: "\(path): '\(k)' must be an integer") }
            return n
        }
        var c = ServerConfigFile()
        c.listen = try string("listen")
        c.mediaPort = try int("mediaPort")
        c.webrtcPort = try int("webrtcPort")
        c.dataDir = try string("dataDir")
        c.database = try string("database")
        c.redis = try string("redis")
        c.nodeId = try string("nodeId")
        c.appId = try string("appId")
        c.apiKey = try string("apiKey")
        c.authKey = try string("authKey")
        if let v = obj["autoCreateUsers"] {
            guard isBoolean(v), let b = v as? Bool else { throw Invalid(message: "\(path): 'autoCreateUsers' must be true or false") }
            c.autoCreateUsers = b
        }
        c.autoCreateUsersPerHour = try int("autoCreateUsersPerHour")
        c.autoCreateUsersMax = try int("autoCreateUsersMax")
        func networks(_ k: String) throws(Invalid) -> [IPNetwork]? {
            guard let v = obj[k] else { return nil }
            let entries = v as? [String]
            let networks = entries?.compactMap(IPNetwork.init)
            guard let entries, let networks, networks.count == entries.count, entries.count <= 1024 else {
                let bad = entries?.first { IPNetwork($0) == nil }.map { " ('\($0)' is not one)" } ?? ""
                throw Invalid(message: "\(path): '\(k)' must be a list of addresses or CIDR blocks, such as [\"127.0.0.1\", \"10.0.0.0/8\", \"2001:db8::/32\"]\(bad)")
            }
            return networks
        }
        c.trustedProxies = try networks("trustedProxies")
        c.metricsAllow = try networks("metricsAllow")
        c.logFormat = try string("logFormat")
        c.tlsCert = try string("tlsCert")
        c.tlsKey = try string("tlsKey")
        for k in ["webrtc", "tlsSelfSigned", "allowPlainHTTP", "authKeyLogin", "production", "firstJoinerModerator", "streamingAllowSessionURLs", "addressLimitsExemptLoopback"] {
            guard let v = obj[k] else { continue }
            guard isBoolean(v), let b = v as? Bool else { throw Invalid(message: "\(path): '\(k)' must be true or false") }
            switch k {
            case "tlsSelfSigned": c.tlsSelfSigned = b
            case "allowPlainHTTP": c.allowPlainHTTP = b
            case "webrtc": c.webrtc = b
            case "authKeyLogin": c.authKeyLogin = b
            case "firstJoinerModerator": c.firstJoinerModerator = b
            case "streamingAllowSessionURLs": c.streamingAllowSessionURLs = b
            case "addressLimitsExemptLoopback": c.addressLimitsExemptLoopback = b
            default: c.production = b
            }
        }
        c.logLevel = try string("logLevel")
        c.maxParticipantsPerRoom = try int("maxParticipantsPerRoom")
        c.region = try string("region")
        c.storeHeartbeatSeconds = try int("storeHeartbeatSeconds")
        c.ringTimeoutSeconds = try int("ringTimeoutSeconds")
        c.webhookMaxAttempts = try int("webhookMaxAttempts")
        c.webhookQueueLimit = try int("webhookQueueLimit")
        c.authTokenTTLSeconds = try int("authTokenTTLSeconds")
        c.maxRooms = try int("maxRooms")
        c.mediaPublicAddress = try string("mediaPublicAddress")
        if let servers = obj["webrtcIceServers"] {
            // What RTCPeerConnection takes: each entry's `urls` a string or strings (stun:, turn:,
            // turns:), `username` and `credential` strings when given.
            let list = servers as? [[String: Any]]
            let valid = list?.allSatisfy { e in
                let urls = (e["urls"] as? String).map { [$0] } ?? (e["urls"] as? [String]) ?? []
                return !urls.isEmpty && urls.allSatisfy { u in ["stun:", "turn:", "turns:"].contains { u.hasPrefix($0) } }
                    && e.keys.allSatisfy { ["urls", "username", "credential"].contains($0) }
                    && (e["username"] == nil || e["username"] is String) && (e["credential"] == nil || e["credential"] is String)
            } ?? false
            guard let list, valid, let data = try? JSONSerialization.data(withJSONObject: list, options: [.sortedKeys]) else {
                throw Invalid(message: "\(path): 'webrtcIceServers' must be a list of {\"urls\": \"stun:…|turn:…|turns:…\" or [those], \"username\"?, \"credential\"?}")
            }
            c.webrtcIceServers = String(decoding: data, as: UTF8.self)
        }
        c.maxRoomsPerUser = try int("maxRoomsPerUser")
        c.maxConnectionsPerAddress = try int("maxConnectionsPerAddress")
        c.joinTimeoutSeconds = try int("joinTimeoutSeconds")
        c.requestBodyTimeoutSeconds = try int("requestBodyTimeoutSeconds")
        c.maxQueuedBytesPerConnection = try int("maxQueuedBytesPerConnection")
        c.maxQueuedBytesTotal = try int("maxQueuedBytesTotal")
        c.maxConnections = try int("maxConnections")
        c.relayAudioPacketsPerSecond = try int("relayAudioPacketsPerSecond")
        c.relayAudioBytesPerSecond = try int("relayAudioBytesPerSecond")
        c.relayVideoPacketsPerSecond = try int("relayVideoPacketsPerSecond")
        c.relayVideoBytesPerSecond = try int("relayVideoBytesPerSecond")
        c.roomAccess = try string("roomAccess")
        c.ringCallerPerMinute = try int("ringCallerPerMinute")
        c.ringCalleePerMinute = try int("ringCalleePerMinute")
        c.ringGroupPerMinute = try int("ringGroupPerMinute")
        c.resumeGraceSeconds = try int("resumeGraceSeconds")
        if let u = try string("publicURL") {
            guard (u.hasPrefix("http://") || u.hasPrefix("https://")), URL(string: u)?.host != nil, !u.hasSuffix("/") else {
                throw Invalid(message: "\(path): 'publicURL' must be http(s)://HOST[:PORT][/PATH] without a trailing slash")
            }
            c.publicURL = u
        }
        if let v = obj["appLinks"] {
            guard let o = v as? [String: Any] else { throw Invalid(message: "\(path): 'appLinks' must be an object") }
            if let a = o["apple"] {
                guard let ids = a as? [String] else { throw Invalid(message: "\(path): appLinks.apple must be a list of TEAMID.bundle ids") }
                c.appleAppIDs = ids
            }
            if let a = o["android"] {
                guard let apps = a as? [[String: Any]] else { throw Invalid(message: "\(path): appLinks.android must be a list of objects") }
                c.androidApps = try apps.enumerated().map { (i, app) throws(Invalid) in
                    guard let name = app["package"] as? String, let fp = app["sha256"] as? [String] else {
                        throw Invalid(message: "\(path): appLinks.android[\(i)] needs package and sha256 (a list)")
                    }
                    return AndroidApp(name: name, fingerprints: fp)
                }
            }
        }
        if let v = obj["webhooks"] {
            guard let list = v as? [[String: Any]] else { throw Invalid(message: "\(path): 'webhooks' must be a list of objects") }
            var hooks: [WebhookConfig] = []
            for (i, h) in list.enumerated() {
                let at = "\(path): webhooks[\(i)]"
                if let extra = h.keys.sorted().first(where: { !["id", "url", "secret", "triggers"].contains($0) }) {
                    throw Invalid(message: "\(at): unknown key '\(extra)'")
                }
                if h["triggers"] != nil && !(h["triggers"] is [String]) { throw Invalid(message: "\(at).triggers must be a non-empty list of names") }
                let id = (h["id"] as? String) ?? "webhook-\(i + 1)"
                let hook: WebhookConfig
                do { hook = try WebhookConfig.validated(id: id, url: h["url"] as? String, secret: h["secret"] as? String, triggers: h["triggers"] as? [String]) }
                catch { throw Invalid(message: "\(at).\(error.message)") }
                guard !hooks.contains(where: { $0.id == id }) else { throw Invalid(message: "\(at).id '\(id)' is used twice") }
                hooks.append(hook)
            }
            c.webhooks = hooks
        }
        c.apns = try parseAPNs(obj["apns"], path: path)
        c.fcm = try parseFCM(obj["fcm"], path: path)
        c.objectStorage = try parseObjectStorage(obj["objectStorage"], path: path)
        c.restRequestsPerSecond = try int("restRequestsPerSecond")
        c.relayThreads = try int("relayThreads")
        c.relayMaxDelayMs = try int("relayMaxDelayMs")
        c.recordingRetentionDays = try int("recordingRetentionDays")
        c.deliveryRetentionDays = try int("deliveryRetentionDays")
        c.chatRetentionDays = try int("chatRetentionDays")
        c.callLogRetentionDays = try int("callLogRetentionDays")
        c.recordingQuotaMB = try int("recordingQuotaMB")
        c.captionModelDir = try string("captionModelDir")
        c.captionDecoders = try int("captionDecoders")
        c.captionsEngine = try string("captionsEngine")
        c.whisperPython = try string("whisperPython")
        c.whisperModelDir = try string("whisperModelDir")
        c.moonshinePython = try string("moonshinePython")
        c.moonshineModelDir = try string("moonshineModelDir")
        c.streamingURL = try string("streamingURL")
        c.streamingReconnectSeconds = try int("streamingReconnectSeconds")
        c.mediaConsentIntervalMs = try int("mediaConsentIntervalMs")
        c.mediaConsentTimeoutMs = try int("mediaConsentTimeoutMs")
        c.relayFastPath = try string("relayFastPath")
        c.relayFastPathObject = try string("relayFastPathObject")
        return c
    }

    /// `{"keyFile", "keyId", "teamId", "bundleId"?, "environment"?: "production"|"sandbox", "endpoint"?, "caFile"?}`.
    private static func parseAPNs(_ v: Any?, path: String) throws(Invalid) -> APNsConfig? {
        guard let v else { return nil }
        guard let o = v as? [String: Any] else { throw Invalid(message: "\(path): 'apns' must be an object") }
        try onlyKeys(o, ["keyFile", "keyId", "teamId", "bundleId", "environment", "endpoint", "caFile"], at: "\(path): apns")
        func appleId(_ k: String) throws(Invalid) -> String {
            guard let s = o[k] as? String, s.count == 10, s.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isUppercase) }) else {
                throw Invalid(message: "\(path): apns.\(k) must be Apple's 10-character id (A-Z, 0-9)")
            }
            return s
        }
        guard let keyFile = o["keyFile"] as? String, !keyFile.isEmpty else { throw Invalid(message: "\(path): apns.keyFile must name the .p8 file") }
        var c = APNsConfig(keyFile: keyFile, keyId: try appleId("keyId"), teamId: try appleId("teamId"))
        if let b = o["bundleId"] {
            guard let id = b as? String, isBundleId(id) else { throw Invalid(message: "\(path): apns.bundleId must be a bundle id (com.example.app)") }
            c.bundleId = id
        }
        switch o["environment"] as? String {
        case nil, "production": c.endpoint = APNsConfig.production
        case "sandbox": c.endpoint = APNsConfig.sandbox
        default: throw Invalid(message: "\(path): apns.environment is production or sandbox")
        }
        if let e = o["endpoint"] { c.endpoint = try httpsEndpoint(e, at: "\(path): apns.endpoint") }
        if let f = o["caFile"] {
            guard let f = f as? String, !f.isEmpty else { throw Invalid(message: "\(path): apns.caFile must be a path") }
            c.caFile = f
        }
        return c
    }

    /// `{"serviceAccountFile", "endpoint"?, "caFile"?}`.
    private static func parseFCM(_ v: Any?, path: String) throws(Invalid) -> FCMConfig? {
        guard let v else { return nil }
        guard let o = v as? [String: Any] else { throw Invalid(message: "\(path): 'fcm' must be an object") }
        try onlyKeys(o, ["serviceAccountFile", "endpoint", "caFile"], at: "\(path): fcm")
        guard let file = o["serviceAccountFile"] as? String, !file.isEmpty else {
            throw Invalid(message: "\(path): fcm.serviceAccountFile must name the service account's JSON key file")
        }
        var c = FCMConfig(serviceAccountFile: file)
        if let e = o["endpoint"] { c.endpoint = try httpsEndpoint(e, at: "\(path): fcm.endpoint") }
        if let f = o["caFile"] {
            guard let f = f as? String, !f.isEmpty else { throw Invalid(message: "\(path): fcm.caFile must be a path") }
            c.caFile = f
        }
        return c
    }

    /// `{"endpoint", "bucket", "region"?, "accessKeyID", "secretAccessKey" | "secretAccessKeyFile", "prefix"?, "caFile"?}`:
    /// the secret inline or in a file only its owner may read (as push keys).
    private static func parseObjectStorage(_ v: Any?, path: String) throws(Invalid) -> ObjectStorageConfiguration? {
        guard let v else { return nil }
        guard let o = v as? [String: Any] else { throw Invalid(message: "\(path): 'objectStorage' must be an object") }
        try onlyKeys(o, ["endpoint", "bucket", "region", "accessKeyID", "secretAccessKey", "secretAccessKeyFile", "prefix", "caFile"], at: "\(path): objectStorage")
        func text(_ k: String) throws(Invalid) -> String? {
            guard let x = o[k] else { return nil }
            guard let s = x as? String, !s.isEmpty else { throw Invalid(message: "\(path): objectStorage.\(k) must be a non-empty string") }
            return s
        }
        guard let endpoint = try text("endpoint"), let bucket = try text("bucket"), let keyID = try text("accessKeyID") else {
            throw Invalid(message: "\(path): objectStorage needs endpoint, bucket and accessKeyID")
        }
        let secret: String
        switch (try text("secretAccessKey"), try text("secretAccessKeyFile")) {
        case (let s?, nil): secret = s
        case (nil, let file?):
            guard let mode = PrivateFiles.mode(file), let data = FileManager.default.contents(atPath: file) else {
                throw Invalid(message: "\(path): objectStorage.secretAccessKeyFile '\(file)' cannot be read")
            }
            if mode & 0o077 != 0 {
                throw Invalid(message: "\(path): objectStorage.secretAccessKeyFile '\(file)' may be read by others (chmod 600 it)")
            }
            secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        default: throw Invalid(message: "\(path): objectStorage needs one of secretAccessKey and secretAccessKeyFile")
        }
        let c = ObjectStorageConfiguration(endpoint: endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint, bucket: bucket,
                                           region: try text("region") ?? "us-east-1", accessKeyID: keyID, secretAccessKey: secret,
                                           prefix: try text("prefix") ?? "", caFile: try text("caFile"))
        if let problem = c.problem { throw Invalid(message: "\(path): \(problem)") }
        return c
    }

    private static func onlyKeys(_ o: [String: Any], _ known: [String], at: String) throws(Invalid) {
        if let extra = o.keys.sorted().first(where: { !known.contains($0) }) {
            throw Invalid(message: "\(at): unknown key '\(extra)' (known: \(known.joined(separator: ", ")))")
        }
    }

    /// Push services speak only TLS: `https://HOST[:PORT]`, no path.
    private static func httpsEndpoint(_ v: Any, at: String) throws(Invalid) -> String {
        guard let s = v as? String, s.hasPrefix("https://"), let u = URL(string: s), u.host != nil, u.path.isEmpty || u.path == "/" else {
            throw Invalid(message: "\(at) must be https://HOST[:PORT]")
        }
        return s.hasSuffix("/") ? String(s.dropLast()) : s
    }

    /// A reverse-DNS app id: letters, digits, `-` and `.`, at least two parts.
    static func isBundleId(_ s: String) -> Bool {
        s.count <= 155 && s.split(separator: ".", omittingEmptySubsequences: false).count >= 2
            && s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } }
    }
}
