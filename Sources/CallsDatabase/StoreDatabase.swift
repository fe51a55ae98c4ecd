import Foundation

/// Errors from the store's database (SQLite or PostgreSQL), with the library's message.
public enum DatabaseError: Error, Equatable, Sendable, CustomStringConvertible {
    case open(path: String, message: String)
    case prepare(sql: String, message: String)
    case step(message: String)
    /// The database's schema cannot be used by this build (too new, or a migration gap).
    case schema(String)
    /// The database server cannot be reached (PostgreSQL down, or the connection lost and not
    /// re-established): nothing was written; the next operation tries to connect again.
    case unavailable(String)
    /// The disk holding the database is full (SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full`,
    /// 53100): nothing was written; writes work again once there is room.
    case full(message: String)

    /// The disk is full (`full`): said as such to whoever asked, not as a broken database.
    public var isFull: Bool { if case .full = self { return true }; return false }

    public var description: String {
        switch self {
        case .open(let p, let m): return "cannot open database \(p): \(m)"
        case .prepare(let s, let m): return "cannot prepare \(s.prefix(60)): \(m)"
        case .step(let m), .full(let m): return "database error: \(m)"
        case .schema(let m): return "database schema: \(m)"
        case .unavailable(let m): return "database unavailable: \(m)"
        }
    }
}

/// A value bound to or read from a statement.
public enum DatabaseValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case real(Double)

    public var int: Int64? { if case .int(let v) = self { return v }; return nil }
    public var text: String? { if case .text(let v) = self { return v }; return nil }
}


/// Which engine holds the store.
public enum StoreDatabaseKind: String, Sendable {
    case sqlite
    case postgres
}

/// One connection to the store's database: what `CallStore` needs, from SQLite (embedded, the
/// default: `SQLiteDatabase`) or PostgreSQL (several nodes: `PostgresDatabase`). Statements are
/// written once, in SQLite's dialect with `?` parameters; PostgreSQL's connection translates them
/// (`PostgresDialect`). Both keep `CallStore`'s semantics: `transaction` commits when the body
/// returns and rolls back when it throws; savepoints nest inside it.
///
/// Thread rules: a connection is not thread-safe; `CallStore` serialises every use on its lock.
public protocol StoreDatabase: AnyObject, Sendable {
    var kind: StoreDatabaseKind { get }
    /// Where it is (a file path, or a PostgreSQL URL without its password).
    var location: String { get }
    /// Runs one statement and returns every row.
    @discardableResult
    func query(_ sql: String, _ params: [DatabaseValue]) throws(DatabaseError) -> [[DatabaseValue]]
    /// The row id the last INSERT into a table with an id column made.
    var lastInsertRowID: Int64 { get }
    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { get }
    /// Runs `body` in one transaction (committed when it returns, rolled back when it throws).
    func transaction<T>(_ body: () throws(DatabaseError) -> T) throws(DatabaseError) -> T
    /// Schema migrations run under this: one node migrates while the others wait (PostgreSQL's
    /// advisory lock; SQLite's file lock is the transaction's own).
    func migrationLock() throws(DatabaseError)
}

extension StoreDatabase {
    @discardableResult
    public func query(_ sql: String) throws(DatabaseError) -> [[DatabaseValue]] { try query(sql, []) }
    public func execute(_ sql: String, _ params: [DatabaseValue] = []) throws(DatabaseError) { try query(sql, params) }
}
