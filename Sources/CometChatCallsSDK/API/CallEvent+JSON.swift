import CallsCore
import Foundation

/// A callback argument as a JSON value (what `CallEvent.payload`, generated, puts under its label).
protocol EventPayloadValue { var payloadValue: Any { get } }

extension Participant: EventPayloadValue { var payloadValue: Any { jsonObject } }
extension String: EventPayloadValue { var payloadValue: Any { self } }
extension Bool: EventPayloadValue { var payloadValue: Any { self } }
extension AudioMode: EventPayloadValue { var payloadValue: Any { value } }
extension LayoutType: EventPayloadValue { var payloadValue: Any { value } }
extension CameraFacing: EventPayloadValue { var payloadValue: Any { rawValue } }
extension ConnectionQuality: EventPayloadValue { var payloadValue: Any { rawValue } }
extension MediaTransport: EventPayloadValue { var payloadValue: Any { rawValue } }
extension Array: EventPayloadValue where Element: EventPayloadValue { var payloadValue: Any { map(\.payloadValue) } }
extension WireCaption: EventPayloadValue {
    var payloadValue: Any { ["tid": tid, "pid": pid, "uid": uid, "name": name, "id": id, "text": text, "final": final, "start": start, "end": end] }
}
extension ChatMessage: EventPayloadValue {
    var payloadValue: Any { ["id": id, "pid": pid, "uid": uid, "name": name, "text": text, "sentAt": sentAt] }
}

extension Participant {
    /// The participant as a JSON object (fields that are nil are left out).
    public var jsonObject: [String: Any] {
        var d: [String: Any] = [:]
        d["uid"] = uid; d["name"] = name; d["avatar"] = avatar; d["pid"] = pid; d["role"] = role
        d["mid"] = mid; d["state"] = state; d["isJoined"] = isJoined; d["joinedAt"] = joinedAt; d["leftAt"] = leftAt
        d["deviceID"] = deviceID; d["isAudioMuted"] = isAudioMuted; d["isVideoPaused"] = isVideoPaused
        d["isPinned"] = isPinned; d["isPresenting"] = isPresenting; d["raisedHandTimestamp"] = raisedHandTimestamp
        d["isRecording"] = isRecording; d["cameraFacing"] = cameraFacing?.rawValue; d["leftReason"] = leftReason
        return d
    }
}

extension CallEvent {
    /// One JSON object: `{"ts": ISO-8601, "listener": ..., "event": ..., <payload>}` on one line.
    public func jsonLine(at date: Date = Date()) -> String {
        var d = payload
        d["ts"] = ISO8601DateFormatter.string(from: date, timeZone: .gmt, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        d["listener"] = listener
        d["event"] = callback
        guard let data = try? JSONSerialization.data(withJSONObject: d, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return #"{"listener":"\#(listener)","event":"\#(callback)"}"#
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A short human-readable summary of the payload for the event log.
    public var summary: String {
        switch self {
        case .participantListChanged(let ps): return "\(ps.count): " + ps.map { $0.name ?? $0.uid ?? "?" }.joined(separator: ", ")
        case .participantJoined(let p), .participantLeft(let p), .participantAudioMuted(let p), .participantAudioUnmuted(let p),
             .participantVideoPaused(let p), .participantVideoResumed(let p), .participantHandRaised(let p),
             .participantHandLowered(let p), .participantStartedScreenShare(let p), .participantStoppedScreenShare(let p),
             .participantStartedRecording(let p), .participantStoppedRecording(let p), .dominantSpeakerChanged(let p):
            return "\(p.name ?? "?") (\(p.uid ?? "?"))"
        case .audioModeChanged(let m): return m.value
        case .audioModesChanged(let ms): return ms.map(\.value).joined(separator: ",")
        case .cameraFacingChanged(let c): return c.rawValue
        case .callLayoutChanged(let l): return l.value
        case .error(let code, let message): return "\(code): \(message)"
        case .chatMessage(let m): return "\(m.name): \(m.text)"
        case .captionReceived(let c): return "\(c.name)\(c.final ? "" : " …"): \(c.text)"
        case .transcriptionStarted(let l): return l
        case .streamingReconnecting(let reason): return reason
        case .audioNotice(let n): return n
        case .connectionQualityChanged(let p, let q): return "\(p.name ?? "?") (\(p.uid ?? "?")) \(q.rawValue)"
        default: return ""
        }
    }
}
