import CallsSupport

/// A participant as the server describes it on the wire: one device (`pid`) of one user (`uid`).
/// The server is the single source of truth for every field.
public struct WireParticipant: Codable, Sendable, Equatable, Hashable {
    public var uid: String
    public var name: String
    public var avatar: String?
    /// Participant id: one signalling connection of `uid`.
    public var pid: String
    /// The RTP SSRC the server assigned to this participant's audio.
    public var ssrc: UInt32
    /// The RTP SSRC of its video (VP8); absent for members that send none (the server's own).
    public var videoSsrc: UInt32? = nil
    public var role: ParticipantRole
    public var isAudioMuted: Bool
    public var isVideoPaused: Bool
    /// Milliseconds since the Unix epoch.
    public var joinedAt: Int64
    /// When the hand went up (ms since the epoch); nil when lowered. Orders raised hands.
    public var raisedHandTimestamp: Int64? = nil
    /// Pinned for the whole room by a moderator.
    public var isPinned: Bool = false
    /// Sharing a screen.
    public var isPresenting: Bool = false
    /// Recording the call on their side.
    public var isRecording: Bool = false
    /// `FRONT` or `REAR` (video sessions).
    public var cameraFacing: String = "FRONT"
    /// True while a moderator's mute holds (the room's `moderatorMute` is `untilAllowed` and no
    /// moderator has allowed an unmute yet); absent otherwise.
    public var mutedByModerator: Bool? = nil

    public init(uid: String, name: String, avatar: String? = nil, pid: String, ssrc: UInt32, role: ParticipantRole,
                isAudioMuted: Bool, isVideoPaused: Bool, joinedAt: Int64) {
        self.uid = uid
        self.name = name
        self.avatar = avatar
        self.pid = pid
        self.ssrc = ssrc
        self.role = role
        self.isAudioMuted = isAudioMuted
        self.isVideoPaused = isVideoPaused
        self.joinedAt = joinedAt
    }
}
