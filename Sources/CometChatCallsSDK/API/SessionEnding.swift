import CallsCore

/// CallRoom: how your last session ended, as the server and the connection said
/// (`CallSession.sessionEnding`, set before `onSessionLeft`, `onSessionTimedOut` or
/// `onConnectionClosed` fires). A value; any thread.
public enum SessionEnding: Sendable, Equatable {
    /// You left: `leaveSession()`, the leave button, your app on your behalf.
    case left
    /// A moderator removed you, or the operator banned you (`by`: the moderator's display name
    /// when one did it).
    case removed(by: String?)
    /// The operator deleted your user or revoked your tokens (or the invite you came in with).
    case revoked
    /// Someone else ended the call (`by`: their display name) — the other person in a one-to-one
    /// call hung up. The SDK never infers this; an app that knows says so
    /// (`CallScreenController.leave(because:)`).
    case endedBy(String?)
    /// The other person in a one-to-one call left without ending it — their process died, their
    /// connection did not come back — so the call was ended here (`by`: their display name). An
    /// app's inference, like `endedBy`.
    case peerLeft(String?)
    /// You were alone in the room for the idle timeout.
    case timedOut
    /// The server shut down.
    case serverShutdown
    /// The connection was lost and did not come back within the server's grace period.
    case connectionLost

    /// The server's `left.reason` (with `by`) as an ending; a reason this SDK does not know is
    /// the call ending for a reason of the server's.
    init(reason: LeaveReason, by: String?) {
        switch reason {
        case .left: self = .left
        case .removed: self = .removed(by: by)
        case .revoked: self = .revoked
        case .timedOut: self = .timedOut
        case .serverShuttingDown: self = .serverShutdown
        case .disconnected: self = .connectionLost
        default: self = .endedBy(nil)
        }
    }

    /// One sentence for people: "You left", "You were removed by Grace", "The server shut down".
    public var sentence: String {
        switch self {
        case .left: return "You left"
        case .removed(let by?): return "You were removed by \((DisplayText.name(by, limit: 64) ?? "someone"))"
        case .removed(nil): return "You were removed from the call"
        case .revoked: return "Your access was revoked"
        case .endedBy(let by?): return "\((DisplayText.name(by, limit: 64) ?? "someone")) ended the call"
        case .endedBy(nil): return "The call ended"
        case .peerLeft(let by?): return "\((DisplayText.name(by, limit: 64) ?? "someone")) left the call"
        case .peerLeft(nil): return "The other person left the call"
        case .timedOut: return "You were alone too long: the call timed out"
        case .serverShutdown: return "The server shut down"
        case .connectionLost: return "Connection lost"
        }
    }

    /// A stable word for logs and JSON lines (`left`, `removed`, `revoked`, `ended`, `peerLeft`,
    /// `timedOut`, `serverShutdown`, `connectionLost`).
    public var code: String {
        switch self {
        case .left: return "left"
        case .removed: return "removed"
        case .revoked: return "revoked"
        case .endedBy: return "ended"
        case .peerLeft: return "peerLeft"
        case .timedOut: return "timedOut"
        case .serverShutdown: return "serverShutdown"
        case .connectionLost: return "connectionLost"
        }
    }
}
