import CallRoomTestSupport
import CallsCore
import CallsObjectStorage
@testable import CallsServer
@testable import CallsStore
import XCTest

/// The store itself (on SQLite, and on PostgreSQL in the suite's PostgreSQL pass: `StoreBackend.current`).
final class CallStoreTests: XCTestCase {
    func testInterruptedCallsAreClosedAtTheirLastHeartbeat() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        do {
            // Written the way the rooms write (the store writer's batches).
            let s = try database.store()
            let call = CallRef(value: 1), a = ParticipantRef(value: 2), b = ParticipantRef(value: 3)
            var refs = StoreRefs()
            let receipts = s.commit([
                StoreRequest(id: 1, commands: [.startCall(call, sessionId: "s", type: "audio", mode: "meet", at: 1000),
                                               .participantJoined(a, call: call, uid: "a", pid: "pa", displayName: "A", at: 1000)]),
                StoreRequest(id: 2, commands: [.participantJoined(b, call: call, uid: "b", pid: "pb", displayName: "B", at: 2000)]),
                StoreRequest(id: 3, commands: [.participantLeft(a, at: 3000)]),
                StoreRequest(id: 4, commands: [.heartbeat([call], at: 5000)]),
            ], refs: &refs)
            XCTAssertTrue(receipts.allSatisfy { if case .success = $0.result { return true }; return false }, "\(receipts)")
            // The process "dies" here: nothing closes the call.
        }
        let s = try database.store()
        XCTAssertEqual(try s.closeInterruptedCalls(), 1)
        let c = try XCTUnwrap(try s.latestCall(sessionId: "s"))
        XCTAssertEqual(c.status, "ended")
        XCTAssertEqual(c.endedAt, 5000)
        XCTAssertEqual(c.participants.map(\.leftAt), [3000, 5000])
        XCTAssertEqual(try s.closeInterruptedCalls(), 0)
    }

    /// Invites are rows a participant makes by REST: the session's and each maker's live ones are
    /// limited (expired, revoked and used-up ones do not count), and the ones that can no longer
    /// matter — expired or revoked before a call token's lifetime ago — are forgotten.
    func testInvitesAreLimitedPerSessionAndMakerAndTheDeadOnesForgotten() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        var n = 0
        func make(_ by: String, at t: Int64 = 10_000, expires: Int64 = 100_000, maxUses: Int? = nil, session: String = "s",
                  perSession: Int = 4, perMaker: Int? = 2, forget: Int64 = 0) throws -> (InviteCreation, String) {
            n += 1
            let i = StoredInvite(inviteId: "inv\(n)", sessionId: session, role: "guest", createdBy: by, createdAt: t, expiresAt: expires, maxUses: maxUses, uses: 0)
            return (try s.createInvite(i, perSession: perSession, perMaker: perMaker, forgetBefore: forget), i.inviteId)
        }
        XCTAssertEqual(try make("ann").0, .created)
        let (_, second) = try make("ann")
        XCTAssertEqual(try make("ann").0, .makerFull, "two live ones each")
        XCTAssertEqual(try make("bob").0, .created)
        XCTAssertEqual(try make("operator", perMaker: nil).0, .created)
        XCTAssertEqual(try make("operator", perMaker: nil).0, .sessionFull, "four in the session, the operator's too")
        XCTAssertEqual(try make("cat", session: "other").0, .created, "another session has its own")
        // Revoked, expired or used up: no longer live.
        _ = try s.revokeInvite(id: second, sessionId: "s", at: 11_000)
        XCTAssertEqual(try make("ann", at: 12_000).0, .created)
        XCTAssertEqual(try make("dan", at: 12_000).0, .sessionFull)
        XCTAssertEqual(try make("dan", at: 200_000, expires: 300_000).0, .created, "the first ones expired at 100,000")
        let used = StoredInvite(inviteId: "once", sessionId: "u", role: "guest", createdBy: "eve", createdAt: 1, expiresAt: 100_000, maxUses: 1, uses: 0)
        XCTAssertEqual(try s.createInvite(used, perSession: 1, perMaker: nil, forgetBefore: 0), .created)
        XCTAssertNotNil(try s.useInvite(id: "once", sessionId: "u", at: 2))
        XCTAssertEqual(try make("eve", at: 3, session: "u", perSession: 1).0, .created, "a used-up invite is not live")
        // Forgotten: what expired, or was revoked, before a call token's lifetime ago.
        XCTAssertEqual(try s.invites(sessionId: "s").count, 6)
        XCTAssertEqual(try make("dan", at: 250_000, expires: 300_000, forget: 150_000).0, .created)
        XCTAssertEqual(try s.invites(sessionId: "s").map(\.inviteId), ["inv10", "inv12"], "the rest expired before 150,000")
        XCTAssertEqual(try s.invites(sessionId: "other").count, 1, "another session's rows wait for its own next invite, or the start")
        XCTAssertEqual(try s.revokedInvites(since: 150_000), [])
        XCTAssertEqual(try s.invites(sessionId: "other").count, 0, "forgotten at start")
    }

    /// The delivery logs stay bounded: webhook deliveries and pushes that are over are forgotten
    /// `deliveryRetentionDays` after they were made, a page of ids at a time; pending ones stay
    /// whatever their age.
    func testFinishedDeliveriesAreForgottenAfterTheirRetention() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        let day: Int64 = 86_400_000
        let rows: [(id: String, made: Int64, status: String)] = [("old-delivered", day, "delivered"), ("old-dead", day, "dead"),
                                                                 ("old-pending", day, "pending"), ("new-delivered", 40 * day, "delivered")]
        try s.insertOutbox(rows.map { OutboxRow(deliveryId: $0.id, webhookId: "w", url: "http://127.0.0.1:9/", sessionId: "s", trigger: "call_ended", body: "{}", at: $0.made) })
        for r in rows {
            try s.db.execute("UPDATE webhook_deliveries SET status = ? WHERE delivery_id = ?", [.text(r.status), .text(r.id)])
            try s.db.execute("""
                INSERT INTO push_deliveries(push_id, session_id, uid, platform, token, topic, action, body, created_at, expires_at, next_attempt_at, status)
                VALUES (?, 's', 'u', 'fcm', 't', NULL, 'initiated', '{}', ?, ?, ?, ?)
                """, [.text(r.id), .int(r.made), .int(r.made + 60_000), .int(r.made), .text(r.status == "delivered" ? "sent" : r.status == "dead" ? "failed" : r.status)])
        }
        let logged = Locked<[String]>([])
        // A page an id: each a turn of the store's lock.
        let retention = HistoryRetention(store: s, deliveryDays: 30, chatDays: 0, log: ServerLog(level: .info, sink: { l in logged.withLock { $0.append(l) } }),
                                         pageIds: 1)
        XCTAssertEqual(retention.sweep(now: 41 * day).webhooks, 2)
        XCTAssertEqual(try s.deliveries(status: nil, page: 1, perPage: 10).items.map(\.deliveryId).sorted(), ["new-delivered", "old-pending"])
        XCTAssertEqual(try s.pushDeliveries(status: nil, sessionId: nil, page: 1, perPage: 10).items.map(\.pushId).sorted(), ["new-delivered", "old-pending"])
        XCTAssertTrue(logged.withLock { $0 }.contains { $0.contains("delivery logs past retention forgotten") && $0.contains("webhooks=2") && $0.contains("pushes=2") },
                      "\(logged.withLock { $0 })")
        XCTAssertEqual(HistoryRetention(store: s, deliveryDays: 0, chatDays: 0, log: ServerLog(level: .error)).sweep(now: 1_000 * day), .init(), "0: kept for ever")
        XCTAssertEqual(try s.deliveries(status: nil, page: 1, perPage: 10).items.count, 2)
    }

    /// Commits call `n` of `session`: ann joins at `start` and says "in SESSION", then `more`
    /// (given the call), then the end at `end` (nil: still going). The store must take it all.
    private func commitCall(_ s: CallStore, _ n: Int, session: String, start: Int64, end: Int64?, refs: inout StoreRefs,
                            file: StaticString = #filePath, line: UInt = #line, more: (CallRef) -> [StoreCommand] = { _ in [] }) {
        let ref = CallRef(value: UInt64(n)), pid = "p\(n)"
        var commands: [StoreCommand] = [.startCall(ref, sessionId: session, type: "audio", mode: "meet", at: start),
                                        .participantJoined(ParticipantRef(value: UInt64(n)), call: ref, uid: "ann", pid: pid, displayName: "Ann", at: start),
                                        .chat(call: ref, uid: "ann", pid: pid, name: "Ann", text: "in \(session)", at: start + 1)] + more(ref)
        if let end { commands.append(.endCall(ref, at: end)) }
        let receipts = s.commit([StoreRequest(id: UInt64(n), commands: commands)], refs: &refs)
        XCTAssertTrue(receipts.allSatisfy { if case .success = $0.result { return true }; return false }, "\(receipts)", file: file, line: line)
    }

    /// The chat of calls that ended `chatRetentionDays` ago is forgotten; the call rows stay, and a
    /// call still going keeps its chat whatever its age.
    func testTheChatOfCallsLongOverIsForgottenAfterItsRetention() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        let day: Int64 = 86_400_000
        var refs = StoreRefs()
        for (i, call) in [("old", 1 * day, Optional(2 * day)), ("recent", 1 * day, 40 * day), ("live", 1 * day, nil)].enumerated() {
            commitCall(s, i + 1, session: call.0, start: call.1, end: call.2, refs: &refs)
        }
        let logged = Locked<[String]>([])
        let retention = HistoryRetention(store: s, deliveryDays: 0, chatDays: 30, log: ServerLog(level: .info, sink: { l in logged.withLock { $0.append(l) } }))
        XCTAssertEqual(retention.sweep(now: 41 * day), .init(chatMessages: 1))
        XCTAssertEqual(try s.chatMessages(sessionId: "old", page: 1, perPage: 10).items.count, 0, "ended 39 days before")
        XCTAssertEqual(try s.chatMessages(sessionId: "recent", page: 1, perPage: 10).items.map(\.text), ["in recent"])
        XCTAssertEqual(try s.chatMessages(sessionId: "live", page: 1, perPage: 10).items.map(\.text), ["in live"], "a call still going keeps it")
        XCTAssertNotNil(try s.latestCall(sessionId: "old"), "the call log stays")
        XCTAssertTrue(logged.withLock { $0 }.contains { $0.contains("chat past retention forgotten") && $0.contains("messages=1") }, "\(logged.withLock { $0 })")
        XCTAssertEqual(HistoryRetention(store: s, deliveryDays: 0, chatDays: 0, log: ServerLog(level: .error)).sweep(now: 1_000 * day), .init(), "0: kept for ever")
        XCTAssertEqual(try s.chatMessages(sessionId: "recent", page: 1, perPage: 10).items.count, 1)
    }

    /// The chat is forgotten a page of message ids at a time (the store's lock let go between
    /// them), every page walked: old messages mixed with a recent and a live call's, each kept.
    func testOldChatIsForgottenAPageAtATime() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        let day: Int64 = 86_400_000
        var refs = StoreRefs()
        // Three calls' chat interleaved: ids 1–30 with every third message the old call's.
        for round in 0..<10 {
            for (i, call) in [("old", Optional(2 * day)), ("recent", 40 * day), ("live", nil)].enumerated() {
                let ref = CallRef(value: UInt64(i + 1)), pid = "p\(i + 1)"
                var commands: [StoreCommand] = round == 0
                    ? [.startCall(ref, sessionId: call.0, type: "audio", mode: "meet", at: day),
                       .participantJoined(ParticipantRef(value: UInt64(i + 1)), call: ref, uid: "ann", pid: pid, displayName: "Ann", at: day)]
                    : []
                commands.append(.chat(call: ref, uid: "ann", pid: pid, name: "Ann", text: "\(call.0) \(round)", at: day + Int64(round)))
                let receipts = s.commit([StoreRequest(id: UInt64(round * 3 + i + 1), commands: commands)], refs: &refs)
                XCTAssertTrue(receipts.allSatisfy { if case .success = $0.result { return true }; return false }, "\(receipts)")
            }
        }
        for (i, call) in [("old", Optional(2 * day)), ("recent", 40 * day)].enumerated() {
            guard let end = call.1 else { continue }
            _ = s.commit([StoreRequest(id: UInt64(100 + i), commands: [.endCall(CallRef(value: UInt64(i + 1)), at: end)])], refs: &refs)
        }
        XCTAssertEqual(try s.forget(.chat, before: 11 * day, after: 0, window: 4), ForgottenPage(rows: 2, next: 4), "ids 1–4: the old call's 1 and 4")
        let retention = HistoryRetention(store: s, deliveryDays: 0, chatDays: 30, log: ServerLog(level: .error), pageIds: 4)
        XCTAssertEqual(retention.sweep(now: 41 * day), .init(chatMessages: 8), "the other eight, on the pages after")
        XCTAssertEqual(try s.chatMessages(sessionId: "old", page: 1, perPage: 50).items.count, 0)
        XCTAssertEqual(try s.chatMessages(sessionId: "recent", page: 1, perPage: 50).items.count, 10)
        XCTAssertEqual(try s.chatMessages(sessionId: "live", page: 1, perPage: 50).items.count, 10)
        XCTAssertEqual(retention.sweep(now: 41 * day), .init(), "nothing left to forget")
    }

    /// `callLogRetentionDays`: the logs of calls that ended long ago are forgotten whole — the
    /// call, its participants and its chat — but a call with a recording left stays until the
    /// recordings' own retention has removed it (with its files), and recent and live calls stay.
    func testCallLogsLongOverAreForgottenOnceTheirRecordingsAreGone() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        let day: Int64 = 86_400_000
        var refs = StoreRefs()
        for (i, call) in [("recorded", Optional(2 * day)), ("recent", 40 * day), ("live", nil), ("old", 2 * day)].enumerated() {
            commitCall(s, i + 1, session: call.0, start: day, end: call.1, refs: &refs) { ref in
                call.0 == "recorded" ? [.recordingStarted(rid: "rec_kept", call: ref, sessionId: call.0, at: day)] : []
            }
        }
        try s.recordingFinished(rid: "rec_kept", endedAt: 2 * day, files: [])
        let logged = Locked<[String]>([])
        // A page a call id: the one forgotten is on the last.
        let retention = HistoryRetention(store: s, deliveryDays: 0, chatDays: 0, callLogDays: 30,
                                         log: ServerLog(level: .info, sink: { l in logged.withLock { $0.append(l) } }), pageIds: 1)
        XCTAssertEqual(retention.sweep(now: 41 * day), .init(calls: 1))
        XCTAssertNil(try s.latestCall(sessionId: "old"), "ended 39 days before: forgotten")
        XCTAssertEqual(try s.chatMessages(sessionId: "old", page: 1, perPage: 10).items.count, 0)
        XCTAssertNotNil(try s.latestCall(sessionId: "recorded"), "its recording is still kept")
        XCTAssertNotNil(try s.latestCall(sessionId: "recent"))
        XCTAssertNotNil(try s.latestCall(sessionId: "live"), "a call still going stays")
        XCTAssertEqual(try s.latestCall(sessionId: "live")?.participants.count, 1)
        XCTAssertTrue(logged.withLock { $0 }.contains { $0.contains("call logs past retention forgotten") && $0.contains("calls=1") }, "\(logged.withLock { $0 })")
        // The recordings' retention removes the recording; the next turn takes the call with it.
        XCTAssertEqual(try s.deleteRecordings(endedBefore: 41 * day - 30 * day), ["rec_kept"])
        XCTAssertEqual(retention.sweep(now: 41 * day), .init(calls: 1))
        XCTAssertNil(try s.latestCall(sessionId: "recorded"))
        XCTAssertEqual(retention.sweep(now: 41 * day), .init(), "nothing left past it")
        XCTAssertEqual(HistoryRetention(store: s, deliveryDays: 0, chatDays: 0, callLogDays: 0, log: ServerLog(level: .error)).sweep(now: 1_000 * day),
                       .init(), "0: kept for ever")
        XCTAssertNotNil(try s.latestCall(sessionId: "recent"))
    }

    /// Object storage's queue (#38): files are queued in the transaction that finishes their
    /// recording only when uploads are on; this node's rows come first; an upload that lands after
    /// retention queued the deletion stays queued for deletion; failures push the next attempt back.
    func testFilesAreQueuedForObjectStorageWithTheirRecordingAndDeletedWithRetention() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        let call = CallRef(value: 1)
        var refs = StoreRefs()
        _ = s.commit([StoreRequest(id: 1, commands: [.startCall(call, sessionId: "s", type: "audio", mode: "meet", at: 1000),
                                                     .recordingStarted(rid: "rec_off", call: call, sessionId: "s", at: 1000),
                                                     .recordingStarted(rid: "rec_on", call: call, sessionId: "s", at: 1000),
                                                     .recordingStarted(rid: "rec_other", call: call, sessionId: "s", at: 1000)])], refs: &refs)
        let file = { (name: String) in StoredRecordingFile(name: name, kind: "mixed", uid: nil, pid: nil, durationMs: 1000, bytes: 10) }
        try s.recordingFinished(rid: "rec_off", endedAt: 2000, files: [file("mixed.opus")])
        XCTAssertEqual(try s.dueObjects(now: .max, nodeID: nil, limit: 10), [], "object storage off: nothing queued")
        s.queuesUploads = true
        s.nodeID = "node-b"
        try s.recordingFinished(rid: "rec_other", endedAt: 2000, files: [file("mixed.opus")])
        s.nodeID = "node-a"
        try s.recordingFinished(rid: "rec_on", endedAt: 3000, files: [file("mixed.opus"), file("p1.opus")])
        let due = try s.dueObjects(now: .max, nodeID: "node-a", limit: 10)
        XCTAssertEqual(due.map(\.key), ["recordings/rec_on/mixed.opus", "recordings/rec_on/p1.opus", "recordings/rec_other/mixed.opus"],
                       "this node's first")
        XCTAssertEqual(due.first?.nodeID, "node-a")
        XCTAssertEqual(try s.recording(sessionId: "s", rid: "rec_on")?.recording.files.map(\.storage), [.uploading, .uploading])
        XCTAssertEqual(try s.recording(sessionId: "s", rid: "rec_off")?.recording.files.map(\.storage), [.local])
        // One lands; one fails and waits its back-off.
        try s.objectStored(key: "recordings/rec_on/mixed.opus", bytes: 10, nodeID: "node-a", now: 4000)
        let later = Int64(Date().timeIntervalSince1970 * 1000) + 60_000  // (rows are queued at the wall clock's now)
        try s.objectFailed(key: "recordings/rec_on/p1.opus", error: "object storage refused (503 ServiceUnavailable)", retryAt: later)
        XCTAssertEqual(try s.dueObjects(now: later - 1, nodeID: "node-a", limit: 10).map(\.key), ["recordings/rec_other/mixed.opus"])
        let retried = try XCTUnwrap(try s.dueObjects(now: later, nodeID: "node-a", limit: 10).first)
        XCTAssertEqual(retried.attempts, 1)
        XCTAssertEqual(retried.lastError, "object storage refused (503 ServiceUnavailable)")
        XCTAssertEqual(try s.recording(sessionId: "s", rid: "rec_on")?.recording.files.map(\.storage), [.objectStorage, .uploading])
        XCTAssertEqual(try s.objectCounts(), [.stored: 1, .upload: 2])
        // Retention: every object of the recording is to be deleted — the one under way too, even if it lands now.
        XCTAssertEqual(Set(try s.deleteRecordings(endedBefore: 3500)), ["rec_off", "rec_on", "rec_other"])
        try s.objectStored(key: "recordings/rec_on/p1.opus", bytes: 10, nodeID: "node-a", now: 10_000)
        let deletions = try s.dueObjects(now: .max, nodeID: "node-a", limit: 10)
        XCTAssertEqual(Set(deletions.map(\.state)), [.delete])
        XCTAssertEqual(deletions.count, 3)
        for d in deletions { try s.objectDeleted(key: d.key) }
        XCTAssertEqual(try s.objectCounts(), [:])
        XCTAssertEqual(ObjectUploader.retryDelay(afterAttempts: 1), 2000)
        XCTAssertEqual(ObjectUploader.retryDelay(afterAttempts: 4), 16_000)
        XCTAssertEqual(ObjectUploader.retryDelay(afterAttempts: 40), 600_000)
        // Incomplete multipart uploads: abandoned once older than the cut; one without a start never.
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let uploads = [S3Client.IncompleteUpload(key: "a", uploadID: "1", initiated: now.addingTimeInterval(-90_000)),
                       S3Client.IncompleteUpload(key: "b", uploadID: "2", initiated: now.addingTimeInterval(-3_600)),
                       S3Client.IncompleteUpload(key: "c", uploadID: "3", initiated: nil)]
        XCTAssertEqual(ObjectUploader.abandoned(uploads, olderThan: ObjectUploader.abandonedAfter, now: now).map(\.key), ["a"])
        XCTAssertEqual(ObjectUploader.abandoned(uploads, olderThan: 60, now: now).map(\.key), ["a", "b"])
    }

    /// Retention of transcripts: finished ones older than the cut go (rows, objects queued for
    /// deletion); one still being written stays, whatever its start.
    func testTranscriptsPastTheCutAreDeletedButNotOnesStillWritten() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        s.queuesUploads = true
        let call = CallRef(value: 1)
        var refs = StoreRefs()
        _ = s.commit([StoreRequest(id: 1, commands: [.startCall(call, sessionId: "s", type: "audio", mode: "meet", at: 1000),
                                                     .transcriptionStarted(tid: "tr_old", call: call, language: "en-US", at: 1000),
                                                     .transcriptionStarted(tid: "tr_new", call: call, language: "en-US", at: 1000),
                                                     .transcriptionStarted(tid: "tr_open", call: call, language: "en-US", at: 1000)])], refs: &refs)
        try s.transcriptionFinished(tid: "tr_old", endedAt: 2000, url: "u", meta: "{}")
        try s.transcriptionFinished(tid: "tr_new", endedAt: 9000, url: "u", meta: "{}")
        XCTAssertEqual(try s.deleteTranscripts(endedBefore: 5000), ["tr_old"])
        XCTAssertEqual(Set(try s.transcripts(sessionId: "s", page: 1, perPage: 10).items.map(\.tid)), ["tr_new", "tr_open"])
        let due = try s.dueObjects(now: .max, nodeID: nil, limit: 10).filter { $0.key.hasPrefix("transcripts/tr_old") }
        XCTAssertEqual(Set(due.map(\.state)), [.delete])
        XCTAssertEqual(due.count, 2, "its .vtt and .json")
        XCTAssertEqual(try s.deleteTranscripts(endedBefore: .max), ["tr_new"], "never the one still being written")
    }

    func testAuthTokensAreStoredHashed() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        _ = try s.createUser(uid: "u", name: "U")
        XCTAssertNil(try s.createUser(uid: "u", name: "again"))
        let t = try s.createAuthToken(uid: "u").token
        XCTAssertEqual(try s.user(authToken: t)?.uid, "u")
        XCTAssertNil(try s.user(authToken: t + "x"))
        let db = try database.open()
        let stored = try db.query("SELECT token_hash FROM auth_tokens").first?.first?.text
        XCTAssertNotEqual(stored, t)
        XCTAssertEqual(stored?.count, 64)
    }
}

extension CallStoreTests {
    /// Nodes sharing a database claim each outbox row before an attempt: one wins, the row stays
    /// out of sight for the lease, and is due again when the lease runs out (the node died).
    func testOutboxRowsAreClaimedByOneSenderAtATime() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let a = try database.store(), b = try database.store()  // two nodes' connections
        try a.insertOutbox([OutboxRow(deliveryId: "d1", webhookId: "w", url: "http://127.0.0.1:9/", sessionId: "s", trigger: "call_initiated",
                                      body: "{}", at: 1000)])
        let due = try b.dueDeliveries(now: 1000, limit: 10)
        XCTAssertEqual(due.map(\.deliveryId), ["d1"])
        let id = try XCTUnwrap(due.first?.id)
        XCTAssertTrue(try a.claimDelivery(id: id, now: 1000, until: 31_000), "the first claim wins")
        XCTAssertFalse(try b.claimDelivery(id: id, now: 1000, until: 31_000), "the second loses")
        XCTAssertEqual(try b.dueDeliveries(now: 20_000, limit: 10), [], "out of sight during the lease")
        XCTAssertTrue(try b.claimDelivery(id: id, now: 31_000, until: 61_000), "the lease ran out: another node may try")
        try b.recordAttempt(id: id, status: "delivered", httpStatus: 200, error: nil, next: nil, at: 31_500)
        XCTAssertFalse(try a.claimDelivery(id: id, now: 100_000, until: 130_000), "delivered: nobody sends it again")
    }
}
