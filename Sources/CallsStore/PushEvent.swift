import CallsCore
import Foundation

/// One push a ringing-call transition asks for, to one user's devices (`StoreCommand.push`):
/// the writer turns it into one `push_deliveries` row per token of that user, in the
/// transition's transaction.
package struct PushEvent: Sendable, Equatable {
    /// The payload's `callAction`: the phone starts ringing, or stops.
    package enum Action: String, Sendable { case initiated, ended }
    /// Why the phone stops ringing (`reason` of an `ended` push).
    package enum Reason: String, Sendable { case cancelled, answered, declined, unanswered, ended }

    package var action: Action
    package var reason: Reason?
    package var sessionId: String
    /// The user whose devices are pushed.
    package var uid: String
    package var caller: CallPartyWire
    package var callType: CallMediaType
    package var receiverType: CallReceiverType
    /// The group's guid when the call rings a group.
    package var guid: String?
    package var at: Int64
    /// Platforms this server can send to (configured providers).
    package var platforms: [PushPlatform]

    /// How long a push is worth sending (and its `apns-expiration` / FCM TTL): a phone that
    /// rings after this would ring for a call that is over.
    package static let lifetimeMs: Int64 = 30_000

    /// The fields every payload carries, all strings (FCM data messages allow nothing else).
    package var fields: [String: String] {
        var f = ["callAction": action.rawValue, "sessionId": sessionId, "callerUid": caller.id, "callerName": Self.clipped(caller.name, bytes: 512),
                 "callType": callType.rawValue, "receiverType": receiverType.rawValue, "timestamp": String(at)]
        if let reason { f["reason"] = reason.rawValue }
        if let guid { f["guid"] = guid }
        return f
    }

    /// `s` cut at a character boundary to at most `bytes` of UTF-8 (a name never makes a push
    /// too large for the 4 KB limit).
    package static func clipped(_ s: String, bytes: Int) -> String {
        guard s.utf8.count > bytes else { return s }
        var out = "", used = 0
        for ch in s {
            let n = ch.utf8.count
            if used + n > bytes - 3 { break }
            out.append(ch)
            used += n
        }
        return out + "…"
    }

    /// The APNs body: the fields at the top level (PushKit hands the app the whole dictionary),
    /// with an empty `aps`.
    package var apnsBody: String {
        struct Body: Encodable {
            package struct APS: Encodable {}
            package var aps = APS()
            package var fields: [String: String]
            package func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(aps, forKey: Key("aps"))
                for (k, v) in fields.sorted(by: { $0.key < $1.key }) { try c.encode(v, forKey: Key(k)) }
            }
        }
        return Self.json(Body(fields: fields))
    }

    /// The FCM HTTP v1 body for one token: a data message, high priority, TTL 30 s.
    package func fcmBody(token: String) -> String {
        struct Body: Encodable {
            package struct Message: Encodable {
                package struct Android: Encodable { var priority = "high"; var ttl = "\(PushEvent.lifetimeMs / 1000)s" }
                package var token: String
                package var data: [String: String]
                package var android = Android()
            }
            package var message: Message
        }
        return Self.json(Body(message: .init(token: token, data: fields)))
    }

    private struct Key: CodingKey {
        package var stringValue: String
        package var intValue: Int? { nil }
        package init(_ s: String) { stringValue = s }
        package init?(stringValue: String) { self.stringValue = stringValue }
        package init?(intValue: Int) { nil }
    }

    private static func json(_ v: some Encodable) -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? enc.encode(v)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
    package init(action: Action, reason: Reason? = nil, sessionId: String, uid: String, caller: CallPartyWire, callType: CallMediaType, receiverType: CallReceiverType, guid: String? = nil, at: Int64, platforms: [PushPlatform]) {
        self.action = action
        self.reason = reason
        self.sessionId = sessionId
        self.uid = uid
        self.caller = caller
        self.callType = callType
        self.receiverType = receiverType
        self.guid = guid
        self.at = at
        self.platforms = platforms
    }
}
