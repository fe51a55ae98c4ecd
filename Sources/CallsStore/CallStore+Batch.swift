import Foundation
import CallsCore
import CallsDatabase

/// Row ids behind the rooms' references. Owned by the store writer (its queue only).
package struct StoreRefs: Sendable {
    package var calls: [CallRef: Int64] = [:]
    package var participants: [ParticipantRef: Int64] = [:]

    /// Changes not yet committed, over committed refs: a value is a row id, or nil for
    /// "removed". Small (one request's or one batch's), so nothing copies the whole map.
    package struct Overlay {
        package var calls: [CallRef: Int64?] = [:]
        package var participants: [ParticipantRef: Int64?] = [:]

        package mutating func merge(_ o: Overlay) {
            calls.merge(o.calls) { $1 }
            participants.merge(o.participants) { $1 }
        }
    }

    package mutating func merge(_ o: Overlay) {
        for (k, v) in o.calls { calls[k] = v }
        for (k, v) in o.participants { participants[k] = v }
    }
}

/// Committed refs seen through the batch's and the request's uncommitted changes.
private struct RefView {
    package var batch: StoreRefs.Overlay
    package var request = StoreRefs.Overlay()

    package func call(_ r: CallRef, _ committed: borrowing StoreRefs) -> Int64? {
        if let v = request.calls[r] { return v }
        if let v = batch.calls[r] { return v }
        return committed.calls[r]
    }

    package func participant(_ r: ParticipantRef, _ committed: borrowing StoreRefs) -> Int64? {
        if let v = request.participants[r] { return v }
        if let v = batch.participants[r] { return v }
        return committed.participants[r]
    }
}

extension CallStore {
    /// Writes `requests` in one transaction, each inside its own savepoint: a failing request
    /// is rolled back alone and reported; the others commit together (one fsync for the batch).
    /// A failed commit fails them all. `refs` changes only by what committed.
    package func commit(_ requests: [StoreRequest], refs: inout StoreRefs) -> [StoreReceipt] {
        guard !requests.isEmpty else { return [] }
        var receipts: [StoreReceipt] = []
        var batch = StoreRefs.Overlay()
        do throws(DatabaseError) {
            try locked { () throws(DatabaseError) in
                try db.transaction { () throws(DatabaseError) in
                    for r in requests {
                        try db.execute("SAVEPOINT request")
                        var view = RefView(batch: batch)
                        do throws(DatabaseError) {
                            let out = try apply(r.commands, committed: refs, refs: &view)
                            try db.execute("RELEASE request")
                            batch.merge(view.request)
                            receipts.append(StoreReceipt(id: r.id, result: .success(out)))
                        } catch {
                            try db.execute("ROLLBACK TO request")
                            try db.execute("RELEASE request")
                            metrics.requestFailures.add(1, ordering: .relaxed)
                            receipts.append(StoreReceipt(id: r.id, result: .failure(StoreFailure(description: error.description))))
                        }
                    }
                }
            }
            refs.merge(batch)
            metrics.batches.add(1, ordering: .relaxed)
            metrics.batchedRequests.add(UInt64(requests.count), ordering: .relaxed)
            return receipts
        } catch {
            metrics.requestFailures.add(UInt64(requests.count), ordering: .relaxed)
            return requests.map { StoreReceipt(id: $0.id, result: .failure(StoreFailure(description: error.description))) }
        }
    }

    /// One request's commands (inside the batch transaction, under the store lock).
    private func apply(_ commands: [StoreCommand], committed: borrowing StoreRefs, refs: inout RefView) throws(DatabaseError) -> StoreReceipt.Output {
        var out = StoreReceipt.Output()
        for c in commands {
            switch c {
            case let .recordingStarted(rid, call, sessionId, now):
                guard let callID = refs.call(call, committed) else { throw DatabaseError.step(message: "the call was not recorded") }
                try db.execute("INSERT INTO recordings(rid, call_id, session_id, started_at) VALUES (?, ?, ?, ?)",
                               [.text(rid), .int(callID), .text(sessionId), .int(now)])
            case let .transcriptionStarted(tid, call, language, now):
                guard let callID = refs.call(call, committed) else { throw DatabaseError.step(message: "the call was not recorded") }
                let meta = (try? String(decoding: JSONEncoder().encode(["language": language]), as: UTF8.self)) ?? "{}"
                try db.execute("INSERT INTO transcripts(call_id, tid, start_time, end_time, url, meta) VALUES (?, ?, ?, 0, '', ?)",
                               [.int(callID), .text(tid), .int(now), .text(meta)])
            case let .startCall(ref, sessionId, type, mode, now):
                let node: DatabaseValue = owner.map { .text($0) } ?? .null
                // A call an unclean shutdown cut continues when its session is joined again soon (here or on another node).
                if let cut = try db.query("""
                    SELECT id FROM calls WHERE session_id = ? AND ended_at IS NOT NULL AND reopenable_until >= ? ORDER BY id DESC LIMIT 1
                    """, [.text(sessionId), .int(now)]).first?.first?.int {
                    try db.execute("""
                        UPDATE calls SET status = 'ongoing', ended_at = NULL, reopenable_until = NULL, last_seen_at = ?, node_id = ? WHERE id = ?
                        """, [.int(now), node, .int(cut)])
                    refs.request.calls[ref] = cut
                    continue
                }
                // The room of an accepted ringing call records into that call's row; with several
                // nodes, so does a room whose node died before anyone closed its call (the room was
                // placed here because that node is gone): its participants left at its last heartbeat.
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
                    refs.request.calls[ref] = id
                    continue
                }
                try db.execute("""
                    INSERT INTO calls(session_id, type, mode, status, initiated_at, started_at, last_seen_at, node_id)
                    VALUES (?, ?, ?, 'ongoing', ?, ?, ?, ?)
                    """, [.text(sessionId), .text(type), .text(mode), .int(now), .int(now), .int(now), node])
                refs.request.calls[ref] = db.lastInsertRowID
            case let .participantJoined(ref, call, uid, pid, displayName, now):
                guard let callID = refs.call(call, committed) else { throw DatabaseError.step(message: "the call was not recorded") }
                var name = uid
                if let d = displayName {
                    name = d
                } else if let stored = try db.query("SELECT name FROM users WHERE uid = ?", [.text(uid)]).first?.first?.text {
                    name = stored
                }
                try db.execute("INSERT INTO call_participants(call_id, uid, pid, name, joined_at) VALUES (?, ?, ?, ?, ?)",
                               [.int(callID), .text(uid), .text(pid), .text(name), .int(now)])
                refs.request.participants[ref] = db.lastInsertRowID
                out.name = name
            case let .participantLeft(ref, now):
                guard let row = refs.participant(ref, committed) else { continue }  // its join was not recorded
                refs.request.participants[ref] = .some(nil)
                try db.execute("UPDATE call_participants SET left_at = ? WHERE id = ? AND left_at IS NULL", [.int(now), .int(row)])
            case let .participantModerates(ref):
                guard let row = refs.participant(ref, committed) else { continue }
                try db.execute("UPDATE call_participants SET moderated = 1 WHERE id = ?", [.int(row)])
            case let .chat(call, uid, pid, name, text, now):
                guard let callID = refs.call(call, committed) else { throw DatabaseError.step(message: "the call was not recorded") }
                try db.execute("INSERT INTO chat_messages(call_id, uid, pid, name, text, sent_at) VALUES (?, ?, ?, ?, ?, ?)",
                               [.int(callID), .text(uid), .text(pid), .text(name), .text(text), .int(now)])
                out.chatID = db.lastInsertRowID
            case let .endCall(ref, now):
                guard let id = refs.call(ref, committed) else { continue }
                refs.request.calls[ref] = .some(nil)
                try db.execute("UPDATE call_participants SET left_at = ? WHERE call_id = ? AND left_at IS NULL", [.int(now), .int(id)])
                try db.execute("UPDATE calls SET status = 'ended', ended_at = ?, last_seen_at = ? WHERE id = ?",
                               [.int(now), .int(now), .int(id)])
            case let .ringStarted(call):
                // (A receiver found busy makes a call that starts and ends `busy` in one step.)
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
            case let .ringStatus(sessionId, status, startedAt, endedAt):
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
            case let .ringMember(sessionId, uid, outcome, now):
                try db.execute("""
                    UPDATE call_members SET outcome = ?, updated_at = ?
                    WHERE uid = ? AND call_id IN (SELECT id FROM calls WHERE session_id = ? AND mode = 'call')
                    """, [.text(outcome.rawValue), .int(now), .text(uid), .text(sessionId)])
            case .outbox(let rows):
                try insertOutbox(rows)
            case .push(let events):
                for e in events { try insertPushes(e) }
            case .roomHook(let hook):
                guard let callID = refs.call(hook.call, committed),
                      let mode = try db.query("SELECT mode FROM calls WHERE id = ?", [.int(callID)]).first?.first?.text else { continue }
                let ringing = mode == "call"
                let trigger: String
                switch (hook.kind, ringing) {
                case (.started, false): trigger = "meeting_started"
                case (.ended, false): trigger = "meeting_ended"
                case (.joined, false): trigger = "meeting_participant_joined"
                case (.left, false): trigger = "meeting_participant_left"
                case (.joined, true): trigger = "call_participant_joined"
                case (.left, true): trigger = "call_participant_left"
                case (.started, true), (.ended, true): continue  // the ring registry sends call_started / call_ended
                }
                var participant: WebhookOutbox.RoomData.Participant?
                if let uid = hook.uid, let pid = hook.pid {
                    // No row: the join was never recorded, so nobody heard of it joining or leaving.
                    guard let name = try db.query("SELECT name FROM call_participants WHERE call_id = ? AND pid = ? ORDER BY id DESC LIMIT 1",
                                                  [.int(callID), .text(pid)]).first?.first?.text else { continue }
                    participant = .init(uid: uid, pid: pid, name: name)
                }
                try insertOutbox(hook.outbox.roomRows(trigger, type: ringing ? "call" : "meet",
                                                      data: .init(sessionId: hook.sessionId, participant: participant, at: hook.at), at: hook.at))
            case let .heartbeat(calls, now):
                for ref in calls {
                    guard let id = refs.call(ref, committed) else { continue }
                    try db.execute("UPDATE calls SET last_seen_at = ? WHERE id = ?", [.int(now), .int(id)])
                }
            }
        }
        return out
    }

    /// Queues webhook deliveries (inside the batch transaction).
    package func insertOutbox(_ rows: [OutboxRow]) throws(DatabaseError) {
        for r in rows {
            try db.execute("""
                INSERT INTO webhook_deliveries(delivery_id, webhook_id, url, session_id, trigger, body, created_at, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, [.text(r.deliveryId), .text(r.webhookId), .text(r.url), .text(r.sessionId), .text(r.trigger), .text(r.body),
                      .int(r.at), .int(r.at)])
        }
    }
}
