import CallsCore

/// Status of a call in the call log.
public enum CallStatus: String, Sendable, CaseIterable {
    case initiated, ongoing, busy, rejected, cancelled, ended, missed, unanswered
}

/// Kind of call: 1:1 `call`, `meet`ing, and the documented `presenter`/`broadcast` modes.
public enum CallCategory: String, Sendable, CaseIterable {
    case call, meet, presenter, broadcast
}

/// Whether you placed the call or received it (for meetings: whether you started it).
public enum CallDirection: String, Sendable, CaseIterable {
    case incoming, outgoing
}

/// What a call log's receiver is.
public enum CallEntityType: String, Sendable, CaseIterable {
    case callUser = "user"
    case callGroup = "group"
    /// The raw string (`user`, `group`).
    public var value: String { rawValue }
}

/// The party at one end of a logged call. `name` is never nil; downcast to `CallUser` or
/// `CallGroup` for the id. Immutable; any thread.
public class CallEntity: @unchecked Sendable {
    public let name: String
    init(name: String) { self.name = name }
}

/// A user in the call log.
public final class CallUser: CallEntity, @unchecked Sendable {
    public let uid: String
    public let avatar: String?
    init(uid: String, name: String, avatar: String? = nil) {
        self.uid = uid
        self.avatar = avatar
        super.init(name: name)
    }
}

/// A group in the call log; for a meeting, the session itself (`guid` is the session id).
public final class CallGroup: CallEntity, @unchecked Sendable {
    public let guid: String
    public let icon: String?
    init(guid: String, name: String, icon: String? = nil) {
        self.guid = guid
        self.icon = icon
        super.init(name: name)
    }
}

/// A recording of a call (none until the server records).
public struct Recording: Sendable, Equatable {
    public var rid: String
    public var recordingURL: String
    public var startTime: Int
    public var endTime: Int
    public var duration: Double
}

/// One call as the server logged it. Times are seconds since the epoch. Immutable; any thread.
public final class CallLog: Sendable {
    public let sessionID: String
    public let mid: String
    public let initiator: CallEntity
    public let receiver: CallEntity
    public let receiverType: CallEntityType
    /// `audio` or `video`.
    public let type: String
    public let status: CallStatus
    public let mode: CallCategory
    public let direction: CallDirection
    public let initiatedAt: Int
    public let startedAt: Int?
    public let endedAt: Int?
    /// `HH:MM:SS`.
    public let totalDuration: String
    public let totalDurationInMinutes: Double
    public let totalAudioMinutes: Double
    public let totalVideoMinutes: Double
    public let totalParticipants: Int
    public let participants: [Participant]
    /// CallRoom: true when the server listed only the call's first 100 participant entries (and
    /// yours) — a call of many joins; `totalParticipants` and the minutes count them all.
    public let participantsTruncated: Bool
    public let hasRecording: Bool
    public let recordings: [Recording]
    public let hasTranscription: Bool

    init(_ b: CallRecord, viewer: String?) {
        sessionID = b.sessionId
        mid = b.sessionId
        let first = b.participants.first
        // A ringing call names its caller and receiver; a meeting's first joiner "placed" it.
        let caller = b.initiator.map { (uid: $0.id, name: $0.name) } ?? (uid: first?.uid ?? "", name: first?.name ?? "")
        initiator = CallUser(uid: caller.uid, name: caller.name)
        receiverType = b.receiverType == "user" ? .callUser : .callGroup
        if let r = b.receiver {
            receiver = receiverType == .callGroup ? CallGroup(guid: r.id, name: r.name) : CallUser(uid: r.id, name: r.name)
        } else if receiverType == .callGroup {
            receiver = CallGroup(guid: b.sessionId, name: b.sessionId)
        } else {
            let other = b.participants.first { $0.uid != caller.uid }
            receiver = CallUser(uid: other?.uid ?? "", name: other?.name ?? "")
        }
        type = b.type
        status = CallStatus(rawValue: b.status) ?? .ended
        mode = b.mode == "meet" ? .meet : .call
        direction = viewer == nil || caller.uid == viewer ? .outgoing : .incoming
        initiatedAt = Int(b.initiatedAt / 1000)
        startedAt = b.startedAt.map { Int($0 / 1000) }
        endedAt = b.endedAt.map { Int($0 / 1000) }
        totalDuration = b.totalDuration
        totalDurationInMinutes = b.totalDurationInMinutes
        totalAudioMinutes = b.totalAudioMinutes
        totalVideoMinutes = b.totalVideoMinutes
        totalParticipants = b.totalParticipants
        participantsTruncated = b.participantsTruncated == true
        participants = b.participants.map { p in
            var x = Participant(uid: p.uid, name: p.name)
            x.pid = p.pid
            x.deviceID = p.deviceId
            x.mid = b.sessionId
            x.state = p.state
            x.isJoined = p.isJoined
            x.joinedAt = p.joinedAt
            x.leftAt = p.leftAt
            x.totalAudioMinutes = p.totalAudioMinutes
            x.totalVideoMinutes = p.totalVideoMinutes
            x.totalDurationInMinutes = p.totalDurationInMinutes
            return x
        }
        hasRecording = b.hasRecording
        recordings = b.recordings.map {
            Recording(rid: $0.rid, recordingURL: $0.recordingURL, startTime: Int($0.startTime / 1000),
                      endTime: Int(($0.endTime ?? 0) / 1000), duration: $0.duration)
        }
        hasTranscription = b.hasTranscription
    }
}
