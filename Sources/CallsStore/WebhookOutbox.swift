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

    package func wants(_ trigger: String) -> Bool { triggers?.contains(trigger) ?? true }
}

/// The webhooks in force: those of the config file (fixed) and those added over REST (kept in
/// the store, changed without a restart). Read when a transition's outbox rows are built and
/// when a delivery is signed.
///
/// Thread rules: any thread (a lock).
package final class WebhookDirectory: Sendable {
    private let state: Locked<(fixed: [WebhookConfig], added: [WebhookConfig])>

    package init(fixed: [WebhookConfig] = [], added: [WebhookConfig] = []) {
        state = Locked((fixed, added))
    }

    /// Every webhook, the config file's first.
    package var all: [WebhookConfig] { state.withLock { $0.fixed + $0.added } }
    package var isEmpty: Bool { state.withLock { $0.fixed.isEmpty && $0.added.isEmpty } }
    package func webhook(_ id: String) -> WebhookConfig? { state.withLock { s in s.fixed.first { $0.id == id } ?? s.added.first { $0.id == id } } }
    package func isFixed(_ id: String) -> Bool { state.withLock { s in s.fixed.contains { $0.id == id } } }

    /// Replaces the REST-added webhooks (after the store changed).
    package func setAdded(_ hooks: [WebhookConfig]) { state.withLock { $0.added = hooks } }
}

/// One queued delivery of one event to one webhook: written in the same transaction as the
/// transition that caused it (`StoreCommand.outbox`), sent by the `WebhookDeliverer`.
package struct OutboxRow: Sendable, Equatable {
    package var deliveryId: String
    package var webhookId: String
    package var url: String
    package var sessionId: String
    package var trigger: String
    /// The exact bytes sent (and signed), every attempt.
    package var body: String
    package var at: Int64
}

/// Builds the outbox rows of one transition: `{trigger, data, appId, region, webhook, type}`
/// per webhook that wants the trigger. A value; any thread.
package struct WebhookOutbox: Sendable, Equatable {
    package var directory: WebhookDirectory
    package var appID: String
    package var region: String

    package static let none = WebhookOutbox(directory: WebhookDirectory(), appID: "", region: "")

    package var isEmpty: Bool { directory.isEmpty }

    package static func == (a: WebhookOutbox, b: WebhookOutbox) -> Bool {
        a.directory === b.directory && a.appID == b.appID && a.region == b.region
    }

    /// The call as webhook `data`: ids, the initiator and receiver `{uid|guid, name}`, every
    /// member's outcome, the timestamps (ms).
    package struct CallData: Encodable {
        package struct Party: Encodable {
            var uid: String?, guid: String?, name: String
            package init(uid: String?, guid: String?, name: String) { self.uid = uid; self.guid = guid; self.name = name }
        }
        package struct Member: Encodable {
            var uid: String, name: String, outcome: String
            package init(uid: String, name: String, outcome: String) { self.uid = uid; self.name = name; self.outcome = outcome }
        }
        package var sessionId: String
        package var initiator: Party
        package var receiver: Party
        package var receiverType: String
        package var type: String
        package var status: String
        package var members: [Member]
        package var initiatedAt: Int64
        package var startedAt: Int64?
        package var endedAt: Int64?
        package init(sessionId: String, initiator: Party, receiver: Party, receiverType: String, type: String, status: String, members: [Member], initiatedAt: Int64, startedAt: Int64? = nil, endedAt: Int64? = nil) {
            self.sessionId = sessionId
            self.initiator = initiator
            self.receiver = receiver
            self.receiverType = receiverType
            self.type = type
            self.status = status
            self.members = members
            self.initiatedAt = initiatedAt
            self.startedAt = startedAt
            self.endedAt = endedAt
        }
    }

    /// `{trigger, data, appId, region, webhook, type}`: the body of every delivery.
    package struct Body<Payload: Encodable>: Encodable {
        package var trigger: String
        package var data: Payload
        package var appId: String
        package var region: String
        package var webhook: String
        package var type: String
    }

    /// The outbox rows of a call transition.
    package func rows(_ trigger: CallTrigger, _ call: WireCall, at now: Int64, deliveryIds: () -> String) -> [OutboxRow] {
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
    package struct RoomData: Encodable {
        package struct Participant: Encodable {
            var uid: String, pid: String, name: String
            package init(uid: String, pid: String, name: String) { self.uid = uid; self.pid = pid; self.name = name }
        }
        package var sessionId: String
        package var participant: Participant?
        package var at: Int64
        package init(sessionId: String, participant: Participant? = nil, at: Int64) {
            self.sessionId = sessionId
            self.participant = participant
            self.at = at
        }
    }

    /// A finished recording as webhook `data` (`recording_generated`).
    package struct RecordingData: Encodable {
        package var sessionId: String
        package var rid: String
        package var recordingURL: String
        package var startTime: Int64
        package var endTime: Int64
        /// Seconds.
        package var duration: Double
        package init(sessionId: String, rid: String, recordingURL: String, startTime: Int64, endTime: Int64, duration: Double) {
            self.sessionId = sessionId
            self.rid = rid
            self.recordingURL = recordingURL
            self.startTime = startTime
            self.endTime = endTime
            self.duration = duration
        }
    }

    package func recordingRows(_ data: RecordingData, at now: Int64) -> [OutboxRow] {
        rows("recording_generated", type: "meet", sessionId: data.sessionId, data: data, at: now) { "dlv_" + Crypto.randomHex(10) }
    }

    /// The outbox rows of a room event under `trigger` (a meeting's or a ringing call's room).
    package func roomRows(_ trigger: String, type: String, data: RoomData, at now: Int64) -> [OutboxRow] {
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
    package static func signature(secret: String, body: String) -> String {
        Hex.encode(Crypto.hmacSHA256(key: Array(secret.utf8), message: Array(body.utf8)))
    }

    /// `X-CallRoom-Signature`: the same over `TIMESTAMP.BODY`, so a receiver can refuse replays.
    package static func timestampedSignature(secret: String, timestamp: Int64, body: String) -> String {
        signature(secret: secret, body: "\(timestamp).\(body)")
    }
    package init(directory: WebhookDirectory, appID: String, region: String) {
        self.directory = directory
        self.appID = appID
        self.region = region
    }
}
