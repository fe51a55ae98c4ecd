import CallsSupport
import Foundation

/// The signalling protocol version this build speaks. Sent in `join`; the server refuses others.
public let signallingProtocolVersion = 1

/// The WebSocket sub-protocol name for signalling.
public let signallingSubprotocol = "callroom-signal"

/// A message from a client to the server over the signalling WebSocket (JSON text frames,
/// discriminated by `type`). See docs/protocol.md for every message with examples.
public enum ClientMessage: Sendable, Equatable {
    /// First message on a connection: authenticates with a call token and enters the room.
    case join(Join)
    /// First message on a new connection after a drop: takes the held participant back.
    case resume(token: String)
    case setAudioMuted(Bool)
    case setVideoPaused(Bool)
    case setHandRaised(Bool)
    /// Screen share started or stopped.
    case setPresenting(Bool)
    case setRecording(Bool)
    /// `FRONT` or `REAR`.
    case setCameraFacing(String)
    /// Asks for a server-side session feature on or off (`language`: transcription's, BCP 47;
    /// `target`: streaming's Icecast URL, where the server allows sessions to choose).
    case setSessionFeature(feature: SessionFeature, enabled: Bool, language: String? = nil, target: String? = nil)
    /// The server's transcriber: a caption to broadcast (refused from anyone else).
    case caption(WireCaption)
    /// The server's streamer: the stream's state changed (refused from anyone else).
    case streamStatus(state: StreamState, detail: String?)
    /// A server member stops on its own (a full disk, Icecast gone for good): why, for the
    /// moderator's error (refused from anyone else). Its connection closes next.
    case memberStopped(reason: String)
    /// Moderators: pin a participant for the whole room (nil unpins).
    case pin(pid: String?)
    /// Moderators: mute someone else's microphone.
    case muteParticipant(pid: String)
    /// Moderators: let someone they muted unmute themselves (rooms whose `moderatorMute` is
    /// `untilAllowed`; elsewhere they may anyway).
    case allowUnmute(pid: String)
    /// Moderators: pause someone else's video.
    case pauseParticipantVideo(pid: String)
    /// Moderators: remove someone from the room.
    case removeParticipant(pid: String)
    /// A chat message to the room.
    case chat(text: String)
    /// Receiver report: the share of each sender's packets this client lost recently.
    case receiverReport([LossReport])
    /// The participants whose video this client shows (its visible tiles): the relay forwards a
    /// sender's video only to those that subscribed to it. Replaces the previous set.
    case subscribeVideo(pids: [String])
    /// A keyframe is needed from `pid`'s video (frames were lost, or its decoder failed).
    case requestKeyframe(pid: String)
    /// A presenter's shared terminal: what changed (or all of it); refused unless presenting.
    case screenShare(ScreenShareFrame)
    /// UDP to the relay is blocked: carry this participant's media over this connection (binary
    /// frames, one SRTP packet each, both ways) instead; false goes back to UDP.
    case setMediaOverSignalling(Bool)
    /// A browser's session description (WebRTC, JSEP): its media go through the server's WebRTC
    /// gateway; answered by `webrtcAnswer`. Sent again to renegotiate (people joined or left).
    case webrtcOffer(sdp: String)
    /// Leaves the room; the server answers `left` and closes.
    case leave
    /// Moderators: lock the room (no new joins; those inside stay) or unlock it.
    case setRoomLocked(Bool)
    /// Moderators: let someone waiting in the lobby in (`pid` from `lobbyRequest`), or send them away.
    case admitFromLobby(pid: String)
    case denyFromLobby(pid: String)
    /// Moderators: let a user removed from this session join it again (with a new call token).
    case allowRejoin(uid: String)
    /// Moderators: ban a user from the room for good (they leave now), or lift their ban.
    case setBan(uid: String, banned: Bool)
    /// Keep-alive; answered by `pong` with the same id.
    case ping(Int)
    /// Presence: this connection is one of the user's online devices (the user's auth token);
    /// answered by `welcome`, then every call ringing for them.
    case hello(authToken: String)
    /// Rings a user or a group.
    case initiateCall(receiverId: String, receiverType: CallReceiverType, type: CallMediaType, timeoutSeconds: Int?)
    /// A receiver answers.
    case acceptCall(sessionId: String)
    /// A receiver declines (`rejected` or `busy`), or the initiator gives up (`cancelled`).
    case rejectCall(sessionId: String, status: CallStatus)
    /// A participant ends an accepted call.
    case endCall(sessionId: String)

    public struct Join: Codable, Sendable, Equatable {
        public var v: Int
        public var callToken: String
        /// When given, must match the token's session (guards against using the wrong token).
        public var sessionId: String?
        public var displayName: String?
        public var audioMuted: Bool
        public var videoPaused: Bool
        public var sessionType: SignalSessionType
        /// Seconds alone in the room before the server ends your session; 0 never. Default 300.
        public var idleTimeoutSeconds: Int?
        /// The room's passcode, when the operator set one.
        public var passcode: String?
        public init(v: Int = signallingProtocolVersion, callToken: String, sessionId: String? = nil, displayName: String? = nil,
                    audioMuted: Bool = false, videoPaused: Bool = false, sessionType: SignalSessionType = .voice, idleTimeoutSeconds: Int? = nil,
                    passcode: String? = nil) {
            self.passcode = passcode
            self.v = v
            self.callToken = callToken
            self.sessionId = sessionId
            self.displayName = displayName
            self.audioMuted = audioMuted
            self.videoPaused = videoPaused
            self.sessionType = sessionType
            self.idleTimeoutSeconds = idleTimeoutSeconds
        }
    }
}

/// One sender's loss as seen by one receiver.
public struct LossReport: Codable, Sendable, Equatable {
    public var ssrc: UInt32
    /// 0…100.
    public var lossPercent: Double
    /// Video reports: the frames a second this receiver decoded from the sender.
    public var framesPerSecond: Double? = nil
    /// Audio reports: true when this receiver decodes redundant audio (RFC 2198); absent: it does not.
    public var red: Bool? = nil
    /// Audio reports: the longest run of consecutive frames lost on the network since the last
    /// report (repaired or not); absent: not measured.
    public var burst: Int? = nil
    /// Audio reports: the most redundant blocks this receiver accepts in a packet; absent with
    /// `red`: `RedundantAudio.legacyBlocks` (receivers from before bursts were reported).
    public var redBlocks: Int? = nil
    public init(ssrc: UInt32, lossPercent: Double, framesPerSecond: Double? = nil, red: Bool? = nil, burst: Int? = nil, redBlocks: Int? = nil) {
        self.ssrc = ssrc; self.lossPercent = lossPercent; self.framesPerSecond = framesPerSecond; self.red = red
        self.burst = burst; self.redBlocks = redBlocks
    }
}

/// A chat message as the server relays it.
public struct ChatMessage: Codable, Sendable, Equatable {
    public var id: Int64
    public var pid: String
    public var uid: String
    public var name: String
    public var text: String
    /// Milliseconds since the epoch.
    public var sentAt: Int64
    public init(id: Int64, pid: String, uid: String, name: String, text: String, sentAt: Int64) {
        self.id = id; self.pid = pid; self.uid = uid; self.name = name; self.text = text; self.sentAt = sentAt
    }
}

/// A message from the server to a client over the signalling WebSocket.
public enum ServerMessage: Sendable, Equatable {
    /// The join succeeded: who you are, who is here, and how to reach the media relay.
    case joined(Joined)
    /// A `resume` succeeded: the same participant, current roster, fresh media binding.
    case resumed(Joined)
    case participantJoined(WireParticipant)
    case participantLeft(WireParticipant, reason: LeaveReason)
    /// A participant's state changed; `change` names what.
    case participantUpdated(WireParticipant, change: ParticipantChange)
    /// The loudest participant changed (nil: nobody is speaking).
    case dominantSpeaker(pid: String?)
    case chat(ChatMessage)
    /// A receiver reported losing this share of your packets (tunes your FEC), whether it
    /// decodes redundant audio (RFC 2198, `RedundantAudio`), the longest run of your frames it
    /// lost in a row (nil: not said) and how many redundant blocks it accepts (nil: not said).
    case lossReport(fromPid: String, lossPercent: Double, redundancy: Bool, burst: Int? = nil, redBlocks: Int? = nil)
    /// Send a keyframe of your video: `fromPid` subscribed to it or lost frames of it.
    case keyframeRequest(fromPid: String)
    /// A presenter's shared terminal changed (`pid` shares it).
    case screenShare(pid: String, frame: ScreenShareFrame)
    /// A receiver's loss and frame rate of your video (adapts your bitrate and frame rate).
    case videoReport(fromPid: String, lossPercent: Double, framesPerSecond: Double)
    /// The server's recording of the room started (`active`, `by` the moderator who asked) or
    /// stopped; `rid` names it in the call log.
    case recording(active: Bool, by: String?, rid: String?)
    /// The server's transcription of the room started or stopped; captions follow while active.
    case transcription(active: Bool, by: String?, tid: String?, language: String?)
    /// A caption from the transcription (partial or final).
    case caption(WireCaption)
    /// The room's live stream: on air, reconnecting (`detail` says why), stopped.
    case streaming(state: StreamState, by: String?, detail: String?)
    /// Senders' SRTP keys changed: a member joined (its key), or one left (everyone's new epoch,
    /// your own included: switch to it shortly, receivers hold both meanwhile).
    case mediaKeys([WireMediaKey])
    /// The server's answer to a `webrtcOffer` (ICE-lite, DTLS server, one bundle).
    case webrtcAnswer(sdp: String)
    /// You left (or were made to leave); the server closes the connection after this.
    /// `by`: who removed you (their display name), when a moderator did.
    case left(reason: LeaveReason, by: String? = nil)
    /// A request was refused. `code` is one of the documented error codes.
    case error(code: SignalErrorCode, message: String)
    case pong(Int)
    /// Presence accepted: who you are.
    case welcome(uid: String, name: String)
    /// Something happened to a ringing call (`event`); `reason` for `cancelled`.
    case call(event: CallEventKind, call: WireCall, reason: CallCancelReason?)
    /// The room was locked (no new joins) or unlocked, by moderator `by`.
    case roomLocked(Bool, by: String?)
    /// (To someone joining a lobby room) you wait until a moderator lets you in: `joined`
    /// follows, or `error` `ERR_LOBBY_DENIED` and the connection closes.
    case lobbyWaiting
    /// (To moderators) someone waits in the lobby; `participant.pid` names them for
    /// `admitFromLobby` / `denyFromLobby`.
    case lobbyRequest(WireParticipant)
    /// (To moderators) a lobby request is over: admitted, or not (denied, or they went).
    case lobbyResolved(pid: String, admitted: Bool)
    /// (To moderators) the users banned from the room for good, as they come in and on every change.
    case roomBans([String])

    public struct Joined: Codable, Sendable, Equatable {
        public var sessionId: String
        public var you: WireParticipant
        public var participants: [WireParticipant]
        /// UDP port of the media relay on the server's host.
        public var mediaPort: Int
        /// Hex of the 16-byte per-join secret for the media bind datagram.
        public var bindToken: String
        /// Presented in `resume` after a dropped connection (within the grace period).
        public var resumeToken: String?
        /// How long (s) the server holds you after your connection drops.
        public var gracePeriodSeconds: Int?
        /// The current dominant speaker, if any.
        public var dominantSpeaker: String?
        /// The session's invite link at the server's public URL (absent: the address the client used).
        public var inviteLink: String?
        /// The media relay's host to send to (`mediaPublicAddress`: NAT, several interfaces);
        /// absent: the host the client reached signalling at.
        public var mediaHost: String?
        /// How media is protected, your own sending key and every admitted member's.
        public var srtpProfile: SRTPProfile?
        public var mediaKeys: [WireMediaKey]?
        /// The session features this server offers (`setSessionFeature`): recording always,
        /// transcription when it has a caption model, streaming when it has an Icecast target.
        public var features: [SessionFeature]?
        /// True when the room is locked (absent: it is not).
        public var locked: Bool?
        public init(sessionId: String, you: WireParticipant, participants: [WireParticipant], mediaPort: Int, bindToken: String,
                    resumeToken: String? = nil, gracePeriodSeconds: Int? = nil, dominantSpeaker: String? = nil, inviteLink: String? = nil,
                    mediaHost: String? = nil, srtpProfile: SRTPProfile? = nil, mediaKeys: [WireMediaKey]? = nil,
                    features: [SessionFeature]? = nil, locked: Bool? = nil) {
            self.features = features
            self.locked = locked
            self.mediaHost = mediaHost
            self.srtpProfile = srtpProfile
            self.mediaKeys = mediaKeys
            self.sessionId = sessionId
            self.you = you
            self.participants = participants
            self.mediaPort = mediaPort
            self.bindToken = bindToken
            self.resumeToken = resumeToken
            self.gracePeriodSeconds = gracePeriodSeconds
            self.dominantSpeaker = dominantSpeaker
            self.inviteLink = inviteLink
        }
    }
}

/// A signalling message could not be decoded.
public enum SignalDecodeError: Error, Equatable, Sendable {
    case notJSON
    case missingType
    case unknownType(String)
    /// What was wrong, in the terms of the message's fields (`ping: id must be a whole
    /// number.`): told to the client as `SIGNAL_BAD_MESSAGE`'s message.
    case badFields(String)
}

// MARK: - The wire: each message declared once

/// Bodies that sit beside `type` in a message's JSON object.
private struct Flag: Codable, Sendable { var value: Bool }
private struct LockBody: Codable, Sendable { var value: Bool; var pid: String? }
private struct UidBody: Codable, Sendable { var uid: String }
private struct BanBody: Codable, Sendable { var uid: String; var value: Bool }
private struct UidsBody: Codable, Sendable { var uids: [String] }
private struct IdBody: Codable, Sendable { var id: Int }
private struct Empty: Codable, Sendable {}
private struct PidBody: Codable, Sendable { var pid: String? }
private struct RequiredPid: Codable, Sendable { var pid: String }
private struct TextBody: Codable, Sendable { var text: String }
private struct SDPBody: Codable, Sendable { var sdp: String }
private struct ReportsBody: Codable, Sendable { var reports: [LossReport] }
private struct PidsBody: Codable, Sendable { var pids: [String] }
private struct ShareBody: Codable, Sendable { var pid: String?; var frame: ScreenShareFrame }
private struct VideoReportBody: Codable, Sendable { var pid: String; var lossPercent: Double; var framesPerSecond: Double }
private struct LossBody: Codable, Sendable { var pid: String; var lossPercent: Double; var red: Bool?; var burst: Int?; var redBlocks: Int? }
private struct KeysBody: Codable, Sendable { var keys: [WireMediaKey] }
private struct RecordingBody: Codable, Sendable { var active: Bool; var pid: String?; var rid: String? }
private struct ResumeBody: Codable, Sendable { var resumeToken: String }
private struct StringValue: Codable, Sendable { var value: String }
private struct FeatureBody: Codable, Sendable { var feature: SessionFeature; var value: Bool; var language: String?; var target: String? }
private struct TranscriptionBody: Codable, Sendable { var active: Bool; var pid: String?; var tid: String?; var language: String? }
private struct CaptionBody: Codable, Sendable { var caption: WireCaption }
private struct ReasonText: Codable, Sendable { var reason: String }
private struct StreamBody: Codable, Sendable { var state: StreamState; var pid: String?; var detail: String? }
private struct ParticipantBody: Codable, Sendable { var participant: WireParticipant; var change: ParticipantChange?; var reason: LeaveReason? }
private struct ReasonBody: Codable, Sendable { var reason: LeaveReason; var by: String? }
private struct ErrorBody: Codable, Sendable { var code: SignalErrorCode; var message: String }
private struct HelloBody: Codable, Sendable { var authToken: String }
private struct InitiateBody: Codable, Sendable { var receiverId: String; var receiverType: CallReceiverType; var callType: CallMediaType; var timeoutSeconds: Int? }
private struct SessionBody: Codable, Sendable { var sessionId: String }
private struct RejectBody: Codable, Sendable { var sessionId: String; var status: CallStatus }
private struct WelcomeBody: Codable, Sendable { var uid: String; var name: String }
private struct CallBody: Codable, Sendable { var event: CallEventKind; var call: WireCall; var reason: CallCancelReason? }

extension ClientMessage {
    /// Every client message: its `type`, its body, and the case it is. A new message is one
    /// line here (and its case above); `SignalMessageTests` checks every case is covered.
    static let codec = WireCodec<ClientMessage>([
        WireCase("join", Join.self, make: { .join($0) }, match: { if case .join(let j) = $0 { return j }; return nil }),
        WireCase("resume", ResumeBody.self, make: { .resume(token: $0.resumeToken) },
                 match: { if case .resume(let t) = $0 { return ResumeBody(resumeToken: t) }; return nil }),
        WireCase("setAudioMuted", Flag.self, make: { .setAudioMuted($0.value) }, match: { if case .setAudioMuted(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("setVideoPaused", Flag.self, make: { .setVideoPaused($0.value) }, match: { if case .setVideoPaused(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("setHandRaised", Flag.self, make: { .setHandRaised($0.value) }, match: { if case .setHandRaised(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("setPresenting", Flag.self, make: { .setPresenting($0.value) }, match: { if case .setPresenting(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("setRecording", Flag.self, make: { .setRecording($0.value) }, match: { if case .setRecording(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("setCameraFacing", StringValue.self, make: { .setCameraFacing($0.value) },
                 match: { if case .setCameraFacing(let v) = $0 { return StringValue(value: v) }; return nil }),
        WireCase("setSessionFeature", FeatureBody.self, make: { .setSessionFeature(feature: $0.feature, enabled: $0.value, language: $0.language, target: $0.target) },
                 match: { if case .setSessionFeature(let f, let v, let l, let t) = $0 { return FeatureBody(feature: f, value: v, language: l, target: t) }; return nil }),
        WireCase("caption", CaptionBody.self, make: { .caption($0.caption) }, match: { if case .caption(let c) = $0 { return CaptionBody(caption: c) }; return nil }),
        WireCase("streamStatus", StreamBody.self, make: { .streamStatus(state: $0.state, detail: $0.detail) },
                 match: { if case .streamStatus(let s, let d) = $0 { return StreamBody(state: s, detail: d) }; return nil }),
        WireCase("memberStopped", ReasonText.self, make: { .memberStopped(reason: $0.reason) },
                 match: { if case .memberStopped(let r) = $0 { return ReasonText(reason: r) }; return nil }),
        WireCase("pin", PidBody.self, make: { .pin(pid: $0.pid) }, match: { if case .pin(let p) = $0 { return PidBody(pid: p) }; return nil }),
        WireCase("muteParticipant", RequiredPid.self, make: { .muteParticipant(pid: $0.pid) },
                 match: { if case .muteParticipant(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("allowUnmute", RequiredPid.self, make: { .allowUnmute(pid: $0.pid) },
                 match: { if case .allowUnmute(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("pauseParticipantVideo", RequiredPid.self, make: { .pauseParticipantVideo(pid: $0.pid) },
                 match: { if case .pauseParticipantVideo(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("removeParticipant", RequiredPid.self, make: { .removeParticipant(pid: $0.pid) },
                 match: { if case .removeParticipant(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("chat", TextBody.self, make: { .chat(text: $0.text) }, match: { if case .chat(let t) = $0 { return TextBody(text: t) }; return nil }),
        WireCase("receiverReport", ReportsBody.self, make: { .receiverReport($0.reports) },
                 match: { if case .receiverReport(let r) = $0 { return ReportsBody(reports: r) }; return nil }),
        WireCase("subscribeVideo", PidsBody.self, make: { .subscribeVideo(pids: $0.pids) },
                 match: { if case .subscribeVideo(let p) = $0 { return PidsBody(pids: p) }; return nil }),
        WireCase("requestKeyframe", RequiredPid.self, make: { .requestKeyframe(pid: $0.pid) },
                 match: { if case .requestKeyframe(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("screenShare", ShareBody.self, make: { .screenShare($0.frame) },
                 match: { if case .screenShare(let f) = $0 { return ShareBody(pid: nil, frame: f) }; return nil }),
        WireCase("setMediaOverSignalling", Flag.self, make: { .setMediaOverSignalling($0.value) },
                 match: { if case .setMediaOverSignalling(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("webrtcOffer", SDPBody.self, make: { .webrtcOffer(sdp: $0.sdp) }, match: { if case .webrtcOffer(let s) = $0 { return SDPBody(sdp: s) }; return nil }),
        WireCase("leave", Empty.self, make: { _ in .leave }, match: { if case .leave = $0 { return Empty() }; return nil }),
        WireCase("setRoomLocked", Flag.self, make: { .setRoomLocked($0.value) }, match: { if case .setRoomLocked(let v) = $0 { return Flag(value: v) }; return nil }),
        WireCase("admitFromLobby", RequiredPid.self, make: { .admitFromLobby(pid: $0.pid) },
                 match: { if case .admitFromLobby(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("denyFromLobby", RequiredPid.self, make: { .denyFromLobby(pid: $0.pid) },
                 match: { if case .denyFromLobby(let p) = $0 { return RequiredPid(pid: p) }; return nil }),
        WireCase("allowRejoin", UidBody.self, make: { .allowRejoin(uid: $0.uid) }, match: { if case .allowRejoin(let u) = $0 { return UidBody(uid: u) }; return nil }),
        WireCase("setBan", BanBody.self, make: { .setBan(uid: $0.uid, banned: $0.value) },
                 match: { if case .setBan(let u, let b) = $0 { return BanBody(uid: u, value: b) }; return nil }),
        WireCase("ping", IdBody.self, make: { .ping($0.id) }, match: { if case .ping(let id) = $0 { return IdBody(id: id) }; return nil }),
        WireCase("hello", HelloBody.self, make: { .hello(authToken: $0.authToken) },
                 match: { if case .hello(let t) = $0 { return HelloBody(authToken: t) }; return nil }),
        WireCase("initiateCall", InitiateBody.self,
                 make: { .initiateCall(receiverId: $0.receiverId, receiverType: $0.receiverType, type: $0.callType, timeoutSeconds: $0.timeoutSeconds) },
                 match: { if case .initiateCall(let r, let rt, let t, let s) = $0 { return InitiateBody(receiverId: r, receiverType: rt, callType: t, timeoutSeconds: s) }; return nil }),
        WireCase("acceptCall", SessionBody.self, make: { .acceptCall(sessionId: $0.sessionId) },
                 match: { if case .acceptCall(let s) = $0 { return SessionBody(sessionId: s) }; return nil }),
        WireCase("rejectCall", RejectBody.self, make: { .rejectCall(sessionId: $0.sessionId, status: $0.status) },
                 match: { if case .rejectCall(let s, let st) = $0 { return RejectBody(sessionId: s, status: st) }; return nil }),
        WireCase("endCall", SessionBody.self, make: { .endCall(sessionId: $0.sessionId) },
                 match: { if case .endCall(let s) = $0 { return SessionBody(sessionId: s) }; return nil }),
    ])

    /// The JSON text of this message.
    public func json() -> String { Self.codec.encode(self) }

    /// Decodes one JSON text frame.
    public init(json data: Data) throws(SignalDecodeError) { self = try Self.codec.decode(data) }
}

extension ServerMessage {
    /// Every server message, declared once (as `ClientMessage.codec`).
    static let codec = WireCodec<ServerMessage>([
        WireCase("joined", Joined.self, make: { .joined($0) }, match: { if case .joined(let j) = $0 { return j }; return nil }),
        WireCase("resumed", Joined.self, make: { .resumed($0) }, match: { if case .resumed(let j) = $0 { return j }; return nil }),
        WireCase("participantJoined", ParticipantBody.self, make: { .participantJoined($0.participant) },
                 match: { if case .participantJoined(let p) = $0 { return ParticipantBody(participant: p) }; return nil }),
        WireCase("participantLeft", ParticipantBody.self, make: { .participantLeft($0.participant, reason: $0.reason ?? .left) },
                 match: { if case .participantLeft(let p, let r) = $0 { return ParticipantBody(participant: p, reason: r) }; return nil }),
        WireCase("participantUpdated", ParticipantBody.self, make: { b in b.change.map { .participantUpdated(b.participant, change: $0) } },
                 match: { if case .participantUpdated(let p, let c) = $0 { return ParticipantBody(participant: p, change: c) }; return nil }),
        WireCase("dominantSpeaker", PidBody.self, make: { .dominantSpeaker(pid: $0.pid) },
                 match: { if case .dominantSpeaker(let p) = $0 { return PidBody(pid: p) }; return nil }),
        WireCase("chat", ChatMessage.self, make: { .chat($0) }, match: { if case .chat(let m) = $0 { return m }; return nil }),
        WireCase("lossReport", LossBody.self, make: { .lossReport(fromPid: $0.pid, lossPercent: $0.lossPercent, redundancy: $0.red ?? false,
                                                                 burst: $0.burst, redBlocks: $0.redBlocks) },
                 match: { if case .lossReport(let p, let l, let r, let b, let n) = $0 { return LossBody(pid: p, lossPercent: l, red: r ? true : nil, burst: b, redBlocks: n) }; return nil }),
        WireCase("keyframeRequest", PidBody.self, make: { $0.pid.map { .keyframeRequest(fromPid: $0) } },
                 match: { if case .keyframeRequest(let p) = $0 { return PidBody(pid: p) }; return nil }),
        WireCase("screenShare", ShareBody.self, make: { b in b.pid.map { .screenShare(pid: $0, frame: b.frame) } },
                 match: { if case .screenShare(let p, let f) = $0 { return ShareBody(pid: p, frame: f) }; return nil }),
        WireCase("videoReport", VideoReportBody.self, make: { .videoReport(fromPid: $0.pid, lossPercent: $0.lossPercent, framesPerSecond: $0.framesPerSecond) },
                 match: { if case .videoReport(let p, let l, let f) = $0 { return VideoReportBody(pid: p, lossPercent: l, framesPerSecond: f) }; return nil }),
        WireCase("recording", RecordingBody.self, make: { .recording(active: $0.active, by: $0.pid, rid: $0.rid) },
                 match: { if case .recording(let a, let p, let r) = $0 { return RecordingBody(active: a, pid: p, rid: r) }; return nil }),
        WireCase("transcription", TranscriptionBody.self, make: { .transcription(active: $0.active, by: $0.pid, tid: $0.tid, language: $0.language) },
                 match: { if case .transcription(let a, let p, let t, let l) = $0 { return TranscriptionBody(active: a, pid: p, tid: t, language: l) }; return nil }),
        WireCase("caption", CaptionBody.self, make: { .caption($0.caption) }, match: { if case .caption(let c) = $0 { return CaptionBody(caption: c) }; return nil }),
        WireCase("streaming", StreamBody.self, make: { .streaming(state: $0.state, by: $0.pid, detail: $0.detail) },
                 match: { if case .streaming(let s, let p, let d) = $0 { return StreamBody(state: s, pid: p, detail: d) }; return nil }),
        WireCase("mediaKeys", KeysBody.self, make: { .mediaKeys($0.keys) }, match: { if case .mediaKeys(let k) = $0 { return KeysBody(keys: k) }; return nil }),
        WireCase("webrtcAnswer", SDPBody.self, make: { .webrtcAnswer(sdp: $0.sdp) }, match: { if case .webrtcAnswer(let s) = $0 { return SDPBody(sdp: s) }; return nil }),
        WireCase("left", ReasonBody.self, make: { .left(reason: $0.reason, by: $0.by) },
                 match: { if case .left(let r, let by) = $0 { return ReasonBody(reason: r, by: by) }; return nil }),
        WireCase("error", ErrorBody.self, make: { .error(code: $0.code, message: $0.message) },
                 match: { if case .error(let c, let m) = $0 { return ErrorBody(code: c, message: m) }; return nil }),
        WireCase("pong", IdBody.self, make: { .pong($0.id) }, match: { if case .pong(let id) = $0 { return IdBody(id: id) }; return nil }),
        WireCase("welcome", WelcomeBody.self, make: { .welcome(uid: $0.uid, name: $0.name) },
                 match: { if case .welcome(let u, let n) = $0 { return WelcomeBody(uid: u, name: n) }; return nil }),
        WireCase("call", CallBody.self, make: { .call(event: $0.event, call: $0.call, reason: $0.reason) },
                 match: { if case .call(let e, let c, let r) = $0 { return CallBody(event: e, call: c, reason: r) }; return nil }),
        WireCase("roomLocked", LockBody.self, make: { .roomLocked($0.value, by: $0.pid) },
                 match: { if case .roomLocked(let v, let p) = $0 { return LockBody(value: v, pid: p) }; return nil }),
        WireCase("lobbyWaiting", Empty.self, make: { _ in .lobbyWaiting }, match: { if case .lobbyWaiting = $0 { return Empty() }; return nil }),
        WireCase("lobbyRequest", ParticipantBody.self, make: { .lobbyRequest($0.participant) },
                 match: { if case .lobbyRequest(let p) = $0 { return ParticipantBody(participant: p) }; return nil }),
        WireCase("roomBans", UidsBody.self, make: { .roomBans($0.uids) }, match: { if case .roomBans(let u) = $0 { return UidsBody(uids: u) }; return nil }),
        WireCase("lobbyResolved", LockBody.self, make: { b in b.pid.map { .lobbyResolved(pid: $0, admitted: b.value) } },
                 match: { if case .lobbyResolved(let p, let a) = $0 { return LockBody(value: a, pid: p) }; return nil }),
    ])

    /// The JSON text of this message.
    public func json() -> String { Self.codec.encode(self) }

    /// Decodes one JSON text frame.
    public init(json data: Data) throws(SignalDecodeError) { self = try Self.codec.decode(data) }

    /// Whether this message tells a connection it is in: authenticated into a room (`joined`,
    /// `resumed`) or as a user (`welcome`). Only these end a connection's join timeout.
    public var authenticates: Bool {
        switch self {
        case .joined, .resumed, .welcome, .lobbyWaiting: return true
        default: return false
        }
    }

    /// `authenticates` of a message already encoded (one relayed from another node).
    public static func authenticates(json: String) -> Bool {
        guard let t = try? SignalJSON.type(of: Data(json.utf8)) else { return false }
        return t == "joined" || t == "resumed" || t == "welcome" || t == "lobbyWaiting"
    }
}
