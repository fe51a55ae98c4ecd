import CallsCore
import CallsRelay
import CallsSecurity
import CallsStore

/// What happens to the rooms: a message, a closed connection, a timer, the relay's speaker
/// tracker, a store receipt, the heartbeat, shutdown. The runner feeds these to `RoomCore`.
enum RoomInput: Sendable {
    case message(ClientMessage, from: ConnectionID)
    case connectionClosed(ConnectionID)
    case timerFired(RoomTimer)
    /// The relay's new loudest speaker for a room (its index; nil key: nobody).
    case dominantSpeaker(room: Int, key: UInt64?)
    case stored(StoreReceipt)
    /// Time to mark live calls as live in the store.
    case heartbeat
    /// Everyone leaves (server shutdown).
    case shutdown(LeaveReason)
    /// A user's tokens were revoked (or the user deleted): they leave every room.
    case revoked(Revocation)
    /// The operator changed a room's rules: the banned leave it; `liftedBan`, a removal from
    /// the live session lifted, lets that uid back in.
    case rulesChanged(session: String, liftedBan: String?)
    /// A crash cut these sessions' recordings: each starts again when a moderator is back in
    /// it (within `RoomCore.recordingResumeSeconds`).
    case resumeRecordings([String])
    /// The server could not start a room's member (a full quota, no model for the language).
    case memberFailed(session: String, feature: SessionFeature, id: String, code: SignalErrorCode?, reason: String)
}

/// A timer the core asks for; scheduling one that is pending replaces it.
enum RoomTimer: Hashable, Sendable {
    /// A dropped participant's hold for `resume`.
    case grace(session: String, pid: String)
    /// A participant alone in the room.
    case idle(session: String)
    /// A server member that has not joined by now failed to start.
    case memberStart(session: String, feature: SessionFeature)
}

/// What the core asks the world to do, in order. The runner does it; tests read it.
enum RoomEffect: Sendable, Equatable {
    case send(ServerMessage, to: ConnectionID)
    case close(ConnectionID)
    /// A durable write; its receipt comes back as `RoomInput.stored`.
    case persist(StoreRequest)
    /// One room's new media membership.
    case relay(RelayPatch)
    case schedule(RoomTimer, afterSeconds: Double)
    case cancel(RoomTimer)
    case log(ServerLog.Level, String, [String: String])
    /// A moderator's action (or a refused attempt at one), for the audit log.
    case audit(AuditEntry)
    /// A moderator banned `uid` from room `session` for good, or lifted it: the operator's bans
    /// (kept with the room's rules, on every node), as `PUT`/`DELETE /v3/rooms/{sid}/bans/{uid}`.
    case setBan(session: String, uid: String, banned: Bool)
    /// The room emptied and its call ended (a ringing call's room: the call is over).
    case roomEnded(session: String)
    /// Start a server member for a room: it joins with this call token (its feature's role).
    case startMember(MemberLaunch)
    /// A browser's offer for the WebRTC gateway to answer (its participant is tunnelled already).
    case webrtcOffer(WebRTCOfferRequest)
}

/// What the WebRTC gateway needs to answer a browser's offer: whose it is, the participant's
/// native key (its SSRCs), every other admitted member's key and who they are (the senders the
/// browser may receive), and the offer.
struct WebRTCOfferRequest: Sendable, Equatable {
    struct Sender: Sendable, Equatable {
        var pid: String
        var key: WireMediaKey
    }
    var connection: ConnectionID
    /// The participant's tunnel id in the relay (`RoomCore.tunnel(of:)`): the leg's key.
    var tunnel: UInt64
    var session: String
    var pid: String
    var ownKey: WireMediaKey
    var senders: [Sender]
    var sdp: String
}

/// Where the core's fresh ids and secrets come from (random; fixed in tests if they need).
struct RoomIdentities: Sendable {
    var randomBytes: @Sendable (Int) -> [UInt8]
    static let random = RoomIdentities(randomBytes: { Crypto.randomBytes($0) })
}

/// What a server member needs to start: its feature, room, id (`rec_…`, `tr_…`, `st_…`), call
/// token, and transcription's language.
struct MemberLaunch: Sendable, Equatable {
    var feature: SessionFeature
    var session: String
    var id: String
    var callToken: String
    var language: String?
    /// Streaming: the session's own Icecast URL, when its settings gave one.
    var target: String?
}
