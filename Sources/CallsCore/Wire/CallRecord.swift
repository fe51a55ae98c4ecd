import CallsSupport

/// A logged call as the REST API carries it (`GET /v3/calls`, `GET /v3/calls/{sessionId}`):
/// written by the server, read by the SDK's call logs. Times are milliseconds since the epoch.
public struct CallRecord: Codable, Sendable, Equatable {
    public struct Participant: Codable, Sendable, Equatable {
        public var uid: String
        public var name: String
        public var deviceId: String
        public var pid: String
        public var isJoined: Bool
        /// `joined` or `left`.
        public var state: String
        public var joinedAt: Int64
        public var leftAt: Int64?
        public var totalAudioMinutes: Double
        public var totalVideoMinutes: Double
        public var totalDurationInMinutes: Double

        public init(uid: String, name: String, deviceId: String, pid: String, isJoined: Bool, state: String, joinedAt: Int64,
                    leftAt: Int64?, totalAudioMinutes: Double, totalVideoMinutes: Double, totalDurationInMinutes: Double) {
            self.uid = uid; self.name = name; self.deviceId = deviceId; self.pid = pid; self.isJoined = isJoined
            self.state = state; self.joinedAt = joinedAt; self.leftAt = leftAt; self.totalAudioMinutes = totalAudioMinutes
            self.totalVideoMinutes = totalVideoMinutes; self.totalDurationInMinutes = totalDurationInMinutes
        }
    }

    /// A recording of the call: the mixed room at `recordingURL`, and a file per participant.
    public struct Recording: Codable, Sendable, Equatable {
        public struct File: Codable, Sendable, Equatable {
            public var name: String
            /// `mixed` or `participant`.
            public var kind: String
            public var uid: String?
            public var pid: String?
            public var url: String
            /// Seconds.
            public var duration: Double
            public var bytes: Int64
            /// Where the file is kept (absent from servers before object storage: `local`).
            public var storage: FileStorage?
            /// True for a participant's WebM (VP8 video and Opus audio); absent for Ogg Opus files.
            public var video: Bool?
            public init(name: String, kind: String, uid: String?, pid: String?, url: String, duration: Double, bytes: Int64,
                        storage: FileStorage? = nil, video: Bool? = nil) {
                self.name = name; self.kind = kind; self.uid = uid; self.pid = pid; self.url = url; self.duration = duration; self.bytes = bytes
                self.storage = storage
                self.video = video
            }
        }
        public var rid: String
        public var recordingURL: String
        public var startTime: Int64
        /// Nil while it records.
        public var endTime: Int64?
        /// Seconds.
        public var duration: Double
        public var files: [File]
        public init(rid: String, recordingURL: String, startTime: Int64, endTime: Int64?, duration: Double, files: [File]) {
            self.rid = rid; self.recordingURL = recordingURL; self.startTime = startTime; self.endTime = endTime
            self.duration = duration; self.files = files
        }
    }

    public var sessionId: String
    /// `audio` or `video`.
    public var type: String
    /// `meet` or `call`.
    public var mode: String
    /// `group` (meetings) or `user`.
    public var receiverType: String
    public var status: String
    public var initiatedAt: Int64
    public var startedAt: Int64?
    public var endedAt: Int64?
    public var totalParticipants: Int
    /// `HH:MM:SS`.
    public var totalDuration: String
    public var totalDurationInMinutes: Double
    public var totalAudioMinutes: Double
    public var totalVideoMinutes: Double
    public var hasRecording: Bool
    public var recordings: [Recording] = []
    public var hasTranscription: Bool
    public var transcriptions: [TranscriptRecord] = []
    public var participants: [Participant]
    /// In a listing (`GET /v3/calls`), true when the call had more participant rows than the 100
    /// it carries (the first to join, and your own); the totals count them all, and
    /// `GET /v3/calls/{sessionId}` has every one. Absent otherwise.
    public var participantsTruncated: Bool?
    /// Ringing calls: who placed it and whom it rang (a uid, or a guid); nil for meetings.
    public var initiator: CallPartyWire?
    public var receiver: CallPartyWire?
    /// Ringing calls: everyone it rang and what became of each (`accepted`, `rejected`, `busy`,
    /// `unanswered` — missed —, `cancelled`, `left`, or `ringing` still); nil for meetings.
    public var members: [CallMemberWire]?
    /// Ringing calls, asked for with an auth token: `outgoing` when you placed it, else `incoming`.
    public var direction: String?

    public init(sessionId: String, type: String, mode: String, receiverType: String, status: String, initiatedAt: Int64,
                startedAt: Int64?, endedAt: Int64?, totalParticipants: Int, totalDuration: String, totalDurationInMinutes: Double,
                totalAudioMinutes: Double, totalVideoMinutes: Double, hasRecording: Bool, hasTranscription: Bool,
                participants: [Participant], initiator: CallPartyWire? = nil, receiver: CallPartyWire? = nil) {
        self.sessionId = sessionId; self.type = type; self.mode = mode; self.receiverType = receiverType; self.status = status
        self.initiatedAt = initiatedAt; self.startedAt = startedAt; self.endedAt = endedAt; self.totalParticipants = totalParticipants
        self.totalDuration = totalDuration; self.totalDurationInMinutes = totalDurationInMinutes; self.totalAudioMinutes = totalAudioMinutes
        self.totalVideoMinutes = totalVideoMinutes; self.hasRecording = hasRecording; self.hasTranscription = hasTranscription
        self.participants = participants
        self.initiator = initiator
        self.receiver = receiver
    }
}
