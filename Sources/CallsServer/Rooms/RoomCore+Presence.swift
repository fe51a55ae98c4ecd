import CallsCore
import CallsSignalling

// MARK: Reconnection, idle timeout, dominant speaker
extension RoomCore {
    /// A signalling connection closed without `leave`: hold its participant for the grace
    /// period so a `resume` can take it back without peers seeing a leave and a join. One
    /// still joining (its row not yet on disk) simply goes: nobody has heard of it.
    func connectionDropped(_ connection: ConnectionID) {
        if memberDropped(connection) { return }
        if lobbyDropped(connection) { return }
        guard let (sid, pid) = byConnection.removeValue(forKey: connection), let room = rooms[sid],
              var p = room.participants[pid] else { return }
        p.connection = nil
        room.participants[pid] = p
        guard p.admitted else { return leave(session: sid, pid: pid, reason: .disconnected, notifySelf: false) }
        effects.append(.schedule(.grace(session: sid, pid: pid), afterSeconds: limits.gracePeriodSeconds))
        log(.info, "participant connection lost; holding", ["session": sid, "pid": pid, "grace_s": "\(Int(limits.gracePeriodSeconds))"])
    }

    func resume(token: String, connection: ConnectionID) {
        guard byConnection[connection] == nil else {
            return fail(connection, .alreadyJoined, "This connection has joined already.", close: false)
        }
        guard let (sid, pid) = byResumeToken[token], let room = rooms[sid], var p = room.participants[pid], p.admitted else {
            return fail(connection, .resumeExpired, "Nothing to resume: the grace period is over or the token is wrong.", close: true)
        }
        // A client may notice the drop before the server does: retire the old connection quietly.
        if let old = p.connection {
            byConnection[old] = nil
            effects.append(.close(old))
        }
        effects.append(.cancel(.grace(session: sid, pid: pid)))
        p.connection = connection
        byResumeToken[p.resumeToken] = nil
        p.resumeToken = ResumeToken.make(secret: randomHex(24), session: sid)
        p.bindToken = identities.randomBytes(MediaBinding.tokenLength)
        byResumeToken[p.resumeToken] = (sid, pid)
        room.participants[pid] = p
        byConnection[connection] = (sid, pid)
        patchRelay(room)
        send(.resumed(joinedPayload(room, p)), to: connection)
        log(.info, "participant resumed", ["session": sid, "pid": pid])
    }

    func timerFired(_ timer: RoomTimer) {
        switch timer {
        case .grace(let sid, let pid):
            guard let r = rooms[sid], let p = r.participants[pid], p.connection == nil else { return }
            leave(session: sid, pid: pid, reason: .disconnected, notifySelf: false)
        case .memberStart(let sid, let f):
            memberStartTimedOut(sid, f)
        case .idle(let sid):
            guard let r = rooms[sid], r.idleArmed else { return }
            r.idleArmed = false
            guard r.participants.count == 1, let pid = r.order.first else { return }
            log(.info, "idle timeout", ["session": sid, "pid": pid])
            leave(session: sid, pid: pid, reason: .timedOut, notifySelf: true)
        }
    }

    func cancelIdleTimer(_ room: Room) {
        guard room.idleArmed else { return }
        room.idleArmed = false
        effects.append(.cancel(.idle(session: room.sessionId)))
    }

    /// Arms the idle timer when one admitted participant is alone, and disarms it otherwise.
    func rescheduleIdleTimer(_ room: Room) {
        cancelIdleTimer(room)
        guard room.participants.count == 1, let pid = room.order.first, let p = room.participants[pid],
              p.idleTimeoutSeconds > 0 else { return }
        room.idleArmed = true
        effects.append(.schedule(.idle(session: room.sessionId), afterSeconds: Double(p.idleTimeoutSeconds)))
    }

    /// The relay reported a new loudest speaker for a room (nil key: nobody).
    func dominantSpeakerChanged(roomIndex: Int, key: UInt64?) {
        guard let sid = roomsByIndex[roomIndex], let room = rooms[sid] else { return }
        let pid = key.flatMap { k in room.admitted.first(where: { $0.key == k })?.wire.pid }
        guard pid != room.dominant else { return }
        // A muted participant is never the dominant speaker (its last packets, or a client
        // that sends while muted, must not make it so).
        if let p = pid, room.participants[p]?.wire.isAudioMuted == true { return }
        room.dominant = pid
        broadcast(room, .dominantSpeaker(pid: pid))
    }
}
