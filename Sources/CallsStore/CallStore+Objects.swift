import CallsCore
import CallsDatabase

/// One file bound for object storage, or in it (`stored_objects`): the persistent queue the
/// server's uploader works through, so an upload a crash cut is made again after the restart.
public struct StoredObject: Sendable, Equatable {
    /// What is to be done with it, or was done.
    public enum State: String, Sendable {
        /// To be uploaded (by the node that holds the file).
        case upload
        /// In the bucket.
        case stored
        /// To be deleted from the bucket (its recording is past retention), by any node.
        case delete
    }

    public enum Kind: String, Sendable {
        case recording, transcript
    }

    /// Relative to the data directory and to the bucket's prefix alike: `recordings/{rid}/{name}`,
    /// `transcripts/{name}`.
    public var key: String
    public var kind: Kind
    /// The recording (`rid`) or transcript (`tid`) it belongs to.
    public var owner: String
    public var name: String
    /// The node that holds the file (nil: a single node).
    public var nodeID: String?
    public var state: State
    /// Failed attempts so far.
    public var attempts: Int
    public var lastError: String?
    /// Its size once stored.
    public var bytes: Int64? = nil

    /// An error as its row keeps it (at most 300 characters).
    public static func errorText(_ error: String) -> String { String(error.prefix(300)) }

    /// The key of file `name` of recording `rid` or of a transcript.
    public static func key(_ kind: Kind, owner: String, name: String) -> String {
        kind == .recording ? "recordings/\(owner)/\(name)" : "transcripts/\(name)"
    }
}

extension CallStore {
    /// (Under the lock, inside the caller's transaction.) Queues files `names` of `owner` for
    /// upload when object storage is on; a file queued before (a recording finalised again)
    /// is queued afresh.
    func queueUploads(_ kind: StoredObject.Kind, owner: String, names: [String], now: Int64) throws(DatabaseError) {
        guard uploads else { return }
        let node: DatabaseValue = self.owner.map { .text($0) } ?? .null
        for name in names {
            try db.execute("""
                INSERT INTO stored_objects(key, kind, owner, name, node_id, state, attempts, next_at) VALUES (?, ?, ?, ?, ?, 'upload', 0, ?)
                ON CONFLICT(key) DO UPDATE SET state = 'upload', attempts = 0, next_at = excluded.next_at, node_id = excluded.node_id, last_error = NULL
                """, [.text(StoredObject.key(kind, owner: owner, name: name)), .text(kind.rawValue), .text(owner), .text(name), node, .int(now)])
        }
    }

    /// (Under the lock, inside the caller's transaction.) Every object of `owners` to be deleted
    /// from the bucket (one never uploaded too: an upload may be under way).
    func queueDeletions(_ kind: StoredObject.Kind, owners: [String], now: Int64) throws(DatabaseError) {
        for owner in owners {
            try db.execute("UPDATE stored_objects SET state = 'delete', attempts = 0, next_at = ?, last_error = NULL WHERE kind = ? AND owner = ?",
                           [.int(now), .text(kind.rawValue), .text(owner)])
        }
    }

    /// Uploads and deletions due at `now`, this node's first (`nodeID`; nil: those of no node),
    /// then the oldest; at most `limit`.
    package func dueObjects(now: Int64, nodeID: String?, limit: Int) throws(DatabaseError) -> [StoredObject] {
        try locked { () throws(DatabaseError) in
            try db.query("""
                SELECT key, kind, owner, name, node_id, state, attempts, last_error FROM stored_objects
                WHERE state IN ('upload', 'delete') AND next_at <= ?
                ORDER BY CASE WHEN node_id = ? OR (node_id IS NULL AND ? = '') THEN 0 ELSE 1 END, next_at LIMIT ?
                """, [.int(now), .text(nodeID ?? ""), .text(nodeID ?? ""), .int(Int64(limit))]).compactMap { row in
                guard let key = row[0].text, let kind = row[1].text.flatMap(StoredObject.Kind.init(rawValue:)),
                      let state = row[5].text.flatMap(StoredObject.State.init(rawValue:)) else { return nil }
                return StoredObject(key: key, kind: kind, owner: row[2].text ?? "", name: row[3].text ?? "", nodeID: row[4].text,
                                    state: state, attempts: Int(row[6].int ?? 0), lastError: row[7].text)
            }
        }
    }

    /// The upload of `key` landed (`nodeID` made it). A file whose recording went past retention
    /// meanwhile stays queued for deletion.
    package func objectStored(key: String, bytes: Int64, nodeID: String?, now: Int64) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("""
                UPDATE stored_objects SET state = 'stored', bytes = ?, stored_at = ?, node_id = ?, last_error = NULL
                WHERE key = ? AND state = 'upload'
                """, [.int(bytes), .int(now), nodeID.map { .text($0) } ?? .null, .text(key)])
        }
    }

    /// An attempt at `key` failed: tried again at `retryAt`.
    package func objectFailed(key: String, error: String, retryAt: Int64) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("UPDATE stored_objects SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE key = ? AND state <> 'stored'",
                           [.int(retryAt), .text(StoredObject.errorText(error)), .text(key)])
        }
    }

    /// The object of `key` is gone from the bucket: its row too.
    package func objectDeleted(key: String) throws(DatabaseError) {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM stored_objects WHERE key = ? AND state = 'delete'", [.text(key)])
        }
    }

    /// The row of `key` (nil: never queued — object storage off, or an older file).
    package func storedObject(key: String) throws(DatabaseError) -> StoredObject? {
        try locked { () throws(DatabaseError) in
            guard let row = try db.query("SELECT kind, owner, name, node_id, state, attempts, last_error, bytes FROM stored_objects WHERE key = ?",
                                         [.text(key)]).first,
                  let kind = row[0].text.flatMap(StoredObject.Kind.init(rawValue:)),
                  let state = row[4].text.flatMap(StoredObject.State.init(rawValue:)) else { return nil }
            return StoredObject(key: key, kind: kind, owner: row[1].text ?? "", name: row[2].text ?? "", nodeID: row[3].text,
                                state: state, attempts: Int(row[5].int ?? 0), lastError: row[6].text, bytes: row[7].int)
        }
    }

    /// How many rows are in each state (for `/metrics`).
    package func objectCounts() throws(DatabaseError) -> [StoredObject.State: Int] {
        try locked { () throws(DatabaseError) in
            var out: [StoredObject.State: Int] = [:]
            for row in try db.query("SELECT state, COUNT(*) FROM stored_objects GROUP BY state") {
                if let s = row[0].text.flatMap(StoredObject.State.init(rawValue:)) { out[s] = Int(row[1].int ?? 0) }
            }
            return out
        }
    }
}
