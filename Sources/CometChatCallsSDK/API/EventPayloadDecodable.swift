import CallsCore
import Foundation

/// A callback argument read back from the JSON value `payloadValue` wrote (a recorded event
/// log, for `callroom replay`): nil when it is missing or not that type's shape. A value; any
/// thread.
protocol EventPayloadDecodable { init?(payloadValue: Any?) }

extension String: EventPayloadDecodable {
    init?(payloadValue v: Any?) {
        guard let s = v as? String else { return nil }
        self = s
    }
}

extension Bool: EventPayloadDecodable {
    init?(payloadValue v: Any?) {
        guard let b = v as? Bool else { return nil }
        self = b
    }
}

extension AudioMode: EventPayloadDecodable {
    init?(payloadValue v: Any?) { self.init(rawValue: (v as? String)?.lowercased() ?? "") }
}

extension LayoutType: EventPayloadDecodable {
    init?(payloadValue v: Any?) { self.init(rawValue: (v as? String)?.lowercased() ?? "") }
}

extension CameraFacing: EventPayloadDecodable {
    init?(payloadValue v: Any?) { self.init(rawValue: v as? String ?? "") }
}

extension ConnectionQuality: EventPayloadDecodable {
    init?(payloadValue v: Any?) { self.init(rawValue: v as? String ?? "") }
}

extension MediaTransport: EventPayloadDecodable {
    init?(payloadValue v: Any?) { self.init(rawValue: v as? String ?? "") }
}

extension Array: EventPayloadDecodable where Element: EventPayloadDecodable {
    init?(payloadValue v: Any?) {
        guard let items = v as? [Any] else { return nil }
        var out: [Element] = []
        for i in items {
            guard let e = Element(payloadValue: i) else { return nil }
            out.append(e)
        }
        self = out
    }
}

/// JSON numbers come back as `Int`, `Double` or `NSNumber`: any of them as an integer.
private func integer(_ v: Any?) -> Int64? {
    switch v {
    case let i as Int: return Int64(i)
    case let i as Int64: return i
    case let d as Double: return Int64(d)
    case let n as NSNumber: return n.int64Value
    default: return nil
    }
}

extension Participant: EventPayloadDecodable {
    init?(payloadValue v: Any?) {
        guard let d = v as? [String: Any] else { return nil }
        self.init(uid: d["uid"] as? String, name: d["name"] as? String)
        avatar = d["avatar"] as? String; pid = d["pid"] as? String; role = d["role"] as? String
        mid = d["mid"] as? String; state = d["state"] as? String; isJoined = d["isJoined"] as? Bool
        joinedAt = integer(d["joinedAt"]); leftAt = integer(d["leftAt"]); deviceID = d["deviceID"] as? String
        isAudioMuted = d["isAudioMuted"] as? Bool; isVideoPaused = d["isVideoPaused"] as? Bool
        isPinned = d["isPinned"] as? Bool; isPresenting = d["isPresenting"] as? Bool
        raisedHandTimestamp = integer(d["raisedHandTimestamp"]); isRecording = d["isRecording"] as? Bool
        cameraFacing = (d["cameraFacing"] as? String).flatMap(CameraFacing.init(rawValue:)); leftReason = d["leftReason"] as? String
    }
}

extension WireCaption: EventPayloadDecodable {
    init?(payloadValue v: Any?) {
        guard let d = v as? [String: Any], let tid = d["tid"] as? String, let pid = d["pid"] as? String, let uid = d["uid"] as? String,
              let name = d["name"] as? String, let id = integer(d["id"]), let text = d["text"] as? String else { return nil }
        self.init(tid: tid, pid: pid, uid: uid, name: name, id: Int(id), text: text, final: d["final"] as? Bool ?? true,
                  start: integer(d["start"]) ?? 0, end: integer(d["end"]) ?? 0)
    }
}

extension ChatMessage: EventPayloadDecodable {
    init?(payloadValue v: Any?) {
        guard let d = v as? [String: Any], let text = d["text"] as? String else { return nil }
        self.init(id: integer(d["id"]) ?? 0, pid: d["pid"] as? String ?? "", uid: d["uid"] as? String ?? "", name: d["name"] as? String ?? "",
                  text: text, sentAt: integer(d["sentAt"]) ?? 0)
    }
}

extension CallEvent {
    /// The event of one line `jsonLine` wrote, with its time (`ts`); nil for anything else.
    public static func recorded(_ line: String) -> (event: CallEvent, at: Date?)? {
        guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let name = o["event"] as? String,
              let e = CallEvent(callback: name, payload: o) else { return nil }
        let at = (o["ts"] as? String).flatMap { ISO8601DateFormatter.date(from: $0, fractional: true) }
        return (e, at)
    }
}

extension ISO8601DateFormatter {
    /// Parses an internet date-time, with fractional seconds when `fractional`.
    static func date(from s: String, fractional: Bool) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = fractional ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        return f.date(from: s) ?? (fractional ? date(from: s, fractional: false) : nil)
    }
}
