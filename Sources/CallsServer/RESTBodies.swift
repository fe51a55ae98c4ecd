import CallsCore
import Foundation

// MARK: Response bodies

struct AppInfo: Encodable { var appId: String; var region: String; var mediaPort: Int }
struct AuthTokenBody: Encodable { var uid: String; var authToken: String; var createdAt: Int64 }
struct LoginBody: Encodable { var uid: String; var name: String; var avatar: String?; var authToken: String }

struct DeletedBody: Encodable { var success: Bool; var deleted: Int }

struct ListBody<T: Encodable>: Encodable {
    struct Meta: Encodable { var pagination: Pagination }
    struct Pagination: Encodable { var total: Int; var count: Int; var per_page: Int; var current_page: Int; var total_pages: Int }
    var data: [T]
    var meta: Meta
}

/// A call as the REST API shows it (`GET /v3/calls`, `GET /v3/calls/{sessionId}`).
struct CallBody: Encodable {
    struct P: Encodable {
        var uid: String
        var name: String
        var deviceId: String
        var pid: String
        var isJoined: Bool
        var state: String
        var joinedAt: Int64
        var leftAt: Int64?
        var totalAudioMinutes: Double
        var totalVideoMinutes: Double
        var totalDurationInMinutes: Double
    }
    var sessionId: String
    var type: String
    var mode: String
    var receiverType: String
    var status: String
    var initiatedAt: Int64
    var startedAt: Int64?
    var endedAt: Int64?
    var totalParticipants: Int
    var totalDuration: String
    var totalDurationInMinutes: Double
    var totalAudioMinutes: Double
    var totalVideoMinutes: Double
    var hasRecording: Bool
    var hasTranscription: Bool
    var participants: [P]

    init(_ c: StoredCall, now: Int64 = epochMilliseconds()) {
        func minutes(_ ms: Int64) -> Double { (Double(max(0, ms)) / 60_000 * 100).rounded() / 100 }
        sessionId = c.sessionId
        type = c.type
        mode = c.mode
        receiverType = c.mode == "meet" ? "group" : "user"
        status = c.status
        initiatedAt = c.initiatedAt
        startedAt = c.startedAt
        endedAt = c.endedAt
        let isVideo = c.type == "video"
        participants = c.participants.map { p in
            let ms = (p.leftAt ?? now) - p.joinedAt
            return P(uid: p.uid, name: p.name, deviceId: p.pid, pid: p.pid, isJoined: p.leftAt == nil,
                     state: p.leftAt == nil ? "joined" : "left", joinedAt: p.joinedAt, leftAt: p.leftAt,
                     totalAudioMinutes: minutes(ms), totalVideoMinutes: isVideo ? minutes(ms) : 0, totalDurationInMinutes: minutes(ms))
        }
        totalParticipants = Set(c.participants.map(\.uid)).count
        let duration = (c.endedAt ?? now) - (c.startedAt ?? c.initiatedAt)
        totalDurationInMinutes = minutes(duration)
        let secs = max(0, duration / 1000)
        totalDuration = String(format: "%02d:%02d:%02d", secs / 3600, (secs / 60) % 60, secs % 60)
        totalAudioMinutes = participants.reduce(0) { $0 + $1.totalAudioMinutes }
        totalVideoMinutes = participants.reduce(0) { $0 + $1.totalVideoMinutes }
        hasRecording = false
        hasTranscription = false
    }
}
