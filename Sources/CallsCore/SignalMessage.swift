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
    /// Asks the server to mark this participant's microphone muted or unmuted.
    case setAudioMuted(Bool)
    /// Leaves the room; the server answers `left` and closes.
    case leave
    /// Keep-alive; answered by `pong` with the same id.
    case ping(Int)

    public struct Join: Codable, Sendable, Equatable {
        public var v: Int
        public var callToken: String
        public var displayName: String?
        public var audioMuted: Bool
        public var videoPaused: Bool
        /// `video` or `voice`.
        public var sessionType: String
        public init(v: Int = signallingProtocolVersion, callToken: String, displayName: String? = nil,
                    audioMuted: Bool = false, videoPaused: Bool = false, sessionType: String = "voice") {
            self.v = v
            self.callToken = callToken
            self.displayName = displayName
            self.audioMuted = audioMuted
            self.videoPaused = videoPaused
            self.sessionType = sessionType
        }
    }
}

/// A message from the server to a client over the signalling WebSocket.
public enum ServerMessage: Sendable, Equatable {
    /// The join succeeded: who you are, who is here, and how to reach the media relay.
    case joined(Joined)
    case participantJoined(WireParticipant)
    case participantLeft(WireParticipant, reason: String)
    /// A participant's state changed; `change` names what (`audioMuted`, `audioUnmuted`).
    case participantUpdated(WireParticipant, change: String)
    /// You left (or were made to leave); the server closes the connection after this.
    case left(reason: String)
    /// A request was refused. `code` is one of the documented error codes.
    case error(code: String, message: String)
    case pong(Int)

    public struct Joined: Codable, Sendable, Equatable {
        public var sessionId: String
        public var you: WireParticipant
        public var participants: [WireParticipant]
        /// UDP port of the media relay on the server's host.
        public var mediaPort: Int
        /// Hex of the 16-byte per-join secret for the media bind datagram.
        public var bindToken: String
        public init(sessionId: String, you: WireParticipant, participants: [WireParticipant], mediaPort: Int, bindToken: String) {
            self.sessionId = sessionId
            self.you = you
            self.participants = participants
            self.mediaPort = mediaPort
            self.bindToken = bindToken
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
private struct MutedBody: Codable { var type: String; var muted: Bool }
private struct IdBody: Codable { var type: String; var id: Int }
private struct TypeOnly: Codable { var type: String }
private struct ParticipantBody: Codable { var type: String; var participant: WireParticipant; var change: String?; var reason: String? }
private struct ReasonBody: Codable { var type: String; var reason: String }
private struct ErrorBody: Codable { var type: String; var code: String; var message: String }
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
    /// The JSON text of this message.
    public func json() -> String {
        switch self {
        case .join(let j): return SignalJSON.encode(Typed(type: "join", body: j))
        case .setAudioMuted(let m): return SignalJSON.encode(MutedBody(type: "setAudioMuted", muted: m))
        case .leave: return SignalJSON.encode(TypeOnly(type: "leave"))
        case .ping(let id): return SignalJSON.encode(IdBody(type: "ping", id: id))
        }
    }

    /// Decodes one JSON text frame.
    public init(json data: Data) throws(SignalDecodeError) {
        switch try SignalJSON.type(of: data) {
        case "join": self = .join(try SignalJSON.decode(Typed<Join>.self, data).body)
        case "setAudioMuted": self = .setAudioMuted(try SignalJSON.decode(MutedBody.self, data).muted)
        case "leave": self = .leave
        case "ping": self = .ping(try SignalJSON.decode(IdBody.self, data).id)
        case let other: throw .unknownType(other)
        }
    }
}

extension ServerMessage {
    /// The JSON text of this message.
    public func json() -> String {
        switch self {
        case .joined(let j): return SignalJSON.encode(Typed(type: "joined", body: j))
        case .participantJoined(let p):
            return SignalJSON.encode(ParticipantBody(type: "participantJoined", participant: p))
        case .participantLeft(let p, let reason):
            return SignalJSON.encode(ParticipantBody(type: "participantLeft", participant: p, reason: reason))
        case .participantUpdated(let p, let change):
            return SignalJSON.encode(ParticipantBody(type: "participantUpdated", participant: p, change: change))
        case .left(let reason): return SignalJSON.encode(ReasonBody(type: "left", reason: reason))
        case .error(let code, let message): return SignalJSON.encode(ErrorBody(type: "error", code: code, message: message))
        case .pong(let id): return SignalJSON.encode(IdBody(type: "pong", id: id))
        }
    }

    /// Decodes one JSON text frame.
    public init(json data: Data) throws(SignalDecodeError) {
        switch try SignalJSON.type(of: data) {
        case "joined": self = .joined(try SignalJSON.decode(Typed<Joined>.self, data).body)
        case "participantJoined": self = .participantJoined(try SignalJSON.decode(ParticipantBody.self, data).participant)
        case "participantLeft":
            let b = try SignalJSON.decode(ParticipantBody.self, data)
            self = .participantLeft(b.participant, reason: b.reason ?? "left")
        case "participantUpdated":
            let b = try SignalJSON.decode(ParticipantBody.self, data)
            self = .participantUpdated(b.participant, change: b.change ?? "")
        case "left": self = .left(reason: try SignalJSON.decode(ReasonBody.self, data).reason)
        case "error":
            let b = try SignalJSON.decode(ErrorBody.self, data)
            self = .error(code: b.code, message: b.message)
        case "pong": self = .pong(try SignalJSON.decode(IdBody.self, data).id)
        case let other: throw .unknownType(other)
        }
    }
}
