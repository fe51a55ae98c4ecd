import CallsCore
import CallsSecurity

/// Locked rooms and the lobby (#34). A moderator locks a room (no new joins) and unlocks it;
/// in a room whose access is `lobby`, a joiner who is not invited waits — told `lobbyWaiting`
/// (the SDK: "waiting for the host") — while every moderator is told `lobbyRequest`; a
/// moderator's `admitFromLobby` lets them in (the usual join follows), `denyFromLobby` sends
/// them away (`ERR_LOBBY_DENIED`). A waiting joiner holds no pid, no media, no row.
extension RoomCore {
    /// Someone waiting to be let in.
    struct Waiting {
        /// Who they are, as moderators see them (`pid` is the request's id).
        var wire: WireParticipant
        var claims: CallTokenClaims
        var join: ClientMessage.Join
        var tokenID: String
        var connection: ConnectionID
    }

    /// The most who may wait in one room's lobby at once.
    static let maxLobby = 50

    func wait(in room: Room, claims: CallTokenClaims, join j: ClientMessage.Join, tokenID: String, connection: ConnectionID) {
        guard room.lobby.count < Self.maxLobby else {
            return fail(connection, .roomFull, "\(Self.maxLobby) people are waiting to join this session already.", close: true)
        }
        let pid = randomHex(6)
        let name = j.displayName.flatMap { DisplayText.name($0) } ?? claims.sub
        let wire = WireParticipant(uid: claims.sub, name: name, pid: pid, ssrc: 0, role: .participant,
                                   isAudioMuted: j.audioMuted, isVideoPaused: j.videoPaused, joinedAt: now)
        room.lobby[pid] = Waiting(wire: wire, claims: claims, join: j, tokenID: tokenID, connection: connection)
        room.lobbyOrder.append(pid)
        lobbyByConnection[connection] = (room.sessionId, pid)
        send(.lobbyWaiting, to: connection)
        for m in moderators(room) { send(.lobbyRequest(wire), to: m) }
        log(.info, "waiting in the lobby", ["session": room.sessionId, "uid": claims.sub, "pid": pid])
    }

    /// The connections of the room's admitted moderators.
    func moderators(_ room: Room) -> [ConnectionID] {
        room.admitted.filter { $0.wire.role == .moderator }.compactMap(\.connection)
    }

    /// What a moderator is told as they come in: everyone waiting now.
    func lobbyRequests(_ room: Room, to connection: ConnectionID) {
        for pid in room.lobbyOrder { if let w = room.lobby[pid] { send(.lobbyRequest(w.wire), to: connection) } }
    }

    func admitFromLobby(_ room: Room, by pid: String, waiting: String, admit: Bool, connection: ConnectionID) {
        guard requireModerator(room, pid, connection, to: "let people in") else {
            return audit(room, by: pid, admit ? "admit" : "deny", target: waiting, result: SignalErrorCode.notModerator.rawValue)
        }
        guard let w = takeWaiting(room, waiting) else {
            return fail(connection, .participantNotFound, "Nobody '\(waiting.prefix(40))' is waiting in the lobby.", close: false)
        }
        audit(room, by: pid, admit ? "admit" : "deny", target: "\(w.wire.uid)/\(waiting)")
        for m in moderators(room) { send(.lobbyResolved(pid: waiting, admitted: admit), to: m) }
        if admit {
            guard room.participants.count < limits.maxParticipants else {
                return fail(w.connection, .roomFull, "The session already has \(limits.maxParticipants) participants.", close: true)
            }
            enter(room, claims: w.claims, join: w.join, tokenID: w.tokenID, connection: w.connection)
        } else {
            fail(w.connection, .lobbyDenied, "A moderator did not let you in.", close: true)
        }
    }

    /// Removes a waiting joiner from the lobby (and their connection's entry).
    func takeWaiting(_ room: Room, _ pid: String) -> Waiting? {
        guard let w = room.lobby.removeValue(forKey: pid) else { return nil }
        room.lobbyOrder.removeAll { $0 == pid }
        lobbyByConnection[w.connection] = nil
        return w
    }

    /// A waiting joiner's connection closed: they leave the lobby (moderators hear).
    func lobbyDropped(_ connection: ConnectionID) -> Bool {
        guard let (sid, pid) = lobbyByConnection[connection], let room = rooms[sid], takeWaiting(room, pid) != nil else { return false }
        for m in moderators(room) { send(.lobbyResolved(pid: pid, admitted: false), to: m) }
        dropRoomIfEmpty(room)
        return true
    }

    /// The session ends with people still waiting: they are told, and go.
    func closeLobby(_ room: Room, reason: String) {
        for pid in room.lobbyOrder {
            guard let w = takeWaiting(room, pid) else { continue }
            fail(w.connection, .lobbyDenied, reason, close: true)
        }
    }

    /// A room nobody is in or waiting for goes (a lobby room before its host came).
    func dropRoomIfEmpty(_ room: Room) {
        guard room.participants.isEmpty, room.lobby.isEmpty, room.call == nil, rooms[room.sessionId] === room else { return }
        cancelIdleTimer(room)
        rooms[room.sessionId] = nil
        roomsByIndex[room.index] = nil
    }

    func setLocked(_ room: Room, _ locked: Bool, by pid: String, connection: ConnectionID) {
        guard requireModerator(room, pid, connection, to: "lock or unlock it") else {
            return audit(room, by: pid, locked ? "lock" : "unlock", target: "", result: SignalErrorCode.notModerator.rawValue)
        }
        audit(room, by: pid, locked ? "lock" : "unlock", target: "")
        guard room.locked != locked else { return }
        room.locked = locked
        broadcast(room, .roomLocked(locked, by: pid))
        log(.info, locked ? "session locked" : "session unlocked", ["session": room.sessionId, "by": pid])
    }
}
