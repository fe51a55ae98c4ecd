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
    public var hasTranscription: Bool
    public var participants: [Participant]
    /// Ringing calls: who placed it and whom it rang (a uid, or a guid); nil for meetings.
    public var initiator: CallPartyWire?
    public var receiver: CallPartyWire?

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
