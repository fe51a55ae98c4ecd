import CallsCore
import CallsDatabase

/// A call as the rooms know it before (and after) the store gives it a row: the store writer
/// maps each reference to its row id.
package struct CallRef: Hashable, Sendable {
    package var value: UInt64
    package init(value: UInt64) { self.value = value }
}

/// A participant's row in a call, the same way.
package struct ParticipantRef: Hashable, Sendable {
    package var value: UInt64
    package init(value: UInt64) { self.value = value }
}

/// One durable write the rooms ask for. Names are wire-independent (the calls table's values).
package enum StoreCommand: Sendable, Equatable {
    case startCall(CallRef, sessionId: String, type: String, mode: String, at: Int64)
    /// The participant's name is `displayName`, else the user's stored name, else the uid; the
    /// receipt carries the name used.
    case participantJoined(ParticipantRef, call: CallRef, uid: String, pid: String, displayName: String?, at: Int64)
    case participantLeft(ParticipantRef, at: Int64)
    /// The participant is (or became) a moderator of the call.
    case participantModerates(ParticipantRef)
    /// The receipt carries the message's id.
    case chat(call: CallRef, uid: String, pid: String, name: String, text: String, at: Int64)
    case endCall(CallRef, at: Int64)
    /// Marks calls as still live (a crash loses at most one heartbeat of end time).
    case heartbeat([CallRef], at: Int64)
    /// A ringing call begins: its row (mode `call`, status `initiated`) and one row per member.
    case ringStarted(WireCall)
    /// A ringing call's status changed (with the time of that transition).
    case ringStatus(sessionId: String, status: CallStatus, startedAt: Int64?, endedAt: Int64?)
    /// One member's outcome.
    case ringMember(sessionId: String, uid: String, outcome: CallMemberOutcome, at: Int64)
    /// Webhook deliveries of this transition (in its transaction: none is lost, none is sent
    /// for a transition that did not commit).
    case outbox([OutboxRow])
    /// Webhook deliveries of a room event; the writer names the trigger from the call's mode
    /// (`meeting_*` for a meeting, `call_participant_*` in a ringing call's room) and the
    /// participant's name from this request's join.
    case roomHook(RoomHook)
    /// Pushes to users' phones (one row per registered token; in this transaction, like webhooks).
    case push([PushEvent])
    /// The server's recorder joined the call: its recording's row (files come when it finishes).
    case recordingStarted(rid: String, call: CallRef, sessionId: String, at: Int64)
    /// The server's transcriber joined the call: its transcript's row (the end comes when it finishes).
    case transcriptionStarted(tid: String, call: CallRef, language: String, at: Int64)
}

/// A room event for webhooks (`StoreCommand.roomHook`).
package struct RoomHook: Sendable, Equatable {
    package enum Kind: String, Sendable { case started, joined, left, ended }
    package var kind: Kind
    package var call: CallRef
    package var sessionId: String
    package var uid: String?
    package var pid: String?
    package var at: Int64
    package var outbox: WebhookOutbox
    package init(kind: Kind, call: CallRef, sessionId: String, uid: String? = nil, pid: String? = nil, at: Int64, outbox: WebhookOutbox) {
        self.kind = kind
        self.call = call
        self.sessionId = sessionId
        self.uid = uid
        self.pid = pid
        self.at = at
        self.outbox = outbox
    }
}

/// Commands that succeed or fail together (one savepoint in the writer's batch transaction).
package struct StoreRequest: Sendable, Equatable {
    package var id: UInt64
    package var commands: [StoreCommand]
    package init(id: UInt64, commands: [StoreCommand]) {
        self.id = id
        self.commands = commands
    }
}

/// What became of a request, once its batch committed (or failed).
package struct StoreReceipt: Sendable, Equatable {
    package struct Output: Sendable, Equatable {
        /// The name a `participantJoined` recorded.
        package var name: String?
        /// The id of a `chat` message.
        package var chatID: Int64?
    }

    package var id: UInt64
    package var result: Result<Output, StoreFailure>
}

/// Why a request was not written (the database's error, for the log), and whether it was a full
/// disk (said as such to the client).
package struct StoreFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String
    package var diskFull = false

    package init(description: String, diskFull: Bool = false) {
        self.description = description
        self.diskFull = diskFull
    }

    package init(_ error: DatabaseError) { self.init(description: error.description, diskFull: error.isFull) }
}
