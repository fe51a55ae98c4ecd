import CallsCore

/// A participant in a session: one device (`pid`) of one user (`uid`), with its full state as
/// the server reports it. Every field is optional, as in the documented SDK, and the superset
/// of both documented field lists is present, so code written for either compiles.
/// A value; any thread.
public struct Participant: Sendable, Equatable, Hashable {
    public var uid: String?
    public var name: String?
    public var avatar: String?
    /// Participant id: this device's connection.
    public var pid: String?
    /// `moderator` or `participant`.
    public var role: String?
    /// The session (meeting) id.
    public var mid: String?
    /// `joined` or `left`.
    public var state: String?
    public var isJoined: Bool?
    /// Milliseconds since the epoch.
    public var joinedAt: Int64?
    public var leftAt: Int64?
    public var deviceID: String?
    public var isAudioMuted: Bool?
    public var isVideoPaused: Bool?
    public var isPinned: Bool?
    public var isPresenting: Bool?
    public var raisedHandTimestamp: Int64?
    public var totalAudioMinutes: Double?
    public var totalVideoMinutes: Double?
    public var totalDurationInMinutes: Double?
    /// CallRoom: the RTP SSRC of this participant's audio (for level meters).
    public var ssrc: UInt32?
    /// CallRoom: the RTP SSRC of this participant's video (nil: it sends none).
    public var videoSSRC: UInt32?
    /// CallRoom: `FRONT` or `REAR`.
    public var cameraFacing: CameraFacing?
    /// CallRoom: recording on their side.
    public var isRecording: Bool?
    /// CallRoom: why they left (`onParticipantLeft`): `left`, `disconnected`, `removed`, `timedOut`, `revoked`, …
    public var leftReason: String?

    public init(uid: String? = nil, name: String? = nil) {
        self.uid = uid
        self.name = name
    }

    init(_ w: WireParticipant, sessionId: String, joined: Bool = true, leftAt: Int64? = nil) {
        uid = w.uid
        name = w.name
        avatar = w.avatar
        pid = w.pid
        role = w.role.rawValue
        mid = sessionId
        state = joined ? "joined" : "left"
        isJoined = joined
        joinedAt = w.joinedAt
        self.leftAt = leftAt
        deviceID = w.pid
        isAudioMuted = w.isAudioMuted
        isVideoPaused = w.isVideoPaused
        isPinned = w.isPinned
        isPresenting = w.isPresenting
        raisedHandTimestamp = w.raisedHandTimestamp
        isRecording = w.isRecording
        cameraFacing = CameraFacing(rawValue: w.cameraFacing)
        ssrc = w.ssrc
        videoSSRC = w.videoSsrc
    }
}

/// CallRoom: one in-call chat message, as the server relays it. A value; any thread.
public typealias ChatEntry = ChatMessage
/// CallRoom: a caption from the server's transcription (`onCaptionReceived`): `pid`/`uid`/`name` of
/// the speaker, `id` of their utterance, `text`, `final`, `start`/`end` in ms from the transcription's start.
public typealias Caption = WireCaption
