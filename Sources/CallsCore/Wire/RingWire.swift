import CallsSupport

/// Ringing calls on the wire: who calls whom, and what became of it. Shared by the server and
/// the chat-side SDK (`CometChatSDK`). docs/protocol.md has the state machine.

/// Whom a call rings: one user, or every member of a group.
public enum CallReceiverType: String, Codable, Sendable, CaseIterable {
    case user
    case group
}

/// Audio only, or with video.
public enum CallMediaType: String, Codable, Sendable, CaseIterable {
    case audio
    case video
}

/// A ringing call's status. `initiated` (ringing) → `ongoing` (accepted) → `ended`; or it ends
/// ringing as `unanswered` (timeout), `rejected`, `busy` or `cancelled` (by the initiator).
public enum CallStatus: String, Codable, Sendable, CaseIterable {
    case initiated, ongoing, ended, unanswered, rejected, busy, cancelled

    /// Whether nothing more can happen to the call.
    public var isFinal: Bool { self != .initiated && self != .ongoing }
}

/// What one member of the receiving side did with a call.
public enum CallMemberOutcome: String, Codable, Sendable, CaseIterable {
    case ringing, accepted, rejected, busy, unanswered, cancelled, left
}

/// A person on a call, as the wire names them.
public struct CallPartyWire: Codable, Sendable, Equatable {
    /// A uid, or a guid for a group receiver.
    public var id: String
    public var name: String
    public init(id: String, name: String) { self.id = id; self.name = name }
}

/// One member of the receiving side and their outcome.
public struct CallMemberWire: Codable, Sendable, Equatable {
    public var uid: String
    public var name: String
    public var outcome: CallMemberOutcome
    public init(uid: String, name: String, outcome: CallMemberOutcome) { self.uid = uid; self.name = name; self.outcome = outcome }
}

/// A ringing call as both ends see it. Times are milliseconds since the epoch.
public struct WireCall: Codable, Sendable, Equatable {
    /// The room both ends join once it is accepted.
    public var sessionId: String
    public var initiator: CallPartyWire
    public var receiverType: CallReceiverType
    public var receiver: CallPartyWire
    public var type: CallMediaType
    public var status: CallStatus
    public var members: [CallMemberWire]
    /// Seconds it rings before it is `unanswered`.
    public var timeoutSeconds: Int
    public var initiatedAt: Int64
    /// When it was accepted.
    public var startedAt: Int64?
    public var endedAt: Int64?

    public init(sessionId: String, initiator: CallPartyWire, receiverType: CallReceiverType, receiver: CallPartyWire, type: CallMediaType,
                status: CallStatus, members: [CallMemberWire], timeoutSeconds: Int, initiatedAt: Int64, startedAt: Int64? = nil,
                endedAt: Int64? = nil) {
        self.sessionId = sessionId; self.initiator = initiator; self.receiverType = receiverType; self.receiver = receiver
        self.type = type; self.status = status; self.members = members; self.timeoutSeconds = timeoutSeconds
        self.initiatedAt = initiatedAt; self.startedAt = startedAt; self.endedAt = endedAt
    }
}

/// What a `call` message from the server tells a device.
public enum CallEventKind: String, Codable, Sendable, CaseIterable {
    /// To the initiator's device that asked: the call exists and is ringing.
    case initiated
    /// To every online device of every receiver.
    case incoming
    /// To the initiator and the accepting device (and, in groups, to members already in).
    case accepted
    /// To the initiator: a receiver (the only one, or the last of a group) said no.
    case rejected
    /// To the initiator: the receiver is in another call, or said so.
    case busy
    /// To receivers' devices: the initiator gave up, or another device answered.
    case cancelled
    /// To everyone rung and the initiator: nobody answered in time.
    case unanswered
    /// To every participant: the call is over.
    case ended
}

/// Why a receiver's device stopped ringing (`call` with `cancelled`).
public enum CallCancelReason: String, Codable, Sendable, CaseIterable {
    case cancelledByInitiator
    case answeredElsewhere
    case rejectedElsewhere
    /// The caller went offline while it rang (every device gone, none back within
    /// `RingCore.callerGoneSeconds`): nobody is left to answer to.
    case callerOffline
}
