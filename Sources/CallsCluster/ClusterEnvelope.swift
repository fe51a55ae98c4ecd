import CallsCore
import CallsStore
import Foundation

/// What one node tells another over Redis pub/sub (channel `callroom:signal:{node}`): a
/// client's message forwarded to the node that handles it (the room's, or the ringing node),
/// the answers sent back to the node holding the client's socket, and the socket's end either way. The signalling
/// messages inside travel as their own JSON text, unchanged. A value; any thread.
package enum ClusterEnvelope: Equatable, Sendable {
    /// A client's message from `from` (a connection the sending node holds), for the node that
    /// handles it: a room message for the room's node, presence and ringing for the ringing node.
    case forward(from: ConnectionID, message: String)
    /// A server message for the receiver's connection `local`.
    case toClient(local: UInt64, message: String)
    /// The room closes the receiver's connection `local`.
    case close(local: UInt64)
    /// The sender's connection `from` closed.
    case closed(from: ConnectionID)
    /// A room ended on the sending node (for the ringing node: an accepted call's room emptied).
    case roomEnded(session: String)
    /// The operator revoked `uid`'s tokens on the sending node (issued before `notBefore`, epoch
    /// seconds): every node ends their sessions and refuses those tokens.
    case revoked(uid: String, notBefore: Int64)
    /// The operator revoked one auth token of `uid` (`id`: its `tokenId`) on the sending node:
    /// every node closes what it opened and refuses the call tokens it minted.
    case revokedAuthToken(uid: String, id: String)
    /// The operator (or its maker) revoked invite `id` on the sending node: every node ends the
    /// participants who came in with it and refuses its call tokens.
    case revokedInvite(id: String)
    /// The operator replaced `session`'s rules on the sending node (nil: it has none now): every
    /// node uses them from its next join on (the passcode travels hashed, as stored).
    /// `lifted`: the operator also lifted that user's removal from the live session.
    case roomRules(session: String, rules: RoomRules?, lifted: String? = nil)

    /// The channel a node reads.
    package static func channel(of node: String) -> String { "callroom:signal:" + node }

    private enum Kind: String, Codable { case forward, toClient = "client", close, closed, roomEnded, revoked, revokedAuthToken = "revokedToken", revokedInvite, roomRules = "rules" }
    private struct Wire: Codable {
        package var k: Kind
        package var node: String?
        package var local: UInt64
        package var m: String?
        package var at: Int64? = nil
        package var rules: RoomRules? = nil
        package var lifted: String? = nil
    }

    package func encoded() -> [UInt8] {
        let w: Wire
        switch self {
        case .forward(let c, let m): w = Wire(k: .forward, node: c.node, local: c.local, m: m)
        case .toClient(let l, let m): w = Wire(k: .toClient, local: l, m: m)
        case .close(let l): w = Wire(k: .close, local: l)
        case .closed(let c): w = Wire(k: .closed, node: c.node, local: c.local)
        case .roomEnded(let session): w = Wire(k: .roomEnded, local: 0, m: session)
        case .revoked(let uid, let nb): w = Wire(k: .revoked, local: 0, m: uid, at: nb)
        case .revokedAuthToken(let uid, let id): w = Wire(k: .revokedAuthToken, local: 0, m: uid, lifted: id)
        case .revokedInvite(let id): w = Wire(k: .revokedInvite, local: 0, m: id)
        case .roomRules(let session, let rules, let lifted): w = Wire(k: .roomRules, local: 0, m: session, rules: rules, lifted: lifted)
        }
        return (try? Array(JSONEncoder().encode(w))) ?? []
    }

    /// Nil for bytes that are not an envelope (another version, or junk on the channel).
    package init?(_ bytes: [UInt8]) {
        guard let w = try? JSONDecoder().decode(Wire.self, from: Data(bytes)) else { return nil }
        switch w.k {
        case .forward:
            guard let n = w.node, let m = w.m else { return nil }
            self = .forward(from: ConnectionID(node: n, local: w.local), message: m)
        case .toClient:
            guard let m = w.m else { return nil }
            self = .toClient(local: w.local, message: m)
        case .close: self = .close(local: w.local)
        case .closed:
            guard let n = w.node else { return nil }
            self = .closed(from: ConnectionID(node: n, local: w.local))
        case .roomEnded:
            guard let m = w.m else { return nil }
            self = .roomEnded(session: m)
        case .revoked:
            guard let m = w.m, let at = w.at else { return nil }
            self = .revoked(uid: m, notBefore: at)
        case .revokedAuthToken:
            guard let m = w.m, let id = w.lifted else { return nil }
            self = .revokedAuthToken(uid: m, id: id)
        case .revokedInvite:
            guard let m = w.m else { return nil }
            self = .revokedInvite(id: m)
        case .roomRules:
            guard let m = w.m else { return nil }
            self = .roomRules(session: m, rules: w.rules, lifted: w.lifted)
        }
    }
}
