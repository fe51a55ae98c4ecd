/// The limits the room registry enforces; each refusal has a documented error code.
public struct RoomLimits: Sendable, Equatable {
    /// Participants per room (`ERR_ROOM_FULL`).
    public var maxParticipants = 50
    /// Characters in one chat message (`ERR_MESSAGE_TOO_LONG`).
    public var maxChatCharacters = 2000
    /// Chat messages: burst and sustained rate per participant (`ERR_RATE_LIMITED`).
    public var chatBurst = 5.0
    public var chatPerSecond = 1.0
    /// Chat messages one call keeps (`ERR_CHAT_FULL` past it): each is a row, and a call may
    /// run for days at the rate above times its participants.
    public var maxChatMessagesPerCall = 10_000
    /// Joins one user may make in one call (`ERR_RATE_LIMITED` past it), and all of a call's
    /// joins (`ERR_ROOM_FULL`; at least ten times `maxParticipants`): each join is a row of the
    /// call's log and a `participantJoined` to everyone in it — one call token rejoining in a
    /// loop made 18 a second, for as long as the call ran. (A `resume` is no new join.)
    public var maxJoinsPerUserPerCall = 100
    public var maxJoinsPerCall = 10_000
    /// Times one call may start each server feature — recording, transcription, streaming
    /// (`ERR_RATE_LIMITED` past it): each start is a row of the call's log with its files, and
    /// a moderator's start/stop loop made two a second for as long as the call ran.
    public var maxFeatureStartsPerCall = 100
    /// Signalling messages: burst and sustained rate per connection (`ERR_RATE_LIMITED`).
    public var signalBurst = 100.0
    public var signalPerSecond = 50.0
    /// How long a participant whose connection dropped is held for `resume`.
    public var gracePeriodSeconds = 30.0
    /// Idle timeout when the client does not say (seconds; 0 = never).
    public var defaultIdleTimeoutSeconds = 300
    /// Rooms at once on this server, and rooms one user may be in at once (`ERR_TOO_MANY_ROOMS`).
    public var maxRooms = 10_000
    public var maxRoomsPerUser = 10

    public init() {}
}
