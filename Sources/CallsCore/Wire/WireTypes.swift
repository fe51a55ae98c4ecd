import CallsSupport

/// Typed values of the signalling wire, shared by the server and the SDK: each encodes as the
/// string docs/protocol.md names, so the JSON is unchanged. Closed sets are enums (an unknown
/// value is a malformed message); sets a newer server may extend (leave reasons, error codes)
/// are open structs with the known values as constants. Values; any thread.

/// A string-valued wire type whose set a newer server may extend: the standard library's
/// `RawRepresentable` coding makes it a plain JSON string.
public protocol OpenWireValue: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible where RawValue == String {
    init(rawValue: String)
}

extension OpenWireValue {
    public var description: String { rawValue }
}

/// A participant's role in a room.
public enum ParticipantRole: String, Codable, Sendable, CaseIterable {
    case moderator
    case participant
}

/// What changed in a `participantUpdated` message.
public enum ParticipantChange: String, Codable, Sendable, CaseIterable {
    case audioMuted, audioUnmuted
    case videoPaused, videoResumed
    case handRaised, handLowered
    case presentingStarted, presentingStopped
    case recordingStarted, recordingStopped
    case cameraFacingChanged
    case pinned, unpinned
    case roleChanged
    /// A moderator let a participant they muted unmute themselves again (`allowUnmute`).
    case unmuteAllowed
}

/// The kind of session a client joins with (`join.sessionType`).
public enum SignalSessionType: String, Codable, Sendable, CaseIterable {
    case video
    case voice
}

/// A server-side session feature (`setSessionFeature.feature`).
public enum SessionFeature: String, Codable, Sendable, CaseIterable {
    case recording
    case transcription
    case streaming

    /// `Recording`, for messages.
    public var title: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
}

/// Why a participant left (`participantLeft.reason`, `left.reason`).
public struct LeaveReason: OpenWireValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// They sent `leave`.
    public static let left = LeaveReason(rawValue: "left")
    /// Their connection dropped and they did not resume within the grace period.
    public static let disconnected = LeaveReason(rawValue: "disconnected")
    /// A moderator removed them.
    public static let removed = LeaveReason(rawValue: "removed")
    /// Alone in the room for the idle timeout.
    public static let timedOut = LeaveReason(rawValue: "timedOut")
    /// The server stopped.
    public static let serverShuttingDown = LeaveReason(rawValue: "server shutting down")
    /// The operator deleted the user or revoked their tokens.
    public static let revoked = LeaveReason(rawValue: "revoked")
    /// (The server's recorder) a moderator stopped the recording, or the room emptied.
    public static let recordingStopped = LeaveReason(rawValue: "recording stopped")
    /// A server member's feature (transcription, streaming) was stopped.
    public static let featureStopped = LeaveReason(rawValue: "feature stopped")
}

/// The code of a refused signalling request (`error.code`); docs/protocol.md lists them.
public struct SignalErrorCode: OpenWireValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    // The signalling protocol itself
    public static let badMessage = SignalErrorCode(rawValue: "SIGNAL_BAD_MESSAGE")
    public static let unknownType = SignalErrorCode(rawValue: "SIGNAL_UNKNOWN_TYPE")
    public static let unsupportedVersion = SignalErrorCode(rawValue: "SIGNAL_UNSUPPORTED_VERSION")
    public static let notJoined = SignalErrorCode(rawValue: "SIGNAL_NOT_JOINED")
    public static let alreadyJoined = SignalErrorCode(rawValue: "SIGNAL_ALREADY_JOINED")
    // The call token
    public static let tokenInvalid = SignalErrorCode(rawValue: "AUTH_ERR_TOKEN_INVALID")
    public static let tokenExpired = SignalErrorCode(rawValue: "AUTH_ERR_TOKEN_EXPIRED")
    /// The call token's user was deleted or had their tokens revoked after it was issued.
    public static let tokenRevoked = SignalErrorCode(rawValue: "AUTH_ERR_TOKEN_REVOKED")
    /// A moderator removed this token's holder from the session: the token does not come back in.
    public static let removedFromSession = SignalErrorCode(rawValue: "ERR_REMOVED_FROM_SESSION")
    /// Someone is in the session with this call token already (one token, one participant).
    public static let tokenInUse = SignalErrorCode(rawValue: "ERR_TOKEN_IN_USE")
    /// The room has an allow-list without this uid.
    public static let notOnAllowList = SignalErrorCode(rawValue: "ERR_NOT_ALLOWED_IN_ROOM")
    /// The session is a ringing call's room and the token's holder is not one of its parties.
    public static let notCallParty = SignalErrorCode(rawValue: "ERR_NOT_CALL_PARTY")
    /// The operator banned this user from the room (`PUT /v3/rooms/{sessionId}/bans/{uid}`).
    public static let bannedFromRoom = SignalErrorCode(rawValue: "ERR_BANNED_FROM_ROOM")
    /// A moderator locked the room: no new joins.
    public static let roomLocked = SignalErrorCode(rawValue: "ERR_ROOM_LOCKED")
    /// A moderator did not let you in from the lobby (or the session ended while you waited).
    public static let lobbyDenied = SignalErrorCode(rawValue: "ERR_LOBBY_DENIED")
    /// The room has a passcode: missing or wrong.
    public static let passcodeWrong = SignalErrorCode(rawValue: "ERR_PASSCODE")
    /// Too many open WebSockets from this address.
    public static let tooManyConnections = SignalErrorCode(rawValue: "ERR_TOO_MANY_CONNECTIONS")
    /// A `hello` for a user online on as many devices as a user may be.
    public static let tooManyDevices = SignalErrorCode(rawValue: "ERR_TOO_MANY_DEVICES")
    /// The server's (or this user's) limit of rooms at once.
    public static let tooManyRooms = SignalErrorCode(rawValue: "ERR_TOO_MANY_ROOMS")
    /// The connection sent no join, hello or resume in time.
    public static let joinTimeout = SignalErrorCode(rawValue: "ERR_JOIN_TIMEOUT")
    public static let appIdMismatch = SignalErrorCode(rawValue: "AUTH_ERR_APPID_MISMATCH")
    public static let tokenSessionMismatch = SignalErrorCode(rawValue: "AUTH_ERR_TOKEN_SESSION_MISMATCH")
    // Requests
    public static let notFound = SignalErrorCode(rawValue: "ERR_NOT_FOUND")
    public static let resumeExpired = SignalErrorCode(rawValue: "ERR_RESUME_EXPIRED")
    public static let notModerator = SignalErrorCode(rawValue: "ERR_NOT_MODERATOR")
    /// Unmuting yourself after a moderator muted you, in a room where a moderator must allow it.
    public static let mutedByModerator = SignalErrorCode(rawValue: "ERR_MUTED_BY_MODERATOR")
    /// Starting a recording while one runs (or starts).
    public static let alreadyRecording = SignalErrorCode(rawValue: "ERR_ALREADY_RECORDING")
    /// Stopping a recording when none runs.
    public static let notRecording = SignalErrorCode(rawValue: "ERR_NOT_RECORDING")
    /// The recorder could not start (or stopped on its own: a full disk).
    public static let recordingFailed = SignalErrorCode(rawValue: "ERR_RECORDING_FAILED")
    /// Starting a transcription while one runs; stopping one when none runs; the transcriber failed.
    public static let alreadyTranscribing = SignalErrorCode(rawValue: "ERR_ALREADY_TRANSCRIBING")
    public static let notTranscribing = SignalErrorCode(rawValue: "ERR_NOT_TRANSCRIBING")
    public static let transcriptionFailed = SignalErrorCode(rawValue: "ERR_TRANSCRIPTION_FAILED")
    /// No caption model for the language asked for (the message lists those there are).
    public static let languageUnavailable = SignalErrorCode(rawValue: "ERR_LANGUAGE_UNAVAILABLE")
    /// Starting a stream while one runs; stopping one when none runs; the streamer failed (the
    /// Icecast server refused the credentials, or stayed away longer than the retry budget).
    public static let alreadyStreaming = SignalErrorCode(rawValue: "ERR_ALREADY_STREAMING")
    public static let notStreaming = SignalErrorCode(rawValue: "ERR_NOT_STREAMING")
    public static let streamingFailed = SignalErrorCode(rawValue: "ERR_STREAMING_FAILED")
    public static let participantNotFound = SignalErrorCode(rawValue: "ERR_PARTICIPANT_NOT_FOUND")
    public static let featureUnavailable = SignalErrorCode(rawValue: "ERR_FEATURE_UNAVAILABLE")
    /// `setMediaOverSignalling` refused: the room's relay is on another node of the cluster (the
    /// client keeps its media on UDP).
    public static let mediaTunnelUnavailable = SignalErrorCode(rawValue: "ERR_MEDIA_TUNNEL_UNAVAILABLE")
    public static let messageTooLong = SignalErrorCode(rawValue: "ERR_MESSAGE_TOO_LONG")
    /// A chat message in a call that holds `maxChatMessagesPerCall` (10,000) already.
    public static let chatFull = SignalErrorCode(rawValue: "ERR_CHAT_FULL")
    /// A `webrtcOffer` the server cannot answer (not SDP, nothing it speaks, not bundled, no
    /// WebRTC gateway on this server or this node); the message says which.
    public static let webrtcOfferRefused = SignalErrorCode(rawValue: "ERR_WEBRTC_OFFER")
    public static let rateLimited = SignalErrorCode(rawValue: "ERR_RATE_LIMITED")
    public static let roomFull = SignalErrorCode(rawValue: "ERR_ROOM_FULL")
    public static let storage = SignalErrorCode(rawValue: "ERR_STORAGE")
    public static let unavailable = SignalErrorCode(rawValue: "ERR_UNAVAILABLE")
    // Presence and ringing calls
    /// `hello` came with an auth token the server does not know.
    public static let authTokenInvalid = SignalErrorCode(rawValue: "AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
    /// A call message before `hello`.
    public static let notOnline = SignalErrorCode(rawValue: "SIGNAL_HELLO_FIRST")
    public static let callSelf = SignalErrorCode(rawValue: "ERR_CALL_SELF")
    public static let receiverNotFound = SignalErrorCode(rawValue: "ERR_RECEIVER_NOT_FOUND")
    public static let notGroupMember = SignalErrorCode(rawValue: "ERR_NOT_GROUP_MEMBER")
    public static let callNotFound = SignalErrorCode(rawValue: "ERR_CALL_NOT_FOUND")
    /// Only a receiver accepts or rejects, only the initiator cancels, only participants end.
    public static let notAllowed = SignalErrorCode(rawValue: "ERR_CALL_ACTION_NOT_ALLOWED")
    /// The call is no longer ringing for you (answered, rejected, cancelled, timed out, ended).
    public static let callNotRinging = SignalErrorCode(rawValue: "ERR_CALL_NOT_RINGING")
    /// You are in another call already (you cannot start a second).
    public static let alreadyInCall = SignalErrorCode(rawValue: "ERR_ALREADY_IN_CALL")
}

/// The SRTP protection profile a room's media uses: AES-128-GCM (RFC 7714) with a 16-byte tag,
/// the key epoch as a one-byte MKI. The whole RTP header, with its RFC 6464 level extension, is
/// authenticated and left readable, so the relay forwards and ranks speakers without any key.
public enum SRTPProfile: String, Codable, Sendable, Equatable, CaseIterable {
    case aeadAES128GCM = "AEAD_AES_128_GCM"

    /// Key ‖ salt bytes of a master key.
    public var masterKeyLength: Int { 28 }
    /// Bytes protection adds to each packet: the 16-byte tag and the 1-byte MKI.
    public var overhead: Int { 17 }
}

/// One sender's SRTP master key as the server hands it to the room's members over the
/// (TLS) signalling connection: every member gets every other member's current key, and a new
/// epoch for everyone when a member leaves (a leaver cannot read what is said after it left).
public struct WireMediaKey: Codable, Sendable, Equatable {
    /// The sender's SSRC.
    public var ssrc: UInt32
    /// 0…255, carried in each packet as the MKI; rises by one at each rotation (wrapping).
    public var epoch: UInt8
    /// Base64url (no padding) of the master key and salt (`SRTPProfile.masterKeyLength` bytes).
    public var key: String
    /// The sender's video SSRC, protected with the same key (SRTP keeps the SSRCs' streams apart).
    public var videoSsrc: UInt32? = nil
    public init(ssrc: UInt32, epoch: UInt8, key: String, videoSsrc: UInt32? = nil) {
        self.ssrc = ssrc; self.epoch = epoch; self.key = key; self.videoSsrc = videoSsrc
    }
}

/// A caption: one speaker's partial guess (`final` false, replaced by the next with the same
/// `pid` and `id`) or an utterance's final text. `start`/`end` are milliseconds from the
/// transcription's start. The server's transcriber sends these; the server broadcasts them.
public struct WireCaption: Codable, Sendable, Equatable {
    public var tid: String
    public var pid: String
    public var uid: String
    public var name: String
    /// The utterance's number for this speaker (from 1).
    public var id: Int
    public var text: String
    public var final: Bool
    public var start: Int64
    public var end: Int64
    public init(tid: String, pid: String, uid: String, name: String, id: Int, text: String, final: Bool, start: Int64, end: Int64) {
        self.tid = tid; self.pid = pid; self.uid = uid; self.name = name; self.id = id; self.text = text; self.final = final
        self.start = start; self.end = end
    }
}

/// Where the room's live stream is (`streaming.state`): on air, reconnecting to the Icecast
/// server after it dropped, or stopped.
public enum StreamState: String, Codable, Sendable, CaseIterable {
    case live
    case reconnecting
    case stopped
}
