import CallsCore
import CallsSecurity
import Foundation

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
}

/// One join of one participant (device) to a call.
public struct StoredCallParticipant: Sendable, Equatable {
    public var id: Int64
    public var uid: String
    public var pid: String
    public var name: String
    public var joinedAt: Int64
    public var leftAt: Int64?
}

/// The server's durable state in SQLite (WAL): users, hashed auth tokens, calls and their
/// participants. Every method is synchronous and serialised on an internal lock, so it may be
/// called from any thread; callers keep it off the relay and web service threads.
public final class CallStore: @unchecked Sendable {
    let db: SQLiteDatabase
    private let lock = NSLock()
    /// Operation counts and latency, for `/metrics`.
    public let metrics = StoreMetrics()
    public static let schemaVersion: Int64 = 1

    public init(path: String) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path)
        try migrate()
    }

    private func migrate() throws(SQLiteError) {
        try db.transaction { () throws(SQLiteError) in
            try db.execute("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS users(uid TEXT PRIMARY KEY, name TEXT NOT NULL, avatar TEXT,
                    created_at INTEGER NOT NULL)
                """)
            try db.execute("""
                CREATE TABLE IF NOT EXISTS auth_tokens(token_hash TEXT PRIMARY KEY,
                    uid TEXT NOT NULL REFERENCES users(uid) ON DELETE CASCADE, created_at INTEGER NOT NULL)
                """)
            try db.execute("""
                CREATE TABLE IF NOT EXISTS calls(id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                    type TEXT NOT NULL, mode TEXT NOT NULL, status TEXT NOT NULL, initiated_at INTEGER NOT NULL,
                    started_at INTEGER, ended_at INTEGER, last_seen_at INTEGER)
                """)
            try db.execute("CREATE INDEX IF NOT EXISTS calls_session ON calls(session_id)")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS call_participants(id INTEGER PRIMARY KEY AUTOINCREMENT,
                    call_id INTEGER NOT NULL REFERENCES calls(id), uid TEXT NOT NULL, pid TEXT NOT NULL,
                    name TEXT NOT NULL, joined_at INTEGER NOT NULL, left_at INTEGER)
                """)
            try db.execute("CREATE INDEX IF NOT EXISTS call_participants_call ON call_participants(call_id)")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS chat_messages(id INTEGER PRIMARY KEY AUTOINCREMENT,
                    call_id INTEGER NOT NULL REFERENCES calls(id), uid TEXT NOT NULL, pid TEXT NOT NULL,
                    name TEXT NOT NULL, text TEXT NOT NULL, sent_at INTEGER NOT NULL)
                """)
            try db.execute("CREATE INDEX IF NOT EXISTS chat_messages_call ON chat_messages(call_id)")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS transcripts(id INTEGER PRIMARY KEY AUTOINCREMENT,
                    call_id INTEGER NOT NULL REFERENCES calls(id), tid TEXT NOT NULL, start_time INTEGER NOT NULL,
                    end_time INTEGER NOT NULL, url TEXT NOT NULL, meta TEXT)
                """)
            let v = try db.query("SELECT version FROM schema_version").first?.first?.int
            if v == nil { try db.execute("INSERT INTO schema_version(version) VALUES (?)", [.int(Self.schemaVersion)]) }
        }
    }

    /// Runs `body` under the store lock, timing it (lock wait included) for `/metrics`.
    func locked<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
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
    public func createUser(uid: String, name: String, avatar: String? = nil, now: Int64 = epochMilliseconds()) throws(SQLiteError) -> StoredUser? {
        try locked { () throws(SQLiteError) in
            if try !db.query("SELECT 1 FROM users WHERE uid = ?", [.text(uid)]).isEmpty { return nil }
            try db.execute("INSERT INTO users(uid, name, avatar, created_at) VALUES (?, ?, ?, ?)",
                           [.text(uid), .text(name), avatar.map { .text($0) } ?? .null, .int(now)])
            return StoredUser(uid: uid, name: name, avatar: avatar, createdAt: now)
        }
    }

    public func user(uid: String) throws(SQLiteError) -> StoredUser? {
        try locked { () throws(SQLiteError) in
            try db.query("SELECT uid, name, avatar, created_at FROM users WHERE uid = ?", [.text(uid)]).first.map(Self.user)
        }
    }

    static func user(_ r: [SQLiteValue]) -> StoredUser {
        StoredUser(uid: r[0].text ?? "", name: r[1].text ?? "", avatar: r[2].text, createdAt: r[3].int ?? 0)
    }

    /// Issues a new auth token for `uid`; only its SHA-256 is stored. Returns the plaintext once.
    public func createAuthToken(uid: String, now: Int64 = epochMilliseconds()) throws(SQLiteError) -> String {
        let token = Crypto.randomHex(20)
        try locked { () throws(SQLiteError) in
            try db.execute("INSERT INTO auth_tokens(token_hash, uid, created_at) VALUES (?, ?, ?)",
                           [.text(Crypto.sha256Hex(token)), .text(uid), .int(now)])
        }
        return token
    }

    /// The user an auth token belongs to, or nil.
    public func user(authToken: String) throws(SQLiteError) -> StoredUser? {
        try locked { () throws(SQLiteError) in
            try db.query("""
                SELECT u.uid, u.name, u.avatar, u.created_at FROM auth_tokens t JOIN users u ON u.uid = t.uid
                WHERE t.token_hash = ?
                """, [.text(Crypto.sha256Hex(authToken))]).first.map(Self.user)
        }
    }

    // MARK: Calls

    /// Records the start of a call for `sessionId` and returns its row id.
    public func startCall(sessionId: String, type: String, mode: String, at now: Int64) throws(SQLiteError) -> Int64 {
        try locked { () throws(SQLiteError) in
            try db.execute("""
                INSERT INTO calls(session_id, type, mode, status, initiated_at, started_at, last_seen_at)
                VALUES (?, ?, ?, 'ongoing', ?, ?, ?)
                """, [.text(sessionId), .text(type), .text(mode), .int(now), .int(now), .int(now)])
            return db.lastInsertRowID
        }
    }

    public func endCall(id: Int64, at now: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                try db.execute("UPDATE call_participants SET left_at = ? WHERE call_id = ? AND left_at IS NULL", [.int(now), .int(id)])
                try db.execute("UPDATE calls SET status = 'ended', ended_at = ?, last_seen_at = ? WHERE id = ?",
                               [.int(now), .int(now), .int(id)])
            }
        }
    }

    public func participantJoined(callID: Int64, uid: String, pid: String, name: String, at now: Int64) throws(SQLiteError) -> Int64 {
        try locked { () throws(SQLiteError) in
            try db.execute("INSERT INTO call_participants(call_id, uid, pid, name, joined_at) VALUES (?, ?, ?, ?, ?)",
                           [.int(callID), .text(uid), .text(pid), .text(name), .int(now)])
            return db.lastInsertRowID
        }
    }

    public func participantLeft(rowID: Int64, at now: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try db.execute("UPDATE call_participants SET left_at = ? WHERE id = ? AND left_at IS NULL", [.int(now), .int(rowID)])
        }
    }

    /// Marks live calls as still live at `now`, so a crash loses at most one heartbeat of end time.
    public func heartbeat(callIDs: [Int64], at now: Int64) throws(SQLiteError) {
        guard !callIDs.isEmpty else { return }
        try locked { () throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                for id in callIDs { try db.execute("UPDATE calls SET last_seen_at = ? WHERE id = ?", [.int(now), .int(id)]) }
            }
        }
    }

    /// Closes calls left open by a crash, using the last heartbeat as the end time. Returns how many.
    @discardableResult
    public func closeInterruptedCalls() throws(SQLiteError) -> Int {
        try locked { () throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                let open = try db.query("SELECT id, COALESCE(last_seen_at, started_at, initiated_at) FROM calls WHERE ended_at IS NULL")
                for r in open {
                    guard let id = r[0].int, let end = r[1].int else { continue }
                    try db.execute("UPDATE call_participants SET left_at = MAX(joined_at, ?) WHERE call_id = ? AND left_at IS NULL",
                                   [.int(end), .int(id)])
                    try db.execute("UPDATE calls SET status = 'ended', ended_at = ? WHERE id = ?", [.int(end), .int(id)])
                }
                return open.count
            }
        }
    }

    /// The most recent call of `sessionId`, with its participants.
    public func latestCall(sessionId: String) throws(SQLiteError) -> StoredCall? {
        try locked { () throws(SQLiteError) in
            guard let id = try db.query("SELECT id FROM calls WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                                        [.text(sessionId)]).first?.first?.int else { return nil }
            return try loadCall(id: id)
        }
    }
}
