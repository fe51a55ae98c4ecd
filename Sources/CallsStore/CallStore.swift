import CallsCore
import CallsSecurity
import Foundation
import CallsDatabase

/// A stored user.
public struct StoredUser: Sendable, Equatable, Codable {
    public var uid: String
    public var name: String
    public var avatar: String?
    public var createdAt: Int64
}

/// A stored call (one run of a session, from first join to last leave).
public struct StoredCall: Sendable, Equatable {
    public var id: Int64
    public var sessionId: String
    public var type: String
    public var mode: String
    public var status: String
    public var initiatedAt: Int64
    public var startedAt: Int64?
    public var endedAt: Int64?
    public var participants: [StoredCallParticipant]
    /// A listing's call with more participant rows than it carries (`CallStore.listedParticipants`):
    /// `participants` holds the first of them and the viewer's own, and these every row's span and
    /// the distinct users, so its totals count them all. Nil: `participants` is every row.
    public var allSpans: [Span]? = nil
    public var distinctUIDs: Int? = nil
    /// When one participant row was in the call (epoch ms; `leftAt` nil: still in it).
    public struct Span: Sendable, Equatable {
        public var joinedAt: Int64
        public var leftAt: Int64?
    }
    /// Ringing calls: who called whom (`user` or `group`); nil for meetings.
    public var initiator: CallPartyWire? = nil
    public var receiver: CallPartyWire? = nil
    public var receiverType: CallReceiverType? = nil
    /// Ringing calls: everyone it rang, with what became of them (empty for meetings).
    public var members: [CallMemberWire] = []
    /// The server's recordings of the call.
    public var recordings: [StoredRecording] = []
    /// The server's transcripts of the call (finished ones have an `endTime`).
    public var transcripts: [StoredTranscript] = []
}

/// A recording of a call and its files (under `DATA/recordings/{rid}/`).
public struct StoredRecording: Sendable, Equatable {
    public var rid: String
    public var sessionId: String
    public var startedAt: Int64
    public var endedAt: Int64?
    public var durationMs: Int64?
    public var files: [StoredRecordingFile]
}

public struct StoredRecordingFile: Sendable, Equatable {
    /// `mixed.opus`, or `{pid}.opus` for one participant.
    public var name: String
    /// `mixed` or `participant`.
    public var kind: String
    public var uid: String?
    public var pid: String?
    public var durationMs: Int64
    public var bytes: Int64
    /// Where it is kept (read from `stored_objects`; not written with the file's row).
    public var storage: FileStorage = .local
    /// A WebM with the participant's video beside their audio (else Ogg Opus, audio only).
    public var video = false
    public init(name: String, kind: String, uid: String?, pid: String?, durationMs: Int64, bytes: Int64) {
        self.name = name; self.kind = kind; self.uid = uid; self.pid = pid; self.durationMs = durationMs; self.bytes = bytes
    }
}

/// One join of one participant (device) to a call.
public struct StoredCallParticipant: Sendable, Equatable {
    public var id: Int64
    public var uid: String
    public var pid: String
    public var name: String
    public var joinedAt: Int64
    public var leftAt: Int64?
    /// They moderated the call (at any time).
    public var moderated: Bool = false
}

/// The server's durable state: users, hashed auth tokens, calls and their participants, groups,
/// the outboxes — in SQLite (WAL; the embedded default) or PostgreSQL (shared by several nodes),
/// behind `StoreDatabase`, with the same migrations. Every method is synchronous and serialised
/// on an internal lock, so it may be called from any thread; callers keep it off the relay and
/// web service threads.
public final class CallStore: @unchecked Sendable {
    package let db: any StoreDatabase
    private let lock = NSLock()
    /// A call an unclean shutdown cut (its row's `reopenable_until`) continues when its session
    /// is joined again within this window (clients rejoin after a restart, or on another node;
    /// the call log shows one call, not two).
    package static let reopenWindowMilliseconds: Int64 = 120_000
    /// The node whose rooms write here (`calls.node_id`), several nodes sharing the database;
    /// nil for one node. Set before the rooms start.
    public var nodeID: String? {
        get { lock.withLock { owner } }
        set { lock.withLock { owner = newValue } }
    }
    /// Under the lock (`nodeID`).
    package var owner: String?
    /// Object storage is configured: finished recordings' and transcripts' files are queued
    /// for upload (`stored_objects`) in the transaction that finishes them. Set before the rooms start.
    public var queuesUploads: Bool {
        get { lock.withLock { uploads } }
        set { lock.withLock { uploads = newValue } }
    }
    /// Under the lock (`queuesUploads`).
    package var uploads = false
    /// Operation counts and latency, for `/metrics`.
    public let metrics = StoreMetrics()
    /// The schema this build writes (the last migration's version).
    public static var schemaVersion: Int64 { SchemaMigration.all.last?.version ?? 0 }

    /// The SQLite store in the file at `path`.
    public convenience init(path: String) throws(DatabaseError) {
        try self.init(database: try SQLiteDatabase(path: path))
    }

    /// The store in `database` (SQLite or PostgreSQL), brought to the latest schema.
    public convenience init(database: any StoreDatabase) throws(DatabaseError) {
        try self.init(database: database, migrations: SchemaMigration.all)
    }

    package init(database: any StoreDatabase, migrations: [SchemaMigration]) throws(DatabaseError) {
        db = database
        try migrate(migrations)
    }

    /// Opens with another list of migrations (tests of the migration path).
    package convenience init(path: String, migrations: [SchemaMigration]) throws(DatabaseError) {
        try self.init(database: try SQLiteDatabase(path: path), migrations: migrations)
    }

    /// Which engine and where (a path, or the PostgreSQL URL without its password).
    public var databaseKind: StoreDatabaseKind { db.kind }
    public var databaseLocation: String { db.location }

    /// Brings the database to the last of `migrations`, all steps in one transaction: a failed
    /// step leaves the database as it was. A database written by a newer build is refused, not
    /// touched.
    private func migrate(_ migrations: [SchemaMigration]) throws(DatabaseError) {
        try db.transaction { () throws(DatabaseError) in
            try db.migrationLock()
            try db.execute("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)")
            let rows = try db.query("SELECT version FROM schema_version")
            let found = rows.compactMap { $0.first?.int }.max() ?? 0
            let latest = migrations.last?.version ?? 0
            guard found <= latest else {
                throw .schema("the database has schema \(found), written by a newer callroomd; this one knows schemas up to \(latest) "
                              + "and will not open it (upgrade callroomd, or restore a backup)")
            }
            var current = found
            for m in migrations where m.version > current {
                guard m.version == current + 1 else { throw .schema("schema migration to \(m.version) follows \(current): a step is missing") }
                for statement in m.statements(for: db.kind) { try db.execute(statement) }
                current = m.version
            }
            if rows.isEmpty {
                try db.execute("INSERT INTO schema_version(version) VALUES (?)", [.int(current)])
            } else if current != found || rows.count > 1 {
                try db.execute("DELETE FROM schema_version")
                try db.execute("INSERT INTO schema_version(version) VALUES (?)", [.int(current)])
            }
        }
    }

    /// The schema version stored in the database.
    public func storedSchemaVersion() throws(DatabaseError) -> Int64 {
        try locked { () throws(DatabaseError) in try db.query("SELECT MAX(version) FROM schema_version").first?.first?.int ?? 0 }
    }

    /// Runs `body` under the store lock, timing it (lock wait included) for `/metrics`.
    package func locked<T>(_ body: () throws(DatabaseError) -> T) throws(DatabaseError) -> T {
        let start = monotonicNanoseconds()
        lock.lock()
        var failed = true
        defer {
            lock.unlock()
            metrics.record(micros: (monotonicNanoseconds() - start) / 1000, failed: failed)
        }
        let v = try body()
        failed = false
        return v
    }

    // MARK: Users and auth tokens

    /// Creates a user; returns nil when the uid exists already.
    public func createUser(uid: String, name: String, avatar: String? = nil, now: Int64 = epochMilliseconds()) throws(DatabaseError) -> StoredUser? {
        try locked { () throws(DatabaseError) in
            if try !db.query("SELECT 1 FROM users WHERE uid = ?", [.text(uid)]).isEmpty { return nil }
            try db.execute("INSERT INTO users(uid, name, avatar, created_at) VALUES (?, ?, ?, ?)",
                           [.text(uid), .text(name), avatar.map { .text($0) } ?? .null, .int(now)])
            return StoredUser(uid: uid, name: name, avatar: avatar, createdAt: now)
        }
    }

    public func user(uid: String) throws(DatabaseError) -> StoredUser? {
        try locked { () throws(DatabaseError) in
            try db.query("SELECT uid, name, avatar, created_at FROM users WHERE uid = ?", [.text(uid)]).first.map(Self.user)
        }
    }

    package static func user(_ r: [DatabaseValue]) -> StoredUser {
        StoredUser(uid: r[0].text ?? "", name: r[1].text ?? "", avatar: r[2].text, createdAt: r[3].int ?? 0)
    }

    /// Issues a new auth token for `uid`; only its SHA-256 is stored. Returns the plaintext once,
    /// and the ids (`tokenId`) of the user's oldest tokens it pushed past `maxAuthTokensPerUser`:
    /// those are gone and recorded as revoked, as `deleteAuthToken` does — the caller ends what
    /// they opened. (Every login with the auth key, every `callroom` run, makes one: without a
    /// bound a user's rows grew for ever.)
    public func createAuthToken(uid: String, now: Int64 = epochMilliseconds()) throws(DatabaseError) -> (token: String, evicted: [String]) {
        let token = Crypto.randomHex(20)
        let evicted = try locked { () throws(DatabaseError) -> [String] in
            try db.transaction { () throws(DatabaseError) -> [String] in
                try db.execute("INSERT INTO auth_tokens(token_hash, uid, created_at) VALUES (?, ?, ?)",
                               [.text(Crypto.sha256Hex(token)), .text(uid), .int(now)])
                let old = try db.query("""
                    SELECT token_hash FROM auth_tokens WHERE uid = ? ORDER BY created_at DESC, token_hash DESC LIMIT 1000 OFFSET ?
                    """, [.text(uid), .int(Int64(maxAuthTokensPerUser))]).compactMap { $0[0].text }
                var evicted: [String] = []
                for hash in old { evicted.append(try revokeAuthTokenRow(hash: hash, at: now)) }
                return evicted
            }
        }
        return (token, evicted)
    }

    /// The user an auth token belongs to, or nil (also when it is older than `maxAgeSeconds`).
    public func user(authToken: String, maxAgeSeconds: Int64? = nil) throws(DatabaseError) -> StoredUser? {
        let oldest = maxAgeSeconds.map { epochMilliseconds() - $0 * 1000 } ?? 0
        return try locked { () throws(DatabaseError) in
            try db.query("""
                SELECT u.uid, u.name, u.avatar, u.created_at FROM auth_tokens t JOIN users u ON u.uid = t.uid
                WHERE t.token_hash = ? AND t.created_at >= ?
                """, [.text(Crypto.sha256Hex(authToken)), .int(oldest)]).first.map(Self.user)
        }
    }

    /// Records that `uid`'s call tokens issued before `notBefore` (seconds) no longer count.
    package func revokeTokens(uid: String, notBefore: Int64) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("""
                INSERT INTO token_revocations(uid, not_before) VALUES (?, ?)
                ON CONFLICT(uid) DO UPDATE SET not_before = max(token_revocations.not_before, excluded.not_before)
                """, [.text(uid), .int(notBefore)])
        }
    }

    /// Sets (nil: removes) a room's rules.
    package func setRoomRules(_ sessionId: String, _ rules: RoomRules?) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            if let rules, let json = try? JSONEncoder().encode(rules) {
                try db.execute("""
                    INSERT INTO room_rules(session_id, rules, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT(session_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at
                    """, [.text(sessionId), .text(String(decoding: json, as: UTF8.self)), .int(epochMilliseconds())])
            } else {
                try db.execute("DELETE FROM room_rules WHERE session_id = ?", [.text(sessionId)])
            }
        }
    }

    /// Every room's rules (loaded at start).
    package func allRoomRules() throws(DatabaseError) -> [String: RoomRules] {
        try locked { () throws(DatabaseError) in
            var out: [String: RoomRules] = [:]
            for r in try db.query("SELECT session_id, rules FROM room_rules") {
                if let id = r[0].text, let text = r[1].text, let rules = try? JSONDecoder().decode(RoomRules.self, from: Data(text.utf8)) { out[id] = rules }
            }
            return out
        }
    }

    /// Every revocation (loaded at start).
    package func tokenRevocations() throws(DatabaseError) -> [String: Int64] {
        try locked { () throws(DatabaseError) in
            var out: [String: Int64] = [:]
            for r in try db.query("SELECT uid, not_before FROM token_revocations") { out[r[0].text ?? ""] = r[1].int ?? 0 }
            return out
        }
    }

    // MARK: Calls

    // Calls, participants and chat are written by the rooms' `StoreWriter` (`commit`, in
    // CallStore+Batch.swift): the one place that SQL lives.

    /// Whose open calls `closeInterruptedCalls` closes.
    public enum CallOwners: Sendable, Equatable {
        /// Every open call (one node: whatever is open was cut by this server's last stop).
        case all
        /// Calls of these nodes (not those of no node: a ringing call's row before its room starts).
        case nodes(Set<String>)
    }

    /// Closes calls left open by a crash, using the last heartbeat as the end time, and notes
    /// them as reopenable until `now` + the window. Returns how many.
    @discardableResult
    public func closeInterruptedCalls(of owners: CallOwners = .all, now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) throws(DatabaseError) -> Int {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) in
                // Calls still ringing are the ring registry's to restore (`ringingCalls`), not ended here.
                var sql = """
                    SELECT id, COALESCE(last_seen_at, started_at, initiated_at) FROM calls
                    WHERE ended_at IS NULL AND NOT (mode = 'call' AND status = 'initiated')
                    """
                var args: [DatabaseValue] = []
                if case .nodes(let ids) = owners {
                    guard !ids.isEmpty else { return 0 }
                    sql += " AND node_id IN (" + Array(repeating: "?", count: ids.count).joined(separator: ", ") + ")"
                    args = ids.sorted().map { .text($0) }
                }
                let open = try db.query(sql, args)
                for r in open {
                    guard let id = r[0].int, let end = r[1].int else { continue }
                    try db.execute("UPDATE call_participants SET left_at = MAX(joined_at, ?) WHERE call_id = ? AND left_at IS NULL",
                                   [.int(end), .int(id)])
                    try db.execute("UPDATE calls SET status = 'ended', ended_at = ?, reopenable_until = ? WHERE id = ?",
                                   [.int(end), .int(now + Self.reopenWindowMilliseconds), .int(id)])
                }
                return open.count
            }
        }
    }

    /// The nodes owning open calls (several nodes: those of nodes that are gone are closed by
    /// the others).
    public func nodesWithOpenCalls() throws(DatabaseError) -> Set<String> {
        try locked { () throws(DatabaseError) in
            Set(try db.query("SELECT DISTINCT node_id FROM calls WHERE ended_at IS NULL AND node_id IS NOT NULL").compactMap { $0[0].text })
        }
    }

    /// A call by its row id, with its participants.
    package func call(id: Int64) throws(DatabaseError) -> StoredCall? {
        try locked { () throws(DatabaseError) in try loadCall(id: id) }
    }

    /// The most recent call of `sessionId`, with its participants.
    public func latestCall(sessionId: String) throws(DatabaseError) -> StoredCall? {
        try locked { () throws(DatabaseError) in
            guard let id = try db.query("SELECT id FROM calls WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                                        [.text(sessionId)]).first?.first?.int else { return nil }
            return try loadCall(id: id)
        }
    }
}
