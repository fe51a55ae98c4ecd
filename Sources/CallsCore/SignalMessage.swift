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
    /// Asks for a server-side session feature on or off.
    case setSessionFeature(feature: SessionFeature, enabled: Bool)
    /// Moderators: pin a participant for the whole room (nil unpins).
    case pin(pid: String?)
    /// Moderators: mute someone else's microphone.
    case muteParticipant(pid: String)
    /// Moderators: pause someone else's video.
    case pauseParticipantVideo(pid: String)
    /// Moderators: remove someone from the room.
    case removeParticipant(pid: String)
    /// A chat message to the room.
    case chat(text: String)
    /// Receiver report: the share of each sender's packets this client lost recently.
    case receiverReport([LossReport])
    /// Leaves the room; the server answers `left` and closes.
    case leave
    /// Keep-alive; answered by `pong` with the same id.
    case ping(Int)

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
        public init(v: Int = signallingProtocolVersion, callToken: String, sessionId: String? = nil, displayName: String? = nil,
                    audioMuted: Bool = false, videoPaused: Bool = false, sessionType: SignalSessionType = .voice, idleTimeoutSeconds: Int? = nil) {
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
    public init(ssrc: UInt32, lossPercent: Double) { self.ssrc = ssrc; self.lossPercent = lossPercent }
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
    /// A receiver reported losing this share of your packets (tunes your FEC).
    case lossReport(fromPid: String, lossPercent: Double)
    /// You left (or were made to leave); the server closes the connection after this.
    case left(reason: LeaveReason)
    /// A request was refused. `code` is one of the documented error codes.
    case error(code: SignalErrorCode, message: String)
    case pong(Int)

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
        public init(sessionId: String, you: WireParticipant, participants: [WireParticipant], mediaPort: Int, bindToken: String,
                    resumeToken: String? = nil, gracePeriodSeconds: Int? = nil, dominantSpeaker: String? = nil) {
            self.sessionId = sessionId
            self.you = you
            self.participants = participants
            self.mediaPort = mediaPort
            self.bindToken = bindToken
            self.resumeToken = resumeToken
            self.gracePeriodSeconds = gracePeriodSeconds
            self.dominantSpeaker = dominantSpeaker
        }
    }
}

/// A signalling message could not be decoded.
public enum SignalDecodeError: Error, Equatable, Sendable {
    case notJSON
    case missingType
    case unknownType(String)
    case badFields(String)
}

// MARK: - JSON coding

private struct TypeProbe: Decodable { var type: String? }
private struct Flag: Codable { var type: String; var value: Bool }
private struct IdBody: Codable { var type: String; var id: Int }
private struct TypeOnly: Codable { var type: String }
private struct PidBody: Codable { var type: String; var pid: String? }
private struct TextBody: Codable { var type: String; var text: String }
private struct ReportsBody: Codable { var type: String; var reports: [LossReport] }
private struct LossBody: Codable { var type: String; var pid: String; var lossPercent: Double }
private struct TokenBody: Codable { var type: String; var resumeToken: String }
private struct StringValue: Codable { var type: String; var value: String }
private struct FeatureBody: Codable { var type: String; var feature: SessionFeature; var value: Bool }
private struct ParticipantBody: Codable {
    var type: String; var participant: WireParticipant; var change: ParticipantChange?; var reason: LeaveReason?
}
private struct ReasonBody: Codable { var type: String; var reason: LeaveReason }
private struct ErrorBody: Codable { var type: String; var code: SignalErrorCode; var message: String }
private struct Typed<T: Codable>: Codable {
    var type: String
    var body: T
    init(type: String, body: T) { self.type = type; self.body = body }
    enum K: String, CodingKey { case type }
    init(from decoder: Decoder) throws {
        type = try decoder.container(keyedBy: K.self).decode(String.self, forKey: .type)
        body = try T(from: decoder)
    }
    func encode(to encoder: Encoder) throws {
        try body.encode(to: encoder)
        var c = encoder.container(keyedBy: K.self)
        try c.encode(type, forKey: .type)
    }
}

enum SignalJSON {
    static func encode<T: Encodable>(_ v: T) -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own plain structs cannot fail.
        guard let data = try? enc.encode(v) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func decode<T: Decodable>(_ t: T.Type, _ data: Data) throws(SignalDecodeError) -> T {
        do { return try JSONDecoder().decode(t, from: data) } catch { throw .badFields(String(describing: error).prefix(200).description) }
    }

    static func type(of data: Data) throws(SignalDecodeError) -> String {
        guard let probe = try? JSONDecoder().decode(TypeProbe.self, from: data) else { throw .notJSON }
        guard let t = probe.type else { throw .missingType }
        return t
    }
}

extension ClientMessage {
    /// The flag messages and their wire types (`{"type": "...", "value": true}`).
    private static let flags: [String: @Sendable (Bool) -> ClientMessage] = [
        "setAudioMuted": { .setAudioMuted($0) }, "setVideoPaused": { .setVideoPaused($0) },
        "setHandRaised": { .setHandRaised($0) }, "setPresenting": { .setPresenting($0) }, "setRecording": { .setRecording($0) },
    ]

    /// The JSON text of this message.
    public func json() -> String {
        switch self {
        case .join(let j): return SignalJSON.encode(Typed(type: "join", body: j))
        case .resume(let t): return SignalJSON.encode(TokenBody(type: "resume", resumeToken: t))
        case .setAudioMuted(let v): return SignalJSON.encode(Flag(type: "setAudioMuted", value: v))
        case .setVideoPaused(let v): return SignalJSON.encode(Flag(type: "setVideoPaused", value: v))
        case .setHandRaised(let v): return SignalJSON.encode(Flag(type: "setHandRaised", value: v))
        case .setPresenting(let v): return SignalJSON.encode(Flag(type: "setPresenting", value: v))
        case .setRecording(let v): return SignalJSON.encode(Flag(type: "setRecording", value: v))
        case .setCameraFacing(let v): return SignalJSON.encode(StringValue(type: "setCameraFacing", value: v))
        case .setSessionFeature(let f, let v): return SignalJSON.encode(FeatureBody(type: "setSessionFeature", feature: f, value: v))
        case .pin(let pid): return SignalJSON.encode(PidBody(type: "pin", pid: pid))
        case .muteParticipant(let pid): return SignalJSON.encode(PidBody(type: "muteParticipant", pid: pid))
        case .pauseParticipantVideo(let pid): return SignalJSON.encode(PidBody(type: "pauseParticipantVideo", pid: pid))
        case .removeParticipant(let pid): return SignalJSON.encode(PidBody(type: "removeParticipant", pid: pid))
        case .chat(let text): return SignalJSON.encode(TextBody(type: "chat", text: text))
        case .receiverReport(let r): return SignalJSON.encode(ReportsBody(type: "receiverReport", reports: r))
        case .leave: return SignalJSON.encode(TypeOnly(type: "leave"))
        case .ping(let id): return SignalJSON.encode(IdBody(type: "ping", id: id))
        }
    }

    /// Decodes one JSON text frame.
    public init(json data: Data) throws(SignalDecodeError) {
        let type = try SignalJSON.type(of: data)
        if let make = Self.flags[type] {
            self = make(try SignalJSON.decode(Flag.self, data).value)
            return
        }
        func pid() throws(SignalDecodeError) -> String {
            guard let p = try SignalJSON.decode(PidBody.self, data).pid else { throw .badFields("pid is required") }
            return p
        }
        switch type {
        case "join": self = .join(try SignalJSON.decode(Typed<Join>.self, data).body)
        case "resume": self = .resume(token: try SignalJSON.decode(TokenBody.self, data).resumeToken)
        case "setCameraFacing": self = .setCameraFacing(try SignalJSON.decode(StringValue.self, data).value)
        case "setSessionFeature":
            let b = try SignalJSON.decode(FeatureBody.self, data)
            self = .setSessionFeature(feature: b.feature, enabled: b.value)
        case "pin": self = .pin(pid: try SignalJSON.decode(PidBody.self, data).pid)
        case "muteParticipant": self = .muteParticipant(pid: try pid())
        case "pauseParticipantVideo": self = .pauseParticipantVideo(pid: try pid())
        case "removeParticipant": self = .removeParticipant(pid: try pid())
        case "chat": self = .chat(text: try SignalJSON.decode(TextBody.self, data).text)
        case "receiverReport": self = .receiverReport(try SignalJSON.decode(ReportsBody.self, data).reports)
        case "leave": self = .leave
        case "ping": self = .ping(try SignalJSON.decode(IdBody.self, data).id)
        case let other: throw .unknownType(String(other.prefix(64)))
        }
    }
}

extension ServerMessage {
    /// The JSON text of this message.
    public func json() -> String {
        switch self {
        case .joined(let j): return SignalJSON.encode(Typed(type: "joined", body: j))
        case .resumed(let j): return SignalJSON.encode(Typed(type: "resumed", body: j))
        case .participantJoined(let p):
            return SignalJSON.encode(ParticipantBody(type: "participantJoined", participant: p))
        case .participantLeft(let p, let reason):
            return SignalJSON.encode(ParticipantBody(type: "participantLeft", participant: p, reason: reason))
        case .participantUpdated(let p, let change):
            return SignalJSON.encode(ParticipantBody(type: "participantUpdated", participant: p, change: change))
        case .dominantSpeaker(let pid): return SignalJSON.encode(PidBody(type: "dominantSpeaker", pid: pid))
        case .chat(let m): return SignalJSON.encode(Typed(type: "chat", body: m))
        case .lossReport(let pid, let loss): return SignalJSON.encode(LossBody(type: "lossReport", pid: pid, lossPercent: loss))
        case .left(let reason): return SignalJSON.encode(ReasonBody(type: "left", reason: reason))
        case .error(let code, let message): return SignalJSON.encode(ErrorBody(type: "error", code: code, message: message))
        case .pong(let id): return SignalJSON.encode(IdBody(type: "pong", id: id))
        }
    }

    /// Decodes one JSON text frame.
    public init(json data: Data) throws(SignalDecodeError) {
        switch try SignalJSON.type(of: data) {
        case "joined": self = .joined(try SignalJSON.decode(Typed<Joined>.self, data).body)
        case "resumed": self = .resumed(try SignalJSON.decode(Typed<Joined>.self, data).body)
        case "participantJoined": self = .participantJoined(try SignalJSON.decode(ParticipantBody.self, data).participant)
        case "participantLeft":
            let b = try SignalJSON.decode(ParticipantBody.self, data)
            self = .participantLeft(b.participant, reason: b.reason ?? .left)
        case "participantUpdated":
            let b = try SignalJSON.decode(ParticipantBody.self, data)
            guard let change = b.change else { throw .badFields("participantUpdated needs a change") }
            self = .participantUpdated(b.participant, change: change)
        case "dominantSpeaker": self = .dominantSpeaker(pid: try SignalJSON.decode(PidBody.self, data).pid)
        case "chat": self = .chat(try SignalJSON.decode(Typed<ChatMessage>.self, data).body)
        case "lossReport":
            let b = try SignalJSON.decode(LossBody.self, data)
            self = .lossReport(fromPid: b.pid, lossPercent: b.lossPercent)
        case "left": self = .left(reason: try SignalJSON.decode(ReasonBody.self, data).reason)
        case "error":
            let b = try SignalJSON.decode(ErrorBody.self, data)
            self = .error(code: b.code, message: b.message)
        case "pong": self = .pong(try SignalJSON.decode(IdBody.self, data).id)
        case let other: throw .unknownType(String(other.prefix(64)))
        }
    }
}
