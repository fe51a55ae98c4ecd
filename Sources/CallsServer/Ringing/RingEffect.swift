import CallsCore
import CallsStore

/// Who a connection speaks for, as the runner read it from the store (`hello`).
struct RingUser: Sendable, Equatable {
    var uid: String
    var name: String
    /// The auth token it said hello with (`tokenId`): revoking that token closes the connection.
    var tokenId: String? = nil
}

/// The receiver of an `initiateCall`, as the runner read it from the store: nil fields when
/// there is no such user or group.
struct RingReceiver: Sendable, Equatable {
    var user: RingUser?
    var group: (guid: String, name: String, members: [RingUser])?

    init(user: RingUser? = nil, group: (guid: String, name: String, members: [RingUser])? = nil) {
        self.user = user
        self.group = group
    }

    static func == (a: RingReceiver, b: RingReceiver) -> Bool {
        a.user == b.user && a.group?.guid == b.group?.guid && a.group?.name == b.group?.name && a.group?.members == b.group?.members
    }
}

/// The store reads the ringing runner makes before it hands a message to the core.
enum RingStoreRead: String, Sendable {
    /// The auth token's user, for `hello`.
    case hello
    /// The receiver (user, or group and its members' names), for `initiateCall`.
    case initiateCall
}

/// What happens to ringing calls; the runner feeds these to `RingCore`.
enum RingInput: Sendable {
    /// `hello`, with the user the auth token belongs to (nil: unknown token).
    case hello(ConnectionID, RingUser?)
    /// `initiateCall`, with its receiver looked up.
    case initiate(ConnectionID, receiverId: String, receiverType: CallReceiverType, type: CallMediaType, timeoutSeconds: Int?,
                  receiver: RingReceiver)
    /// `acceptCall`, `rejectCall`, `endCall`.
    case message(ClientMessage, from: ConnectionID)
    /// The store could not be read to answer `message` (`hello`, `initiateCall`): the client
    /// hears `ERR_STORAGE` (try again), never that its token or receiver does not exist.
    case storeUnavailable(ConnectionID, during: RingStoreRead)
    case connectionClosed(ConnectionID)
    /// A call rang for its whole timeout.
    case timedOut(sessionId: String)
    /// The caller's last device went offline `callerGoneSeconds` ago while their call rang.
    case callerGone(sessionId: String)
    case stored(StoreReceipt)
    /// The room of an accepted call emptied (everyone left): the call is over.
    case roomEnded(sessionId: String)
    /// Calls that were ringing when the server stopped.
    case restore([WireCall])
    /// A user's tokens (or one of them) were revoked: those devices go offline (connections closed).
    case revoked(Revocation)
}

/// What the ring core asks the world to do, in order.
enum RingEffect: Sendable, Equatable {
    case send(ServerMessage, to: ConnectionID)
    /// Closes a connection (its user's tokens were revoked).
    case close(ConnectionID)
    case persist(StoreRequest)
    case schedule(sessionId: String, afterSeconds: Double)
    /// Feed `callerGone` back after the delay (unless the call is over by then: the core checks).
    case scheduleCallerCheck(sessionId: String, afterSeconds: Double)
    case cancel(sessionId: String)
    case event(CallTrigger, WireCall)
    case log(ServerLog.Level, String, [String: String])
}
