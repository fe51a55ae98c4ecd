import CallsCore
import CallsMembers
import CallsStore
import Foundation

// MARK: Response bodies

struct AppInfo: Encodable { var appId: String; var region: String; var mediaPort: Int; var publicURL: String }
struct AuthTokenBody: Encodable { var uid: String; var authToken: String; var createdAt: Int64 }
struct LoginBody: Encodable { var uid: String; var name: String; var avatar: String?; var authToken: String }

struct DeletedBody: Encodable { var success: Bool; var deleted: Int }

struct ListBody<T: Encodable>: Encodable {
    struct Meta: Encodable { var pagination: Pagination }
    struct Pagination: Encodable { var total: Int; var count: Int; var per_page: Int; var current_page: Int; var total_pages: Int }
    var data: [T]
    var meta: Meta
}

extension CallRecord {
    /// With the direction as `viewer` (a uid; nil: the apikey) sees a ringing call.
    func seen(by viewer: String?) -> CallRecord {
        var r = self
        if let viewer, let i = initiator { r.direction = i.id == viewer ? "outgoing" : "incoming" }
        return r
    }
}

extension CallRecord {
    /// The REST view of a stored call; an ongoing call counts up to `now`; recordings' URLs
    /// start with `baseURL` (the server's public URL).
    init(_ c: StoredCall, now: Int64 = epochMilliseconds(), baseURL: String = "") {
        func minutes(_ ms: Int64) -> Double { (Double(max(0, ms)) / 60_000 * 100).rounded() / 100 }
        let isVideo = c.type == "video"
        let ps = c.participants.map { p -> CallRecord.Participant in
            let ms = (p.leftAt ?? now) - p.joinedAt
            return .init(uid: p.uid, name: p.name, deviceId: p.pid, pid: p.pid, isJoined: p.leftAt == nil,
                         state: p.leftAt == nil ? "joined" : "left", joinedAt: p.joinedAt, leftAt: p.leftAt,
                         totalAudioMinutes: minutes(ms), totalVideoMinutes: isVideo ? minutes(ms) : 0, totalDurationInMinutes: minutes(ms))
        }
        let duration = (c.endedAt ?? now) - (c.startedAt ?? c.initiatedAt)
        let secs = max(0, duration / 1000)
        // Every row counts in the totals, also those a listing leaves out (`allSpans`).
        let audio = c.allSpans.map { $0.reduce(0) { $0 + minutes(($1.leftAt ?? now) - $1.joinedAt) } }
            ?? ps.reduce(0) { $0 + $1.totalAudioMinutes }
        self.init(sessionId: c.sessionId, type: c.type, mode: c.mode, receiverType: c.receiverType?.rawValue ?? (c.mode == "meet" ? "group" : "user"),
                  status: c.status, initiatedAt: c.initiatedAt, startedAt: c.startedAt, endedAt: c.endedAt,
                  totalParticipants: c.distinctUIDs ?? Set(c.participants.map(\.uid)).count,
                  totalDuration: String(format: "%02d:%02d:%02d", secs / 3600, (secs / 60) % 60, secs % 60),
                  totalDurationInMinutes: minutes(duration), totalAudioMinutes: audio,
                  totalVideoMinutes: isVideo ? audio : 0, hasRecording: false, hasTranscription: false,
                  participants: ps, initiator: c.initiator, receiver: c.receiver)
        if c.allSpans != nil { participantsTruncated = true }
        members = c.initiator == nil ? nil : c.members
        recordings = c.recordings.map { r in
            let url = RoomRecorder.url(baseURL, c.sessionId, r.rid)
            return Recording(rid: r.rid, recordingURL: url, startTime: r.startedAt, endTime: r.endedAt,
                             duration: Double(r.durationMs ?? 0) / 1000,
                             files: r.files.map { .init(name: $0.name, kind: $0.kind, uid: $0.uid, pid: $0.pid,
                                                       url: $0.kind == "mixed" ? url : url + "/" + ($0.video ? $0.name : $0.pid ?? $0.name),
                                                       duration: Double($0.durationMs) / 1000, bytes: $0.bytes, storage: $0.storage,
                                                       video: $0.video ? true : nil) })
        }
        hasRecording = !recordings.isEmpty
        transcriptions = c.transcripts.map { $0.served(baseURL) }
        hasTranscription = !transcriptions.isEmpty
    }
}
