import Foundation

extension Participant {
    /// The participant as a JSON object (fields that are nil are left out).
    public var jsonObject: [String: Any] {
        var d: [String: Any] = [:]
        d["uid"] = uid; d["name"] = name; d["avatar"] = avatar; d["pid"] = pid; d["role"] = role
        d["mid"] = mid; d["state"] = state; d["isJoined"] = isJoined; d["joinedAt"] = joinedAt; d["leftAt"] = leftAt
        d["deviceID"] = deviceID; d["isAudioMuted"] = isAudioMuted; d["isVideoPaused"] = isVideoPaused
        d["isPinned"] = isPinned; d["isPresenting"] = isPresenting; d["raisedHandTimestamp"] = raisedHandTimestamp
        d["isRecording"] = isRecording; d["cameraFacing"] = cameraFacing?.rawValue
        return d
    }
}

extension CallEvent {
    /// The callback's arguments as JSON values, keyed by their documented labels.
    public var payload: [String: Any] {
        switch self {
        case .audioModeChanged(let m): return ["audioMode": m.value]
        case .audioModesChanged(let ms): return ["audioModes": ms.map(\.value)]
        case .cameraFacingChanged(let c): return ["cameraFacing": c.rawValue]
        case .participantListChanged(let ps): return ["participants": ps.map(\.jsonObject)]
        case .participantJoined(let p), .participantLeft(let p), .participantAudioMuted(let p), .participantAudioUnmuted(let p),
             .participantVideoPaused(let p), .participantVideoResumed(let p), .participantHandRaised(let p),
             .participantHandLowered(let p), .participantStartedScreenShare(let p), .participantStoppedScreenShare(let p),
             .participantStartedRecording(let p), .participantStoppedRecording(let p), .dominantSpeakerChanged(let p):
            return ["participant": p.jsonObject]
        case .callLayoutChanged(let l): return ["layoutType": l.value]
        case .error(let code, let message): return ["code": code, "message": message]
        case .audioNotice(let n): return ["notice": n]
        case .connectionQualityChanged(let p, let q): return ["participant": p.jsonObject, "quality": q.rawValue]
        case .chatMessage(let m): return ["message": ["id": m.id, "pid": m.pid, "uid": m.uid, "name": m.name, "text": m.text, "sentAt": m.sentAt]]
        default: return [:]
        }
    }

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
        case .audioNotice(let n): return n
        case .connectionQualityChanged(let p, let q): return "\(p.name ?? "?") (\(p.uid ?? "?")) \(q.rawValue)"
        default: return ""
        }
    }
}
