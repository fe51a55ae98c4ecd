import CallsCore
import CallsSecurity

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
    case revoked(uid: String)
    /// The server could not start a room's recorder (a full quota, a directory it cannot make).
    case recorderFailed(session: String, rid: String, reason: String)
}

/// A timer the core asks for; scheduling one that is pending replaces it.
enum RoomTimer: Hashable, Sendable {
    /// A dropped participant's hold for `resume`.
    case grace(session: String, pid: String)
    /// A participant alone in the room.
    case idle(session: String)
    /// A recorder that has not joined by now failed to start.
    case recorderStart(session: String)
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
    /// The room emptied and its call ended (a ringing call's room: the call is over).
    case roomEnded(session: String)
    /// Start the server's recorder for a room: it joins with this call token (role `recorder`).
    case startRecorder(session: String, rid: String, callToken: String)
}

/// Where the core's fresh ids and secrets come from (random; fixed in tests if they need).
struct RoomIdentities: Sendable {
    var randomBytes: @Sendable (Int) -> [UInt8]
    static let random = RoomIdentities(randomBytes: { Crypto.randomBytes($0) })
}
