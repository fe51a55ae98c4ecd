import CSQLite
import Foundation

/// One SQLite connection that owns its handle (closed on deinit): the embedded store, the
/// default. SQL is written in SQLite's dialect (`PostgresDatabase` translates it).
///
/// Thread rules: not thread-safe on its own; `CallStore` serialises every use on its lock.
/// Opened in WAL mode with `synchronous=FULL`, so a committed transaction survives `kill -9`
/// and power loss.
public final class SQLiteDatabase: StoreDatabase, @unchecked Sendable {
    public var kind: StoreDatabaseKind { .sqlite }
    public var location: String { path }
    private var handle: OpaquePointer?
    public let path: String

    public init(path: String, readOnly: Bool = false) throws(DatabaseError) {
        self.path = path
        var db: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw .open(path: path, message: msg)
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        if !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=FULL")
        }
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit { sqlite3_close(handle) }

    /// Runs one statement and returns every row.
    @discardableResult
    public func query(_ sql: String, _ params: [DatabaseValue] = []) throws(DatabaseError) -> [[DatabaseValue]] {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw .prepare(sql: sql, message: lastError)
        }
        defer { sqlite3_finalize(stmt) }
        for (i, p) in params.enumerated() {
            let idx = Int32(i + 1)
            switch p {
            case .null: sqlite3_bind_null(stmt, idx)
            case .int(let v): sqlite3_bind_int64(stmt, idx, v)
            case .real(let v): sqlite3_bind_double(stmt, idx, v)
            case .text(let v): sqlite3_bind_text(stmt, idx, v, -1, callroom_sqlite_transient())
            }
        }
        var rows: [[DatabaseValue]] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw rc == SQLITE_FULL ? .full(message: lastError) : .step(message: lastError) }
            let n = sqlite3_column_count(stmt)
            var row: [DatabaseValue] = []
            row.reserveCapacity(Int(n))
            for c in 0..<n {
                switch sqlite3_column_type(stmt, c) {
                case SQLITE_INTEGER: row.append(.int(sqlite3_column_int64(stmt, c)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(stmt, c)))
                case SQLITE_NULL: row.append(.null)
                default:
                    if let t = sqlite3_column_text(stmt, c) { row.append(.text(String(cString: t))) } else { row.append(.null) }
                }
            }
            rows.append(row)
        }
        return rows
    }

    public func migrationLock() throws(DatabaseError) {}

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` in one transaction (committed when it returns, rolled back when it throws).
    public func transaction<T>(_ body: () throws(DatabaseError) -> T) throws(DatabaseError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let v = try body()
            try execute("COMMIT")
            return v
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private var lastError: String { String(cString: sqlite3_errmsg(handle)) }
}
