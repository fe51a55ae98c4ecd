import Dispatch
import CallsCore

// MARK: Participant state and moderation (on the registry's queue)
extension RoomRegistry {
    enum ModerationAction { case mute, pauseVideo, remove }

    /// Changes one participant's state and broadcasts it to the room (them included), unless
    /// nothing changed.
    func update(_ room: Room, _ pid: String, change: ParticipantChange, _ body: (inout WireParticipant) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard var p = room.participants[pid] else { return }
        let before = p.wire
        body(&p.wire)
        guard p.wire != before else { return }
        room.participants[pid] = p
        broadcast(room, .participantUpdated(p.wire, change: change))
    }

    private func requireModerator(_ room: Room, _ pid: String, _ connection: ConnectionID) -> Bool {
        guard room.participants[pid]?.wire.role == .moderator else {
            fail(connection, .notModerator, "Only the session's moderators may do that.", close: false)
            return false
        }
        return true
    }

    func pin(_ room: Room, by pid: String, target: String?, connection: ConnectionID) {
        guard requireModerator(room, pid, connection) else { return }
        if let t = target, room.participants[t] == nil {
            return fail(connection, .participantNotFound, "No participant '\(t.prefix(40))' in this session.", close: false)
        }
        for other in room.order where other != target && room.participants[other]?.wire.isPinned == true {
            update(room, other, change: .unpinned) { $0.isPinned = false }
        }
        if let t = target { update(room, t, change: .pinned) { $0.isPinned = true } }
    }

    func moderate(_ room: Room, by pid: String, target: String, connection: ConnectionID, action: ModerationAction) {
        guard requireModerator(room, pid, connection) else { return }
        guard room.participants[target] != nil else {
            return fail(connection, .participantNotFound, "No participant '\(target.prefix(40))' in this session.", close: false)
        }
        switch action {
        case .mute: update(room, target, change: .audioMuted) { $0.isAudioMuted = true }
        case .pauseVideo: update(room, target, change: .videoPaused) { $0.isVideoPaused = true }
        case .remove:
            log.info("participant removed by moderator", ["session": room.sessionId, "pid": target, "by": pid])
            leave(session: room.sessionId, pid: target, reason: .removed, notifySelf: true)
        }
    }
}
