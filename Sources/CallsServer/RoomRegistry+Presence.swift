import CallsCore
import CallsSecurity
import Foundation

// MARK: Reconnection, idle timeout, dominant speaker (on the registry's queue)
extension RoomRegistry {
    /// A signalling connection closed without `leave`: hold its participant for the grace
    /// period so a `resume` can take it back without peers seeing a leave and a join.
    func connectionDropped(_ connection: ConnectionID) {
        guard let (sid, pid) = byConnection.removeValue(forKey: connection), let room = rooms[sid],
              var p = room.participants[pid] else { return }
        p.connection = nil
        p.grace = scheduler.schedule(after: limits.gracePeriodSeconds, on: queue) { [weak self] in
            guard let self, let r = self.rooms[sid], r.participants[pid]?.connection == nil else { return }
            self.leave(session: sid, pid: pid, reason: .disconnected, notifySelf: false)
        }
        room.participants[pid] = p
        log.info("participant connection lost; holding", ["session": sid, "pid": pid, "grace_s": "\(Int(limits.gracePeriodSeconds))"])
    }

    func resume(token: String, connection: ConnectionID) {
        guard byConnection[connection] == nil else {
            return fail(connection, .alreadyJoined, "This connection has joined already.", close: false)
        }
        guard let (sid, pid) = byResumeToken[token], let room = rooms[sid], var p = room.participants[pid] else {
            return fail(connection, .resumeExpired, "Nothing to resume: the grace period is over or the token is wrong.", close: true)
        }
        // A client may notice the drop before the server does: retire the old connection quietly.
        if let old = p.connection {
            byConnection[old] = nil
            outboxRef?.close(old)
        }
        p.grace?.cancel()
        p.grace = nil
        p.connection = connection
        byResumeToken[p.resumeToken] = nil
        p.resumeToken = Crypto.randomHex(24)
        p.bindToken = Crypto.randomBytes(MediaBinding.tokenLength)
        byResumeToken[p.resumeToken] = (sid, pid)
        room.participants[pid] = p
        byConnection[connection] = (sid, pid)
        publishRelayTable()
        outboxRef?.send(.resumed(joinedPayload(room, p)), to: connection)
        log.info("participant resumed", ["session": sid, "pid": pid])
    }

    /// Arms the idle timer when one participant is left alone, and disarms it otherwise.
    func rescheduleIdleTimer(_ room: Room) {
        room.idleTimer?.cancel()
        room.idleTimer = nil
        guard room.participants.count == 1, let pid = room.order.first, let p = room.participants[pid],
              p.idleTimeoutSeconds > 0 else { return }
        let sid = room.sessionId
        room.idleTimer = scheduler.schedule(after: Double(p.idleTimeoutSeconds), on: queue) { [weak self] in
            guard let self, let r = self.rooms[sid], r.participants.count == 1, r.participants[pid] != nil else { return }
            self.log.info("idle timeout", ["session": sid, "pid": pid])
            self.leave(session: sid, pid: pid, reason: .timedOut, notifySelf: true)
        }
    }

    /// The relay reported a new loudest speaker for a room (nil key: nobody).
    func dominantSpeakerChanged(roomIndex: Int, key: UInt64?) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let sid = roomsByIndex[roomIndex], let room = rooms[sid] else { return }
        let pid = key.flatMap { k in room.participants.first(where: { $0.value.key == k })?.key }
        guard pid != room.dominant else { return }
        // A muted participant is never the dominant speaker (its last packets, or a client
        // that sends while muted, must not make it so).
        if let p = pid, room.participants[p]?.wire.isAudioMuted == true { return }
        room.dominant = pid
        broadcast(room, .dominantSpeaker(pid: pid))
    }
}
