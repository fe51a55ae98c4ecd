import CallsCore
import Foundation

/// The families of client messages; each has one handler behind the router.
package enum SignalFamily: Hashable, Sendable {
    /// Joining, leaving and everything inside a room.
    case room
    /// Not about any room: keep-alives, and a user's presence (`hello`).
    case presence
    /// Ringing calls: initiate, accept, reject, end.
    case calls
}

extension ClientMessage {
    /// The family that handles this message.
    package var family: SignalFamily {
        switch self {
        case .ping, .hello: return .presence
        case .initiateCall, .acceptCall, .rejectCall, .endCall: return .calls
        case .join, .resume, .setAudioMuted, .setVideoPaused, .setHandRaised, .setPresenting, .setRecording, .setCameraFacing,
             .setSessionFeature, .pin, .muteParticipant, .allowUnmute, .pauseParticipantVideo, .removeParticipant, .chat, .receiverReport, .setMediaOverSignalling, .webrtcOffer, .leave,
             .subscribeVideo, .requestKeyframe, .screenShare, .setRoomLocked, .admitFromLobby, .denyFromLobby, .allowRejoin, .setBan,
             .caption, .streamStatus, .memberStopped:
            return .room
        }
    }
}

/// Handles one family of signalling messages. Called from the router (any thread); the
/// handler confines its own state (the room registry hops onto its queue).
package protocol SignalHandler: AnyObject, Sendable {
    func received(_ message: ClientMessage, from connection: ConnectionID)
    /// The connection closed; every handler hears it.
    func connectionClosed(_ connection: ConnectionID)
}

/// Where every inbound signalling message goes: one seam between the transport and the
/// components behind it, keyed by message family. `LocalSignalRouter` serves one node;
/// `ClusterSignalRouter` (CallsCluster) wraps it (LiveKit's `pkg/routing` is the model).
package protocol SignalRouter: AnyObject, Sendable {
    func received(_ message: ClientMessage, from connection: ConnectionID)
    /// A frame that did not decode; answered with the matching error code.
    func rejected(_ error: SignalDecodeError, from connection: ConnectionID)
    func connectionClosed(_ connection: ConnectionID)
}

/// The single-node router: applies the per-connection signalling rate limit to every message,
/// answers keep-alives itself, and hands each family to its handler.
///
/// Thread rules: any thread; its own state (rate limiters) is behind a lock.
package final class LocalSignalRouter: SignalRouter, Sendable {
    private let outbox: any SignalOutbox
    private let handlers: [SignalFamily: any SignalHandler]
    /// Each connection's message budget: `signalBurst` at once, refilled at `signalPerSecond`.
    private let signalBurst: Double
    private let signalPerSecond: Double
    private let limiters = Locked<[ConnectionID: RateLimiter]>([:])

    package init(outbox: any SignalOutbox, signalBurst: Double, signalPerSecond: Double, handlers: [SignalFamily: any SignalHandler]) {
        self.outbox = outbox
        self.signalBurst = signalBurst
        self.signalPerSecond = signalPerSecond
        self.handlers = handlers
    }

    package func received(_ message: ClientMessage, from connection: ConnectionID) {
        guard admit(connection) else { return }
        dispatch(message, from: connection)
    }

    /// Hands an admitted message to its family's handler (keep-alives answered here).
    package func dispatch(_ message: ClientMessage, from connection: ConnectionID) {
        switch message.family {
        case .presence:
            if case .ping(let id) = message { return outbox.send(.pong(id), to: connection) }
        case .room, .calls:
            break
        }
        guard let h = handlers[message.family] else {
            return outbox.send(.error(code: .unknownType, message: "Nothing on this server handles that message."), to: connection)
        }
        h.received(message, from: connection)
    }

    package func rejected(_ error: SignalDecodeError, from connection: ConnectionID) {
        guard admit(connection) else { return }
        let (code, text): (SignalErrorCode, String)
        switch error {
        case .unknownType(let t): (code, text) = (.unknownType, "Unknown message type '\(t.prefix(40))'.")
        case .notJSON: (code, text) = (.badMessage, "The message is not a JSON object.")
        case .missingType: (code, text) = (.badMessage, "The message has no type.")
        case .badFields(let why): (code, text) = (.badMessage, why)
        }
        outbox.send(.error(code: code, message: text), to: connection)
    }

    package func connectionClosed(_ connection: ConnectionID) {
        limiters.withLock { $0[connection] = nil }
        remoteConnectionClosed(connection)
    }

    /// A connection of another node closed (the rate limiter of this node never had it).
    package func remoteConnectionClosed(_ connection: ConnectionID) {
        var told = Set<ObjectIdentifier>()
        for h in handlers.values where told.insert(ObjectIdentifier(h)).inserted { h.connectionClosed(connection) }
    }

    /// Per-connection signalling rate limit; each refusal is reported.
    package func admit(_ connection: ConnectionID) -> Bool {
        let ok = limiters.withLock { all -> Bool in
            var l = all[connection] ?? RateLimiter(capacity: signalBurst, perSecond: signalPerSecond)
            let ok = l.allow(now: monotonicNanoseconds())
            all[connection] = l
            return ok
        }
        if !ok { outbox.send(.error(code: .rateLimited, message: "Too many messages; slow down."), to: connection) }
        return ok
    }
}
