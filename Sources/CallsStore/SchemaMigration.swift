import CallsDatabase
/// One step of the store's schema, from `version - 1` to `version`: SQL run in the same
/// transaction as every other pending step and the new `schema_version`. Steps are never edited
/// once released; a change is a new step at the end of `all`. A value; any thread.
///
/// The statements are SQLite's dialect; on PostgreSQL they are translated (`PostgresDialect`)
/// and followed by `postgresAlso`: what SQLite gives every table for free (`rowid`, as a `seq`
/// BIGSERIAL column where queries order by it).
package struct SchemaMigration: Sendable {
    package let version: Int64
    package let statements: [String]
    package var postgresAlso: [String] = []

    /// The statements to run on `kind`.
    package func statements(for kind: StoreDatabaseKind) -> [String] {
        kind == .postgres ? statements + postgresAlso : statements
    }

    /// Every step, oldest first. Version 1 is the first release's schema (its statements are
    /// idempotent, so databases made before `schema_version` was read take it as a no-op).
    package static let all: [SchemaMigration] = [v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14]

    package static let v1 = SchemaMigration(version: 1, statements: [
        """
        CREATE TABLE IF NOT EXISTS users(uid TEXT PRIMARY KEY, name TEXT NOT NULL, avatar TEXT,
            created_at INTEGER NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS auth_tokens(token_hash TEXT PRIMARY KEY,
            uid TEXT NOT NULL REFERENCES users(uid) ON DELETE CASCADE, created_at INTEGER NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS calls(id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
            type TEXT NOT NULL, mode TEXT NOT NULL, status TEXT NOT NULL, initiated_at INTEGER NOT NULL,
            started_at INTEGER, ended_at INTEGER, last_seen_at INTEGER)
        """,
        "CREATE INDEX IF NOT EXISTS calls_session ON calls(session_id)",
        """
        CREATE TABLE IF NOT EXISTS call_participants(id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id INTEGER NOT NULL REFERENCES calls(id), uid TEXT NOT NULL, pid TEXT NOT NULL,
            name TEXT NOT NULL, joined_at INTEGER NOT NULL, left_at INTEGER)
        """,
        "CREATE INDEX IF NOT EXISTS call_participants_call ON call_participants(call_id)",
        """
        CREATE TABLE IF NOT EXISTS chat_messages(id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id INTEGER NOT NULL REFERENCES calls(id), uid TEXT NOT NULL, pid TEXT NOT NULL,
            name TEXT NOT NULL, text TEXT NOT NULL, sent_at INTEGER NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS chat_messages_call ON chat_messages(call_id)",
        """
        CREATE TABLE IF NOT EXISTS transcripts(id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id INTEGER NOT NULL REFERENCES calls(id), tid TEXT NOT NULL, start_time INTEGER NOT NULL,
            end_time INTEGER NOT NULL, url TEXT NOT NULL, meta TEXT)
        """,
    ])

    /// Ringing calls (who called whom, each member's outcome) and groups.
    package static let v2 = SchemaMigration(version: 2, statements: [
        "ALTER TABLE calls ADD COLUMN initiator_uid TEXT",
        "ALTER TABLE calls ADD COLUMN receiver_id TEXT",
        "ALTER TABLE calls ADD COLUMN receiver_type TEXT",
        "ALTER TABLE calls ADD COLUMN ring_timeout_s INTEGER",
        """
        CREATE TABLE call_members(call_id INTEGER NOT NULL REFERENCES calls(id), uid TEXT NOT NULL,
            outcome TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY(call_id, uid))
        """,
        """
        CREATE TABLE groups(guid TEXT PRIMARY KEY, name TEXT NOT NULL, owner_uid TEXT NOT NULL,
            created_at INTEGER NOT NULL)
        """,
        """
        CREATE TABLE group_members(guid TEXT NOT NULL REFERENCES groups(guid) ON DELETE CASCADE,
            uid TEXT NOT NULL, joined_at INTEGER NOT NULL, PRIMARY KEY(guid, uid))
        """,
    ], postgresAlso: ["ALTER TABLE call_members ADD COLUMN seq BIGSERIAL"])

    /// The webhook outbox: one row per event per webhook, written with the transition.
    package static let v3 = SchemaMigration(version: 3, statements: [
        """
        CREATE TABLE webhook_deliveries(id INTEGER PRIMARY KEY AUTOINCREMENT, delivery_id TEXT NOT NULL UNIQUE,
            webhook_id TEXT NOT NULL, url TEXT NOT NULL, session_id TEXT NOT NULL, trigger TEXT NOT NULL, body TEXT NOT NULL,
            created_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending', last_status INTEGER, last_error TEXT, delivered_at INTEGER)
        """,
        "CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at)",
        // A session's earlier pending delivery (per-session order) is an index look-up, not a scan.
        "CREATE INDEX webhook_deliveries_order ON webhook_deliveries(webhook_id, session_id, status, id)",
    ])

    /// Push tokens per user and the push outbox (one row per push per token).
    package static let v4 = SchemaMigration(version: 4, statements: [
        """
        CREATE TABLE push_tokens(platform TEXT NOT NULL, token TEXT NOT NULL, uid TEXT NOT NULL, app_bundle_id TEXT,
            created_at INTEGER NOT NULL, PRIMARY KEY(platform, token))
        """,
        "CREATE INDEX push_tokens_uid ON push_tokens(uid)",
        """
        CREATE TABLE push_deliveries(id INTEGER PRIMARY KEY AUTOINCREMENT, push_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,
            uid TEXT NOT NULL, platform TEXT NOT NULL, token TEXT NOT NULL, topic TEXT, action TEXT NOT NULL, body TEXT NOT NULL,
            created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending', last_status INTEGER, last_reason TEXT,
            provider_id TEXT, sent_at INTEGER)
        """,
        "CREATE INDEX push_deliveries_due ON push_deliveries(status, next_attempt_at)",
        "CREATE INDEX push_deliveries_token ON push_deliveries(session_id, token, status)",
    ], postgresAlso: ["ALTER TABLE push_tokens ADD COLUMN seq BIGSERIAL"])

    /// Webhooks added over REST (beside the config file's), and the per-webhook pending count
    /// the queue bound reads.
    package static let v5 = SchemaMigration(version: 5, statements: [
        """
        CREATE TABLE webhooks(id TEXT PRIMARY KEY, url TEXT NOT NULL, secret TEXT NOT NULL, triggers TEXT,
            created_at INTEGER NOT NULL)
        """,
        "CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(webhook_id, status, id)",
    ])

    /// Revoked call tokens: per user, tokens issued before `not_before` (seconds) are refused.
    package static let v6 = SchemaMigration(version: 6, statements: [
        "CREATE TABLE token_revocations(uid TEXT PRIMARY KEY, not_before INTEGER NOT NULL)",
    ])

    /// The operator's rules per room (JSON of `RoomRules`: moderation, passcode hash, allow-list).
    package static let v7 = SchemaMigration(version: 7, statements: [
        "CREATE TABLE room_rules(session_id TEXT PRIMARY KEY, rules TEXT NOT NULL, updated_at INTEGER NOT NULL)",
    ])

    /// Recordings of calls (the server's recorder) and their files (the mixed room, one per participant).
    package static let v8 = SchemaMigration(version: 8, statements: [
        """
        CREATE TABLE recordings(rid TEXT PRIMARY KEY, call_id INTEGER NOT NULL REFERENCES calls(id), session_id TEXT NOT NULL,
            started_at INTEGER NOT NULL, ended_at INTEGER, duration_ms INTEGER, bytes INTEGER)
        """,
        "CREATE INDEX recordings_call ON recordings(call_id)",
        """
        CREATE TABLE recording_files(rid TEXT NOT NULL REFERENCES recordings(rid), name TEXT NOT NULL, kind TEXT NOT NULL,
            uid TEXT, pid TEXT, duration_ms INTEGER NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY(rid, name))
        """,
    ])

    /// Calls owned by a node (several nodes on one database), and a call an unclean stop cut
    /// kept reopenable in the store rather than in one process's memory (any node may restart it).
    package static let v9 = SchemaMigration(version: 9, statements: [
        "ALTER TABLE calls ADD COLUMN node_id TEXT",
        "ALTER TABLE calls ADD COLUMN reopenable_until INTEGER",
    ])

    /// Whether a participant moderated the call (at any time): moderators fetch every recording,
    /// transcript and message of it; others only what overlaps their presence.
    package static let v10 = SchemaMigration(version: 10, statements: [
        "ALTER TABLE call_participants ADD COLUMN moderated INTEGER",
        // One auth token revoked: the call tokens minted with it (`atid`) stop working.
        "CREATE TABLE IF NOT EXISTS auth_token_revocations(token_id TEXT PRIMARY KEY, revoked_at INTEGER NOT NULL)",
        // Invite grants: the link carries the id; uses and revocation are kept here.
        """
        CREATE TABLE IF NOT EXISTS invites(invite_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
            created_by TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, max_uses INTEGER,
            uses INTEGER NOT NULL DEFAULT 0, revoked_at INTEGER)
        """,
        "CREATE INDEX IF NOT EXISTS invites_session ON invites(session_id)",
    ])

    /// Files bound for object storage (recordings, transcripts): a persistent queue of uploads
    /// and deletions — one row per file, `key` relative to the data directory and the bucket's
    /// prefix, `owner` the recording or transcript, `node_id` the node that holds the file.
    package static let v11 = SchemaMigration(version: 11, statements: [
        """
        CREATE TABLE stored_objects(key TEXT PRIMARY KEY, kind TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL,
            node_id TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL,
            last_error TEXT, bytes INTEGER, stored_at INTEGER)
        """,
        "CREATE INDEX stored_objects_owner ON stored_objects(owner)",
        "CREATE INDEX stored_objects_due ON stored_objects(state, next_at)",
    ])

    /// Which recording files carry video (a participant's WebM: VP8 and Opus).
    package static let v12 = SchemaMigration(version: 12, statements: [
        "ALTER TABLE recording_files ADD COLUMN video INTEGER",
    ])

    /// Rows looked up by a column no index had, each a scan of the whole table under the store's
    /// lock: transcripts by their call (the call log's `hasTranscription` filter, retention's
    /// "has this call a transcript" — 3.3 s on 300,000 calls and 30,000 transcripts, 0.04 s with
    /// the index) and by their id (one's end, its removal); a user's auth tokens (every login
    /// keeps the newest 100 — 103 ms a login among a million tokens, 1 ms with it; revocation);
    /// a user's groups and the groups a user owns (the 100-owned cap on every new group).
    package static let v13 = SchemaMigration(version: 13, statements: [
        "CREATE INDEX transcripts_call ON transcripts(call_id)",
        "CREATE INDEX transcripts_tid ON transcripts(tid)",
        "CREATE INDEX auth_tokens_uid ON auth_tokens(uid, created_at)",
        "CREATE INDEX group_members_uid ON group_members(uid)",
        "CREATE INDEX groups_owner ON groups(owner_uid)",
    ])

    /// Auth tokens by age: retention forgets those past `authTokenTTLSeconds` a page at a time,
    /// each page found without walking every token.
    package static let v14 = SchemaMigration(version: 14, statements: [
        "CREATE INDEX auth_tokens_created ON auth_tokens(created_at)",
    ])
}
