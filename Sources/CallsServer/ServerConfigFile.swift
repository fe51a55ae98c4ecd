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
    public var dataDir: String?
    public var appId: String?
    public var apiKey: String?
    public var authKey: String?
    public var autoCreateUsers: Bool?
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

    /// Every trigger a webhook may ask for (calls-api.md §9).
    public static let webhookTriggers: Set<String> = [
        "call_initiated", "call_started", "call_participant_joined", "call_participant_left", "call_ended", "call_busy",
        "call_cancelled", "call_rejected", "call_unanswered", "meeting_started", "meeting_participant_joined",
        "meeting_participant_left", "meeting_ended", "recording_generated",
    ]
    public var restRequestsPerSecond: Int?
    public var relayThreads: Int?
    public var relayMaxDelayMs: Int?
    public var relayFastPath: String?
    public var relayFastPathObject: String?

    public static let keys: Set<String> = ["listen", "mediaPort", "dataDir", "appId", "apiKey", "authKey", "autoCreateUsers",
                                           "logFormat", "logLevel", "maxParticipantsPerRoom", "region", "storeHeartbeatSeconds", "ringTimeoutSeconds", "webhooks", "webhookMaxAttempts", "publicURL", "appLinks",
                                           "restRequestsPerSecond", "relayThreads", "relayMaxDelayMs",
                                           "relayFastPath", "relayFastPathObject"]

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
        c.dataDir = try string("dataDir")
        c.appId = try string("appId")
        c.apiKey = try string("apiKey")
        c.authKey = try string("authKey")
        if let v = obj["autoCreateUsers"] {
            guard isBoolean(v), let b = v as? Bool else { throw Invalid(message: "\(path): 'autoCreateUsers' must be true or false") }
            c.autoCreateUsers = b
        }
        c.logFormat = try string("logFormat")
        c.logLevel = try string("logLevel")
        c.maxParticipantsPerRoom = try int("maxParticipantsPerRoom")
        c.region = try string("region")
        c.storeHeartbeatSeconds = try int("storeHeartbeatSeconds")
        c.ringTimeoutSeconds = try int("ringTimeoutSeconds")
        c.webhookMaxAttempts = try int("webhookMaxAttempts")
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
                guard let url = h["url"] as? String, url.hasPrefix("http://") || url.hasPrefix("https://") else {
                    throw Invalid(message: "\(at).url must be an http:// or https:// URL")
                }
                guard let secret = h["secret"] as? String, secret.count >= 16 else {
                    throw Invalid(message: "\(at).secret must be a string of at least 16 characters")
                }
                let id = (h["id"] as? String) ?? "webhook-\(i + 1)"
                var triggers: Set<String>?
                if let t = h["triggers"] {
                    guard let names = t as? [String], !names.isEmpty else { throw Invalid(message: "\(at).triggers must be a non-empty list of names") }
                    if let bad = names.first(where: { !webhookTriggers.contains($0) }) {
                        throw Invalid(message: "\(at).triggers: unknown trigger '\(bad)' (known: \(webhookTriggers.sorted().joined(separator: ", ")))")
                    }
                    triggers = Set(names)
                }
                if let extra = h.keys.sorted().first(where: { !["id", "url", "secret", "triggers"].contains($0) }) {
                    throw Invalid(message: "\(at): unknown key '\(extra)'")
                }
                guard !hooks.contains(where: { $0.id == id }) else { throw Invalid(message: "\(at).id '\(id)' is used twice") }
                hooks.append(WebhookConfig(id: id, url: url, secret: secret, triggers: triggers))
            }
            c.webhooks = hooks
        }
        c.restRequestsPerSecond = try int("restRequestsPerSecond")
        c.relayThreads = try int("relayThreads")
        c.relayMaxDelayMs = try int("relayMaxDelayMs")
        c.relayFastPath = try string("relayFastPath")
        c.relayFastPathObject = try string("relayFastPathObject")
        return c
    }
}
