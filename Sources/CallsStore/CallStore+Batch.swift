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
                            receipts.append(StoreReceipt(id: r.id, result: .failure(StoreFailure(error))))
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
            return requests.map { StoreReceipt(id: $0.id, result: .failure(StoreFailure(error))) }
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
                refs.request.calls[ref] = try openCall(sessionId: sessionId, type: type, mode: mode, now: now)
            case let .participantJoined(ref, call, uid, pid, displayName, now):
                guard let callID = refs.call(call, committed) else { throw DatabaseError.step(message: "the call was not recorded") }
                let name = try participantName(uid: uid, displayName: displayName)
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
                try insertRingingCall(call)
            case let .ringStatus(sessionId, status, startedAt, endedAt):
                try updateRingingCall(sessionId: sessionId, status: status, startedAt: startedAt, endedAt: endedAt)
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
                guard let callID = refs.call(hook.call, committed) else { continue }
                try announce(hook, callID: callID)
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
