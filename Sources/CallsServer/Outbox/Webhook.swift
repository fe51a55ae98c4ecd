import CallsCore
import CallsSecurity
import Foundation

/// One configured webhook receiver: where, the secret its deliveries are signed with, and which
/// triggers it wants (nil: all).
public struct WebhookConfig: Sendable, Equatable {
    public var id: String
    public var url: String
    public var secret: String
    public var triggers: Set<String>?

    public init(id: String, url: String, secret: String, triggers: Set<String>? = nil) {
        self.id = id
        self.url = url
        self.secret = secret
        self.triggers = triggers
    }

    func wants(_ trigger: String) -> Bool { triggers?.contains(trigger) ?? true }

    /// Why a webhook was refused (config file or REST): the message names the field.
    struct Invalid: Error, Equatable, Sendable { var message: String }

    /// A webhook from untrusted fields: an http(s) URL, a secret of at least 16 characters,
    /// known trigger names (nil: all), an id of letters, digits, `_-.` (≤ 64).
    static func validated(id: String, url: String?, secret: String?, triggers: [String]?) throws(Invalid) -> WebhookConfig {
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }) else {
            throw Invalid(message: "id must be 1–64 letters, digits, '_', '-', '.'")
        }
        guard let url, url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
            throw Invalid(message: "url must be an http:// or https:// URL")
        }
        guard let secret, secret.count >= 16 else { throw Invalid(message: "secret must be a string of at least 16 characters") }
        var set: Set<String>?
        if let names = triggers {
            guard !names.isEmpty else { throw Invalid(message: "triggers must be a non-empty list of names") }
            if let bad = names.first(where: { !ServerConfigFile.webhookTriggers.contains($0) }) {
                throw Invalid(message: "triggers: unknown trigger '\(bad)' (known: \(ServerConfigFile.webhookTriggers.sorted().joined(separator: ", ")))")
            }
            set = Set(names)
        }
        return WebhookConfig(id: id, url: url, secret: secret, triggers: set)
    }
}

/// The webhooks in force: those of the config file (fixed) and those added over REST (kept in
/// the store, changed without a restart). Read when a transition's outbox rows are built and
/// when a delivery is signed.
///
/// Thread rules: any thread (a lock).
final class WebhookDirectory: Sendable {
    private let state: Locked<(fixed: [WebhookConfig], added: [WebhookConfig])>

    init(fixed: [WebhookConfig] = [], added: [WebhookConfig] = []) {
        state = Locked((fixed, added))
    }

    /// Every webhook, the config file's first.
    var all: [WebhookConfig] { state.withLock { $0.fixed + $0.added } }
    var isEmpty: Bool { state.withLock { $0.fixed.isEmpty && $0.added.isEmpty } }
    func webhook(_ id: String) -> WebhookConfig? { state.withLock { s in s.fixed.first { $0.id == id } ?? s.added.first { $0.id == id } } }
    func isFixed(_ id: String) -> Bool { state.withLock { s in s.fixed.contains { $0.id == id } } }

    /// Replaces the REST-added webhooks (after the store changed).
    func setAdded(_ hooks: [WebhookConfig]) { state.withLock { $0.added = hooks } }
}

/// One queued delivery of one event to one webhook: written in the same transaction as the
/// transition that caused it (`StoreCommand.outbox`), sent by the `WebhookDeliverer`.
struct OutboxRow: Sendable, Equatable {
    var deliveryId: String
    var webhookId: String
    var url: String
    var sessionId: String
    var trigger: String
    /// The exact bytes sent (and signed), every attempt.
    var body: String
    var at: Int64
}

/// Builds the outbox rows of one transition: `{trigger, data, appId, region, webhook, type}`
/// per webhook that wants the trigger. A value; any thread.
struct WebhookOutbox: Sendable, Equatable {
    var directory: WebhookDirectory
    var appID: String
    var region: String

    static let none = WebhookOutbox(directory: WebhookDirectory(), appID: "", region: "")

    var isEmpty: Bool { directory.isEmpty }

    static func == (a: WebhookOutbox, b: WebhookOutbox) -> Bool {
        a.directory === b.directory && a.appID == b.appID && a.region == b.region
    }

    /// The call as webhook `data`: ids, the initiator and receiver `{uid|guid, name}`, every
    /// member's outcome, the timestamps (ms).
    struct CallData: Encodable {
        struct Party: Encodable { var uid: String?; var guid: String?; var name: String }
        struct Member: Encodable { var uid: String; var name: String; var outcome: String }
        var sessionId: String
        var initiator: Party
        var receiver: Party
        var receiverType: String
        var type: String
        var status: String
        var members: [Member]
        var initiatedAt: Int64
        var startedAt: Int64?
        var endedAt: Int64?
    }

    /// `{trigger, data, appId, region, webhook, type}`: the body of every delivery.
    struct Body<Payload: Encodable>: Encodable {
        var trigger: String
        var data: Payload
        var appId: String
        var region: String
        var webhook: String
        var type: String
    }

    /// The outbox rows of a call transition.
    func rows(_ trigger: CallTrigger, _ call: WireCall, at now: Int64, deliveryIds: () -> String) -> [OutboxRow] {
        let data = CallData(
            sessionId: call.sessionId, initiator: .init(uid: call.initiator.id, guid: nil, name: call.initiator.name),
            receiver: call.receiverType == .group ? .init(uid: nil, guid: call.receiver.id, name: call.receiver.name)
                : .init(uid: call.receiver.id, guid: nil, name: call.receiver.name),
            receiverType: call.receiverType.rawValue, type: call.type.rawValue, status: call.status.rawValue,
            members: call.members.map { .init(uid: $0.uid, name: $0.name, outcome: $0.outcome.rawValue) },
            initiatedAt: call.initiatedAt, startedAt: call.startedAt, endedAt: call.endedAt)
        return rows(trigger.rawValue, type: "call", sessionId: call.sessionId, data: data, at: now, deliveryIds: deliveryIds)
    }

    /// A room event as webhook `data`.
    struct RoomData: Encodable {
        struct Participant: Encodable { var uid: String; var pid: String; var name: String }
        var sessionId: String
        var participant: Participant?
        var at: Int64
    }

    /// A finished recording as webhook `data` (`recording_generated`).
    struct RecordingData: Encodable {
        var sessionId: String
        var rid: String
        var recordingURL: String
        var startTime: Int64
        var endTime: Int64
        /// Seconds.
        var duration: Double
    }

    func recordingRows(_ data: RecordingData, at now: Int64) -> [OutboxRow] {
        rows("recording_generated", type: "meet", sessionId: data.sessionId, data: data, at: now) { "dlv_" + Crypto.randomHex(10) }
    }

    /// The outbox rows of a room event under `trigger` (a meeting's or a ringing call's room).
    func roomRows(_ trigger: String, type: String, data: RoomData, at now: Int64) -> [OutboxRow] {
        rows(trigger, type: type, sessionId: data.sessionId, data: data, at: now) { "dlv_" + Crypto.randomHex(10) }
    }

    /// One row per webhook that wants `trigger`, each body encoded once (those bytes are sent
    /// and signed on every attempt).
    private func rows<Payload: Encodable>(_ trigger: String, type: String, sessionId: String, data: Payload, at now: Int64,
                                          deliveryIds: () -> String) -> [OutboxRow] {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return directory.all.filter { $0.wants(trigger) }.compactMap { w in
            let body = Body(trigger: trigger, data: data, appId: appID, region: region, webhook: w.id, type: type)
            guard let json = try? enc.encode(body) else { return nil }
            return OutboxRow(deliveryId: deliveryIds(), webhookId: w.id, url: w.url, sessionId: sessionId, trigger: trigger,
                             body: String(decoding: json, as: UTF8.self), at: now)
        }
    }

    /// `X-CometChat-Signature`: hex HMAC-SHA256 of the raw body with the webhook's secret.
    static func signature(secret: String, body: String) -> String {
        Hex.encode(Crypto.hmacSHA256(key: Array(secret.utf8), message: Array(body.utf8)))
    }

    /// `X-CallRoom-Signature`: the same over `TIMESTAMP.BODY`, so a receiver can refuse replays.
    static func timestampedSignature(secret: String, timestamp: Int64, body: String) -> String {
        signature(secret: secret, body: "\(timestamp).\(body)")
    }
}
