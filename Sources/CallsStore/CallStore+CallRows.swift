import Foundation
import CallsCore
import CallsDatabase

/// The rows a room's or a ring's transition writes, one method per decision, each called by the
/// batch's `apply` inside its transaction under the store lock: which `calls` row a room records
/// into (the call-takeover policy), the name a participant is logged under, a ringing call's
/// rows, and the webhook a room's hook becomes.
extension CallStore {
    /// The `calls` row a room that starts records into:
    /// - a call an unclean shutdown cut, joined again within its reopen window (here or on another
    ///   node), continues;
    /// - the room of an accepted ringing call records into that call's row; with several nodes, so
    ///   does a room whose node died before anyone closed its call (the room was placed here
    ///   because that node is gone) — its participants left at that node's last heartbeat;
    /// - otherwise a new row.
    func openCall(sessionId: String, type: String, mode: String, now: Int64) throws(DatabaseError) -> Int64 {
        let node: DatabaseValue = owner.map { .text($0) } ?? .null
        if let cut = try db.query("""
            SELECT id FROM calls WHERE session_id = ? AND ended_at IS NOT NULL AND reopenable_until >= ? ORDER BY id DESC LIMIT 1
            """, [.text(sessionId), .int(now)]).first?.first?.int {
            try db.execute("""
                UPDATE calls SET status = 'ongoing', ended_at = NULL, reopenable_until = NULL, last_seen_at = ?, node_id = ? WHERE id = ?
                """, [.int(now), node, .int(cut)])
            return cut
        }
        let takeOver = owner == nil ? "mode = 'call'" : "(mode = 'call' OR (node_id IS NOT NULL AND node_id <> ?))"
        if let open = try db.query("""
            SELECT id, node_id, COALESCE(last_seen_at, started_at, initiated_at) FROM calls
            WHERE session_id = ? AND ended_at IS NULL AND \(takeOver) ORDER BY id DESC LIMIT 1
            """, [.text(sessionId)] + (owner.map { [.text($0)] } ?? [])).first, let id = open[0].int {
            if let was = open[1].text, was != owner, let end = open[2].int {
                try db.execute("UPDATE call_participants SET left_at = MAX(joined_at, ?) WHERE call_id = ? AND left_at IS NULL",
                               [.int(end), .int(id)])
            }
            try db.execute("UPDATE calls SET last_seen_at = ?, node_id = ? WHERE id = ?", [.int(now), node, .int(id)])
            return id
        }
        try db.execute("""
            INSERT INTO calls(session_id, type, mode, status, initiated_at, started_at, last_seen_at, node_id)
            VALUES (?, ?, ?, 'ongoing', ?, ?, ?, ?)
            """, [.text(sessionId), .text(type), .text(mode), .int(now), .int(now), .int(now), node])
        return db.lastInsertRowID
    }

    /// The name a participant is logged under: the one they joined with, else the user's, else the uid.
    func participantName(uid: String, displayName: String?) throws(DatabaseError) -> String {
        if let displayName { return displayName }
        return try db.query("SELECT name FROM users WHERE uid = ?", [.text(uid)]).first?.first?.text ?? uid
    }

    /// A ringing call's row and its members' (a receiver found busy makes a call that starts and
    /// ends `busy` in one step).
    func insertRingingCall(_ call: WireCall) throws(DatabaseError) {
        try db.execute("""
            INSERT INTO calls(session_id, type, mode, status, initiated_at, ended_at, last_seen_at, initiator_uid, receiver_id,
                receiver_type, ring_timeout_s) VALUES (?, ?, 'call', ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(call.sessionId), .text(call.type.rawValue), .text(call.status.rawValue), .int(call.initiatedAt),
                  call.endedAt.map { DatabaseValue.int($0) } ?? .null, .int(call.initiatedAt),
                  .text(call.initiator.id), .text(call.receiver.id), .text(call.receiverType.rawValue), .int(Int64(call.timeoutSeconds))])
        let id = db.lastInsertRowID
        for m in call.members {
            try db.execute("INSERT INTO call_members(call_id, uid, outcome, updated_at) VALUES (?, ?, ?, ?)",
                           [.int(id), .text(m.uid), .text(m.outcome.rawValue), .int(call.initiatedAt)])
        }
    }

    /// A ringing call's status moved; when it ended, so did its participants.
    func updateRingingCall(sessionId: String, status: CallStatus, startedAt: Int64?, endedAt: Int64?) throws(DatabaseError) {
        let started: DatabaseValue = startedAt.map { DatabaseValue.int($0) } ?? .null
        let ended: DatabaseValue = endedAt.map { DatabaseValue.int($0) } ?? .null
        try db.execute("""
            UPDATE calls SET status = ?, started_at = COALESCE(?, started_at), ended_at = COALESCE(?, ended_at),
                last_seen_at = COALESCE(?, ?, last_seen_at) WHERE session_id = ? AND mode = 'call'
            """, [.text(status.rawValue), started, ended, ended, started, .text(sessionId)])
        if endedAt != nil {
            try db.execute("""
                UPDATE call_participants SET left_at = ? WHERE left_at IS NULL
                    AND call_id IN (SELECT id FROM calls WHERE session_id = ? AND mode = 'call')
                """, [ended, .text(sessionId)])
        }
    }

    /// A room's hook as the webhook it is (meeting_… for a meet, call_participant_… for a ringing
    /// call's room; a ringing call's start and end are the ring registry's), queued in the same
    /// transaction. Nothing for a participant whose join was never recorded.
    func announce(_ hook: RoomHook, callID: Int64) throws(DatabaseError) {
        guard let mode = try db.query("SELECT mode FROM calls WHERE id = ?", [.int(callID)]).first?.first?.text else { return }
        let ringing = mode == "call"
        let trigger: String
        switch (hook.kind, ringing) {
        case (.started, false): trigger = "meeting_started"
        case (.ended, false): trigger = "meeting_ended"
        case (.joined, false): trigger = "meeting_participant_joined"
        case (.left, false): trigger = "meeting_participant_left"
        case (.joined, true): trigger = "call_participant_joined"
        case (.left, true): trigger = "call_participant_left"
        case (.started, true), (.ended, true): return
        }
        var participant: WebhookOutbox.RoomData.Participant?
        if let uid = hook.uid, let pid = hook.pid {
            guard let name = try db.query("SELECT name FROM call_participants WHERE call_id = ? AND pid = ? ORDER BY id DESC LIMIT 1",
                                          [.int(callID), .text(pid)]).first?.first?.text else { return }
            participant = .init(uid: uid, pid: pid, name: name)
        }
        try insertOutbox(hook.outbox.roomRows(trigger, type: ringing ? "call" : "meet",
                                              data: .init(sessionId: hook.sessionId, participant: participant, at: hook.at), at: hook.at))
    }
}
