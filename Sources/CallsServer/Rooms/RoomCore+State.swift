import CallsCore

// MARK: Participant state and moderation
extension RoomCore {
    enum ModerationAction { case mute, pauseVideo, remove, allowUnmute }

    /// Changes one admitted participant's state and broadcasts it to the room (them
    /// included), unless nothing changed.
    func update(_ room: Room, _ pid: String, change: ParticipantChange, _ body: (inout WireParticipant) -> Void) {
        guard var p = room.participants[pid], p.admitted else { return }
        let before = p.wire
        body(&p.wire)
        guard p.wire != before else { return }
        room.participants[pid] = p
        broadcast(room, .participantUpdated(p.wire, change: change))
        if p.wire.role == .moderator && before.role != .moderator { persist([.participantModerates(p.ref)], .background("moderator")) }
        // The relay stops (and restarts) forwarding a paused camera.
        if p.wire.isVideoPaused != before.isVideoPaused { patchRelay(room) }
        if !p.wire.isPresenting { room.shares[pid] = nil; room.shareBytes[pid] = nil }  // a share ends with presenting
    }

    /// A moderator's action on `target` in `room` (or an attempt refused with `result`), for the audit log.
    func audit(_ room: Room, by pid: String, _ action: String, target: String, result: String = "ok") {
        let uid = room.participants[pid]?.wire.uid ?? "?"
        let targetUID = (room.participants[target]?.wire.uid).map { "\($0)/" } ?? ""
        effects.append(.audit(AuditEntry(actor: "uid:\(uid)", action: action, target: "\(room.sessionId) \(targetUID)\(target)", result: result)))
    }

    /// Lets `uid`, removed from session `sid`, back in (and the invites they came in with).
    func liftRemoval(_ sid: String, _ uid: String) {
        sessionBans[sid]?.remove(uid)
        for g in removedGrants[sid]?.removeValue(forKey: uid) ?? [] { sessionBans[sid]?.remove(Self.grantBanKey(g)) }
    }

    /// A moderator lets a removed user join again (with a new call token).
    func allowRejoin(_ room: Room, _ uid: String, by pid: String, connection: ConnectionID) {
        guard requireModerator(room, pid, connection) else {
            return audit(room, by: pid, "allow rejoin", target: uid, result: SignalErrorCode.notModerator.rawValue)
        }
        guard sessionBans[room.sessionId]?.contains(uid) == true else {
            return fail(connection, .participantNotFound, "'\(uid.prefix(100))' was not removed from this session.", close: false)
        }
        audit(room, by: pid, "allow rejoin", target: uid)
        liftRemoval(room.sessionId, uid)
        log(.info, "removal lifted by a moderator", ["session": room.sessionId, "uid": uid, "by": pid])
    }

    /// A moderator bans a user from the room for good, or lifts it (the runner stores it).
    func setBan(_ room: Room, _ uid: String, banned: Bool, by pid: String, connection: ConnectionID) {
        guard requireModerator(room, pid, connection) else {
            return audit(room, by: pid, banned ? "ban" : "lift ban", target: uid, result: SignalErrorCode.notModerator.rawValue)
        }
        guard !uid.isEmpty, uid.count <= 100, uid != room.participants[pid]?.wire.uid else {
            return fail(connection, .badMessage, "Ban someone else's uid (1–100 characters).", close: false)
        }
        audit(room, by: pid, banned ? "ban" : "lift ban", target: uid)
        effects.append(.setBan(session: room.sessionId, uid: uid, banned: banned))
    }

    /// Whether `pid` moderates `room`; if not, says so (`ERR_NOT_MODERATOR`: "… may `what`").
    func requireModerator(_ room: Room, _ pid: String, _ connection: ConnectionID, to what: String = "do that") -> Bool {
        guard room.participants[pid]?.wire.role == .moderator else {
            fail(connection, .notModerator, "Only the session's moderators may \(what).", close: false)
            return false
        }
        return true
    }

    private func admittedTarget(_ room: Room, _ target: String, _ connection: ConnectionID) -> Bool {
        guard room.participants[target]?.admitted == true else {
            fail(connection, .participantNotFound, "No participant '\(target.prefix(40))' in this session.", close: false)
            return false
        }
        return true
    }

    func pin(_ room: Room, by pid: String, target: String?, connection: ConnectionID) {
        guard requireModerator(room, pid, connection) else { return audit(room, by: pid, "pin", target: target ?? "", result: SignalErrorCode.notModerator.rawValue) }
        audit(room, by: pid, target == nil ? "unpin" : "pin", target: target ?? "")
        if let t = target, !admittedTarget(room, t, connection) { return }
        for other in room.order where other != target && room.participants[other]?.wire.isPinned == true {
            update(room, other, change: .unpinned) { $0.isPinned = false }
        }
        if let t = target { update(room, t, change: .pinned) { $0.isPinned = true } }
    }

    func moderate(_ room: Room, by pid: String, target: String, connection: ConnectionID, action: ModerationAction) {
        guard requireModerator(room, pid, connection) else { return audit(room, by: pid, "\(action)", target: target, result: SignalErrorCode.notModerator.rawValue) }
        guard admittedTarget(room, target, connection) else { return audit(room, by: pid, "\(action)", target: target, result: SignalErrorCode.participantNotFound.rawValue) }
        audit(room, by: pid, "\(action)", target: target)
        switch action {
        case .mute:
            let holds = roomRules.moderatorMute(room.sessionId) == .untilAllowed
            update(room, target, change: .audioMuted) { $0.isAudioMuted = true; if holds { $0.mutedByModerator = true } }
            // Enforced, not asked: the relay stops forwarding them, whether their client obeys or not.
            room.participants[target]?.serverMuted = true
            if holds, let p = room.participants[target] {
                room.participants[target]?.unmuteHeld = true
                heldMutes[room.sessionId, default: []].insert(p.wire.uid)
            }
            patchRelay(room)
        case .allowUnmute:
            guard let p = room.participants[target], p.unmuteHeld else { return }
            room.participants[target]?.unmuteHeld = false
            heldMutes[room.sessionId]?.remove(p.wire.uid)
            update(room, target, change: .unmuteAllowed) { $0.mutedByModerator = nil }
        case .pauseVideo: update(room, target, change: .videoPaused) { $0.isVideoPaused = true }
        case .remove:
            log(.info, "participant removed by moderator", ["session": room.sessionId, "pid": target, "by": pid])
            // Their token stays out of this session until it expires; they, with any token, until the session ends.
            if let t = room.participants[target] {
                removedTokens[room.sessionId, default: [:]][t.tokenID] = t.tokenExpires
                sessionBans[room.sessionId, default: []].insert(t.wire.uid)
                // …and the invite they came in with lets nobody else in for them.
                if let g = t.grantID {
                    sessionBans[room.sessionId, default: []].insert(Self.grantBanKey(g))
                    removedGrants[room.sessionId, default: [:]][t.wire.uid, default: []].insert(g)
                }
            }
            leave(session: room.sessionId, pid: target, reason: .removed, by: room.participants[pid]?.wire.name, notifySelf: true)
        }
    }
}
