import CallsCore
import CallsDatabase

/// Filters for listing calls (`GET /v3/calls`). Nil means "any".
public struct CallFilter: Sendable, Equatable {
    public var type: String?
    public var status: String?
    public var hasRecording: Bool?
    public var hasTranscription: Bool?
    /// Calls this user took part in.
    public var uid: String?
    /// `group` (meetings) or `user` (1:1 calls).
    public var receiverType: String?
    /// Calls started at or after this time (ms since the epoch).
    public var startedAt: Int64?
    /// Calls ended at or before this time (ms since the epoch).
    public var endedAt: Int64?
    /// Calls with exactly this many distinct participants.
    public var participantsCount: Int?
    /// Restricts the listing to calls this user took part in (a user's own view).
    public var visibleTo: String?
    /// Calls of this session (the meeting's "group").
    public var sessionId: String?

    public init() {}
}

extension CallStore {
    /// Calls matching `filter`, newest first.
    public func calls(_ f: CallFilter, page: Int, perPage: Int) throws(DatabaseError) -> Page<StoredCall> {
        var clauses: [String] = []
        var params: [DatabaseValue] = []
        if let v = f.type { clauses.append("c.type = ?"); params.append(.text(v)) }
        if f.status == "missed" {
            // Missed: a ringing call that never connected for its receivers.
            clauses.append("c.mode = 'call' AND c.status IN ('unanswered', 'cancelled')")
        } else if let v = f.status {
            clauses.append("c.status = ?")
            params.append(.text(v))
        }
        if let v = f.sessionId { clauses.append("(c.session_id = ? OR c.receiver_id = ?)"); params += [.text(v), .text(v)] }
        if let v = f.receiverType {
            clauses.append(v == "group" ? "(c.mode = 'meet' OR c.receiver_type = 'group')" : "(c.mode = 'call' AND COALESCE(c.receiver_type, 'user') = 'user')")
        }
        if let v = f.hasRecording { clauses.append((v ? "" : "NOT ") + "EXISTS (SELECT 1 FROM recordings r WHERE r.call_id = c.id)") }
        if let v = f.hasTranscription { clauses.append((v ? "" : "NOT ") + "EXISTS (SELECT 1 FROM transcripts t WHERE t.call_id = c.id)") }
        if let v = f.startedAt { clauses.append("c.started_at >= ?"); params.append(.int(v)) }
        if let v = f.endedAt { clauses.append("c.ended_at IS NOT NULL AND c.ended_at <= ?"); params.append(.int(v)) }
        for u in [f.uid, f.visibleTo].compactMap({ $0 }) {
            // In it: joined its room, placed it, or was rung by it (missed calls included).
            clauses.append("""
                (EXISTS (SELECT 1 FROM call_participants p WHERE p.call_id = c.id AND p.uid = ?) OR c.initiator_uid = ?
                 OR EXISTS (SELECT 1 FROM call_members m WHERE m.call_id = c.id AND m.uid = ?))
                """)
            params += [.text(u), .text(u), .text(u)]
        }
        if let n = f.participantsCount {
            clauses.append("(SELECT COUNT(DISTINCT p.uid) FROM call_participants p WHERE p.call_id = c.id) = ?")
            params.append(.int(Int64(n)))
        }
        let whereSQL = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try locked { () throws(DatabaseError) in
            let total = Int(try db.query("SELECT COUNT(*) FROM calls c \(whereSQL)", params).first?.first?.int ?? 0)
            let ids = try db.query("SELECT c.id FROM calls c \(whereSQL) ORDER BY c.id DESC LIMIT ? OFFSET ?",
                                   params + [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))]).compactMap { $0.first?.int }
            var items: [StoredCall] = []
            for id in ids { if let c = try loadCall(id: id, listing: f.visibleTo ?? f.uid ?? "") { items.append(c) } }
            return Page(items: items, total: total, page: page, perPage: perPage)
        }
    }

    /// Participant rows a call carries in a listing: the first to join (and the viewer's own). A
    /// call may have 10,000 (`RoomLimits.maxJoinsPerCall`); a page of 100 such calls was 233 MB
    /// built in memory for one request. `GET /v3/calls/{sessionId}` carries them all.
    public static let listedParticipants = 100

    /// One call with its participants (caller holds the lock). `listing`: for a page of calls —
    /// at most `listedParticipants` rows, and every row of that uid (the viewer: `CallAccess`
    /// needs their spans); past that the call carries its rows' spans instead (`allSpans`).
    package func loadCall(id: Int64, listing viewer: String? = nil) throws(DatabaseError) -> StoredCall? {
        guard let r = try db.query("""
            SELECT c.id, c.session_id, c.type, c.mode, c.status, c.initiated_at, c.started_at, c.ended_at,
                c.initiator_uid, COALESCE(iu.name, c.initiator_uid), c.receiver_type, c.receiver_id,
                COALESCE(ru.name, g.name, c.receiver_id)
            FROM calls c LEFT JOIN users iu ON iu.uid = c.initiator_uid
                LEFT JOIN users ru ON c.receiver_type = 'user' AND ru.uid = c.receiver_id
                LEFT JOIN groups g ON c.receiver_type = 'group' AND g.guid = c.receiver_id
            WHERE c.id = ?
            """, [.int(id)]).first else { return nil }
        let columns = "SELECT id, uid, pid, name, joined_at, left_at, moderated FROM call_participants"
        func participants(_ rows: [[DatabaseValue]]) -> [StoredCallParticipant] {
            rows.map {
                StoredCallParticipant(id: $0[0].int ?? 0, uid: $0[1].text ?? "", pid: $0[2].text ?? "",
                                      name: $0[3].text ?? "", joinedAt: $0[4].int ?? 0, leftAt: $0[5].int, moderated: ($0[6].int ?? 0) != 0)
            }
        }
        var ps: [StoredCallParticipant]
        var spans: [StoredCall.Span]?, uids: Int?
        if let viewer {
            let limit = Self.listedParticipants
            ps = participants(try db.query(columns + " WHERE call_id = ? ORDER BY id LIMIT ?", [.int(id), .int(Int64(limit + 1))]))
            if ps.count > limit {
                ps.removeLast()
                let shown = Set(ps.map(\.id))
                ps += participants(try db.query(columns + " WHERE call_id = ? AND uid = ? ORDER BY id", [.int(id), .text(viewer)]))
                    .filter { !shown.contains($0.id) }
                spans = try db.query("SELECT joined_at, left_at FROM call_participants WHERE call_id = ? ORDER BY id", [.int(id)])
                    .map { StoredCall.Span(joinedAt: $0[0].int ?? 0, leftAt: $0[1].int) }
                uids = Int(try db.query("SELECT COUNT(DISTINCT uid) FROM call_participants WHERE call_id = ?", [.int(id)]).first?.first?.int ?? 0)
            }
        } else {
            ps = participants(try db.query(columns + " WHERE call_id = ? ORDER BY id", [.int(id)]))
        }
        var call = StoredCall(id: id, sessionId: r[1].text ?? "", type: r[2].text ?? "", mode: r[3].text ?? "",
                              status: r[4].text ?? "", initiatedAt: r[5].int ?? 0, startedAt: r[6].int, endedAt: r[7].int,
                              participants: ps)
        call.allSpans = spans
        call.distinctUIDs = uids
        for row in try db.query("SELECT rid, session_id, started_at, ended_at, duration_ms FROM recordings WHERE call_id = ? ORDER BY started_at",
                                [.int(id)]) {
            let rid = row[0].text ?? ""
            // (Where each file is, from its object-storage row, in the same query.)
            let files = try db.query("""
                SELECT f.name, f.kind, f.uid, f.pid, f.duration_ms, f.bytes, f.video, o.state FROM recording_files f
                LEFT JOIN stored_objects o ON o.owner = f.rid AND o.name = f.name WHERE f.rid = ? ORDER BY f.kind, f.name
                """, [.text(rid)]).map {
                var f = StoredRecordingFile(name: $0[0].text ?? "", kind: $0[1].text ?? "", uid: $0[2].text, pid: $0[3].text,
                                            durationMs: $0[4].int ?? 0, bytes: $0[5].int ?? 0)
                f.video = ($0[6].int ?? 0) != 0
                f.storage = $0[7].text.map { $0 == StoredObject.State.stored.rawValue ? .objectStorage : .uploading } ?? .local
                return f
            }
            call.recordings.append(StoredRecording(rid: rid, sessionId: row[1].text ?? "", startedAt: row[2].int ?? 0, endedAt: row[3].int,
                                                   durationMs: row[4].int, files: files))
        }
        call.transcripts = try transcriptRows(callID: id, sessionId: call.sessionId, limit: 1000, offset: 0)
        if let i = r[8].text, let rid = r[11].text {
            call.initiator = CallPartyWire(id: i, name: r[9].text ?? i)
            call.receiverType = r[10].text.flatMap(CallReceiverType.init(rawValue:)) ?? .user
            call.receiver = CallPartyWire(id: rid, name: r[12].text ?? rid)
            call.members = try db.query("""
                SELECT m.uid, COALESCE(u.name, m.uid), m.outcome FROM call_members m LEFT JOIN users u ON u.uid = m.uid
                WHERE m.call_id = ? ORDER BY m.uid
                """, [.int(id)]).map {
                CallMemberWire(uid: $0[0].text ?? "", name: $0[1].text ?? "", outcome: $0[2].text.flatMap(CallMemberOutcome.init(rawValue:)) ?? .ringing)
            }
        }
        return call
    }
}

/// A chat message kept with its call.
public struct StoredChatMessage: Sendable, Equatable, Codable {
    public var id: Int64
    public var uid: String
    public var pid: String
    public var name: String
    public var text: String
    public var sentAt: Int64
}

extension CallStore {
    /// The chat of the latest call of `sessionId`, oldest first.
    /// `within`: only messages sent in these spans (epoch ms, ends inclusive; nil: all).
    public func chatMessages(sessionId: String, page: Int, perPage: Int, within: [ClosedRange<Int64>]? = nil) throws(DatabaseError) -> Page<StoredChatMessage> {
        try locked { () throws(DatabaseError) in
            guard let call = try db.query("SELECT id FROM calls WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                                          [.text(sessionId)]).first?.first?.int else {
                return Page(items: [], total: 0, page: page, perPage: perPage)
            }
            var filter = ""
            var params: [DatabaseValue] = [.int(call)]
            if let within {
                // (No span: nothing. At most a few hundred spans: one per join of one user.)
                let spans = within.prefix(500)
                filter = spans.isEmpty ? " AND 1 = 0" : " AND (" + spans.map { _ in "sent_at BETWEEN ? AND ?" }.joined(separator: " OR ") + ")"
                for s in spans { params += [.int(s.lowerBound), .int(s.upperBound)] }
            }
            let total = Int(try db.query("SELECT COUNT(*) FROM chat_messages WHERE call_id = ?" + filter, params).first?.first?.int ?? 0)
            let rows = try db.query("SELECT id, uid, pid, name, text, sent_at FROM chat_messages WHERE call_id = ?" + filter + " ORDER BY id LIMIT ? OFFSET ?",
                                    params + [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))])
            return Page(items: rows.map {
                StoredChatMessage(id: $0[0].int ?? 0, uid: $0[1].text ?? "", pid: $0[2].text ?? "", name: $0[3].text ?? "",
                                  text: $0[4].text ?? "", sentAt: $0[5].int ?? 0)
            }, total: total, page: page, perPage: perPage)
        }
    }
}

/// A stored transcript of a call (written by server-side transcription).
public typealias StoredTranscript = TranscriptRecord

extension CallStore {
    /// The transcripts of the latest call of `sessionId`, oldest first.
    public func transcripts(sessionId: String, page: Int, perPage: Int) throws(DatabaseError) -> Page<StoredTranscript> {
        try locked { () throws(DatabaseError) in
            guard let call = try db.query("SELECT id FROM calls WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                                          [.text(sessionId)]).first?.first?.int else {
                return Page(items: [], total: 0, page: page, perPage: perPage)
            }
            let total = Int(try db.query("SELECT COUNT(*) FROM transcripts WHERE call_id = ?", [.int(call)]).first?.first?.int ?? 0)
            return Page(items: try transcriptRows(callID: call, sessionId: sessionId, limit: perPage, offset: (page - 1) * perPage),
                        total: total, page: page, perPage: perPage)
        }
    }

    /// (Under the lock.)
    private func transcriptRows(callID: Int64, sessionId: String, limit: Int, offset: Int) throws(DatabaseError) -> [StoredTranscript] {
        try db.query("SELECT t.tid, t.start_time, t.end_time, t.url, t.meta, \(Self.transcriptObjects) FROM transcripts t WHERE t.call_id = ? ORDER BY t.id LIMIT ? OFFSET ?",
                     [.int(callID), .int(Int64(limit)), .int(Int64(offset))]).map {
            StoredTranscript(tid: $0[0].text ?? "", mid: sessionId, roomName: sessionId, startTime: $0[1].int ?? 0,
                             endTime: $0[2].int ?? 0, url: $0[3].text ?? "", metaData: $0[4].text,
                             storage: Self.transcriptStorage(queued: $0[5].int ?? 0, uploading: $0[6].int ?? 0))
        }
    }

    /// The transcriber finished (or a crash-cut transcript was finalised): its end, URL and metadata.
    package func transcriptionFinished(tid: String, endedAt: Int64, url: String, meta: String) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                try db.execute("UPDATE transcripts SET end_time = ?, url = ?, meta = ? WHERE tid = ?", [.int(endedAt), .text(url), .text(meta), .text(tid)])
                try queueUploads(.transcript, owner: tid, names: ["\(tid).vtt", "\(tid).json"], now: epochMilliseconds())
            }
        }
    }

    /// A transcript's object-storage rows (of transcript `t`): how many, and how many not yet stored.
    static let transcriptObjects = "(SELECT COUNT(*) FROM stored_objects o WHERE o.owner = t.tid), "
        + "(SELECT COUNT(*) FROM stored_objects o WHERE o.owner = t.tid AND o.state <> 'stored')"

    /// A transcript's files are where the least far along of them is.
    static func transcriptStorage(queued: Int64, uploading: Int64) -> FileStorage {
        queued == 0 ? .local : uploading > 0 ? .uploading : .objectStorage
    }

    /// Transcripts a crash left without an end (finalised at start), with their session.
    package func unfinishedTranscripts() throws(DatabaseError) -> [(tid: String, sessionId: String, startedAt: Int64)] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT t.tid, c.session_id, t.start_time FROM transcripts t JOIN calls c ON c.id = t.call_id WHERE t.end_time = 0")
                .map { ($0[0].text ?? "", $0[1].text ?? "", $0[2].int ?? 0) }
        }
    }

    /// One transcript of a call of `sessionId` (any call, not only the latest).
    package func transcript(sessionId: String, tid: String) throws(DatabaseError) -> (StoredTranscript, callID: Int64)? {
        try locked { () throws(DatabaseError) in
            guard let row = try db.query("""
                SELECT t.tid, t.start_time, t.end_time, t.url, t.meta, t.call_id, \(Self.transcriptObjects) FROM transcripts t
                JOIN calls c ON c.id = t.call_id WHERE t.tid = ? AND c.session_id = ?
                """, [.text(tid), .text(sessionId)]).first else { return nil }
            return (StoredTranscript(tid: tid, mid: sessionId, roomName: sessionId, startTime: row[1].int ?? 0,
                                     endTime: row[2].int ?? 0, url: row[3].text ?? "", metaData: row[4].text,
                                     storage: Self.transcriptStorage(queued: row[6].int ?? 0, uploading: row[7].int ?? 0)), row[5].int ?? 0)
        }
    }
}

// MARK: Recordings
extension CallStore {
    /// The recorder finished: the recording's end and its files (replacing any listed before).
    package func recordingFinished(rid: String, endedAt: Int64, files: [StoredRecordingFile], outbox: [OutboxRow] = []) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                try insertOutbox(outbox)
                let duration = files.map(\.durationMs).max() ?? 0
                try db.execute("UPDATE recordings SET ended_at = ?, duration_ms = ?, bytes = ? WHERE rid = ?",
                               [.int(endedAt), .int(duration), .int(files.reduce(0) { $0 + $1.bytes }), .text(rid)])
                try db.execute("DELETE FROM recording_files WHERE rid = ?", [.text(rid)])
                for f in files {
                    try db.execute("""
                        INSERT INTO recording_files(rid, name, kind, uid, pid, duration_ms, bytes, video) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """, [.text(rid), .text(f.name), .text(f.kind), f.uid.map { .text($0) } ?? .null, f.pid.map { .text($0) } ?? .null,
                              .int(f.durationMs), .int(f.bytes), .int(f.video ? 1 : 0)])
                }
                try queueUploads(.recording, owner: rid, names: files.map(\.name), now: epochMilliseconds())
            }
        }
    }

    /// Finished recordings with participants' files but no mix (the disk was full when they
    /// stopped), oldest first, at most `limit`.
    package func recordingsWithoutMix(limit: Int) throws(DatabaseError) -> [(rid: String, tracks: [String])] {
        try locked { () throws(DatabaseError) in
            let rids = try db.query("""
                SELECT r.rid FROM recordings r WHERE r.ended_at IS NOT NULL
                    AND EXISTS (SELECT 1 FROM recording_files f WHERE f.rid = r.rid AND f.kind = 'participant' AND COALESCE(f.video, 0) = 0)
                    AND NOT EXISTS (SELECT 1 FROM recording_files f WHERE f.rid = r.rid AND f.kind = 'mixed')
                ORDER BY r.ended_at LIMIT ?
                """, [.int(Int64(limit))]).compactMap { $0[0].text }
            var out: [(String, [String])] = []
            for rid in rids {
                let names = try db.query("SELECT name FROM recording_files WHERE rid = ? AND kind = 'participant' AND COALESCE(video, 0) = 0 ORDER BY name",
                                         [.text(rid)]).compactMap { $0[0].text }
                out.append((rid, names))
            }
            return out
        }
    }

    /// Adds a file to a finished recording (its mix, made after it stopped).
    package func recordingFileAdded(rid: String, file f: StoredRecordingFile) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                try db.execute("""
                    INSERT INTO recording_files(rid, name, kind, uid, pid, duration_ms, bytes, video) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(rid), .text(f.name), .text(f.kind), f.uid.map { .text($0) } ?? .null, f.pid.map { .text($0) } ?? .null,
                          .int(f.durationMs), .int(f.bytes), .int(f.video ? 1 : 0)])
                try db.execute("UPDATE recordings SET bytes = COALESCE(bytes, 0) + ? WHERE rid = ?", [.int(f.bytes), .text(rid)])
                try queueUploads(.recording, owner: rid, names: [f.name], now: epochMilliseconds())
            }
        }
    }

    /// Deletes the rows of recordings that ended before `before`; returns their ids.
    package func deleteRecordings(endedBefore before: Int64) throws(DatabaseError) -> [String] {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) -> [String] in
                let rids = try db.query("SELECT rid FROM recordings WHERE ended_at IS NOT NULL AND ended_at < ?", [.int(before)]).compactMap { $0[0].text }
                for rid in rids {
                    try db.execute("DELETE FROM recording_files WHERE rid = ?", [.text(rid)])
                    try db.execute("DELETE FROM recordings WHERE rid = ?", [.text(rid)])
                }
                // (Their objects go from the bucket too, by the uploader: any node, retried.)
                try queueDeletions(.recording, owners: rids, now: epochMilliseconds())
                return rids
            }
        }
    }

    /// Deletes the rows of transcripts that ended before `before` (ones still being written —
    /// `end_time` 0 — stay); returns their ids. Their objects are queued for deletion too.
    package func deleteTranscripts(endedBefore before: Int64) throws(DatabaseError) -> [String] {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) -> [String] in
                let tids = try db.query("SELECT tid FROM transcripts WHERE end_time > 0 AND end_time < ?", [.int(before)]).compactMap { $0[0].text }
                for tid in tids { try db.execute("DELETE FROM transcripts WHERE tid = ?", [.text(tid)]) }
                try queueDeletions(.transcript, owners: tids, now: epochMilliseconds())
                return tids
            }
        }
    }

    /// Recordings a crash left without an end (finalised at start).
    public func unfinishedRecordings() throws(DatabaseError) -> [(rid: String, sessionId: String, startedAt: Int64)] {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT rid, session_id, started_at FROM recordings WHERE ended_at IS NULL").map {
                ($0[0].text ?? "", $0[1].text ?? "", $0[2].int ?? 0)
            }
        }
    }

    /// The parties of ringing call `sessionId`: its initiator and every member it rang (nil:
    /// no ringing call has that id). Only they may have a call token for its room.
    public func ringParties(sessionId: String) throws(DatabaseError) -> Set<String>? {
        try locked { () throws(DatabaseError) -> Set<String>? in
            guard let row = try db.query("SELECT id, initiator_uid FROM calls WHERE session_id = ? AND mode = 'call'", [.text(sessionId)]).first,
                  let id = row[0].int else { return nil }
            var parties = Set(try db.query("SELECT uid FROM call_members WHERE call_id = ?", [.int(id)]).compactMap { $0[0].text })
            if let initiator = row[1].text { parties.insert(initiator) }
            return parties
        }
    }

    /// One recording of `sessionId` and the call it belongs to (nil: no such recording of that session).
    public func recording(sessionId: String, rid: String) throws(DatabaseError) -> (recording: StoredRecording, call: StoredCall)? {
        try locked { () throws(DatabaseError) -> (recording: StoredRecording, call: StoredCall)? in
            guard let row = try db.query("SELECT call_id FROM recordings WHERE rid = ? AND session_id = ?", [.text(rid), .text(sessionId)]).first,
                  let callID = row[0].int, let call = try loadCall(id: callID),
                  let recording = call.recordings.first(where: { $0.rid == rid }) else { return nil }
            return (recording, call)
        }
    }
}

