import CSQLite
import Foundation

/// Errors from SQLite, with the library's message.
public enum SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    case open(path: String, message: String)
    case prepare(sql: String, message: String)
    case step(message: String)
    /// The database's schema cannot be used by this build (too new, or a migration gap).
    case schema(String)

    public var description: String {
        switch self {
        case .open(let p, let m): return "cannot open database \(p): \(m)"
        case .prepare(let s, let m): return "cannot prepare \(s.prefix(60)): \(m)"
        case .step(let m): return "database error: \(m)"
        case .schema(let m): return "database schema: \(m)"
        }
    }
}

/// A value bound to or read from a statement.
public enum SQLiteValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case real(Double)

    public var int: Int64? { if case .int(let v) = self { return v }; return nil }
    public var text: String? { if case .text(let v) = self { return v }; return nil }
}

/// One SQLite connection that owns its handle (closed on deinit).
///
/// Thread rules: not thread-safe on its own; `CallStore` serialises every use on its queue.
/// Opened in WAL mode with `synchronous=FULL`, so a committed transaction survives `kill -9`
/// and power loss.
public final class SQLiteDatabase: @unchecked Sendable {
    private var handle: OpaquePointer?
    public let path: String

    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
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
    public func query(_ sql: String, _ params: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
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
        var rows: [[SQLiteValue]] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw .step(message: lastError) }
            let n = sqlite3_column_count(stmt)
            var row: [SQLiteValue] = []
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

    public func execute(_ sql: String, _ params: [SQLiteValue] = []) throws(SQLiteError) {
        try query(sql, params)
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` in one transaction (committed when it returns, rolled back when it throws).
    public func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
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
