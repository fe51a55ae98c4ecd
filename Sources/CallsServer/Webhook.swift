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
    var webhooks: [WebhookConfig]
    var appID: String
    var region: String

    static let none = WebhookOutbox(webhooks: [], appID: "", region: "")

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
        return webhooks.filter { $0.wants(trigger) }.compactMap { w in
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
