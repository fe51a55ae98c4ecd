import CPostgres
import Foundation

/// One PostgreSQL connection through libpq that owns it (closed on deinit): the store shared by
/// several callroomd nodes. The store's SQL is translated once per statement text
/// (`PostgresDialect`, cached) and sent with `PQexecParams`, each parameter as text with its type
/// (int8, float8, text; NULL untyped); results come back by column type (integers, floats, text).
///
/// A lost connection (the server restarted, or was down) is re-established on the next
/// statement outside a transaction; a statement that cannot be sent fails with `.unavailable`
/// and writes nothing (inside a transaction the whole transaction fails and is rolled back by
/// the server), so callers see a clear error and lose no committed data.
///
/// Thread rules: not thread-safe on its own; `CallStore` serialises every use on its lock.
public final class PostgresDatabase: StoreDatabase, @unchecked Sendable {
    public var kind: StoreDatabaseKind { .postgres }
    public let location: String
    private let conninfo: String
    private var conn: OpaquePointer?
    private var translated: [String: String] = [:]
    private var inTransaction = false
    public private(set) var changes = 0
    private var lastID: Int64 = 0

    /// - Parameter url: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?host=/socket/dir]` or
    ///   any libpq connection string.
    public init(url: String) throws(DatabaseError) {
        conninfo = url
        location = Self.redacted(url)
        try connect()
    }

    deinit { PQfinish(conn) }

    /// The URL without its password (for logs and errors).
    package static func redacted(_ url: String) -> String {
        guard var c = URLComponents(string: url), c.password != nil else { return url }
        c.password = "***"
        return c.string ?? url
    }

    private func connect() throws(DatabaseError) {
        PQfinish(conn)
        conn = PQconnectdb(conninfo)
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let message = conn.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(conn)
            self.conn = nil
            throw .unavailable("\(location): \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        // Quiet NOTICEs (CREATE … IF NOT EXISTS says "already exists" on every start).
        _ = PQexec(conn, "SET client_min_messages = warning").map { PQclear($0) }
    }

    /// The connection failed under a statement: it is dropped, so the next statement (outside a
    /// transaction) connects afresh. libpq can report "server closed the connection" and still
    /// say CONNECTION_OK until it reads again — without this the first statement after the
    /// server returns failed too.
    private func lost(_ c: OpaquePointer, _ message: String) -> DatabaseError {
        let error = DatabaseError.unavailable("\(location): \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        if conn == c {
            PQfinish(c)
            conn = nil
        }
        return error
    }

    /// A live connection: reconnects when it was lost (only between transactions).
    private func live() throws(DatabaseError) -> OpaquePointer {
        if let conn, PQstatus(conn) == CONNECTION_OK { return conn }
        guard !inTransaction else { throw .unavailable("\(location): the connection was lost during a transaction (rolled back)") }
        try connect()
        guard let conn else { throw .unavailable(location) }
        return conn
    }

    @discardableResult
    public func query(_ sql: String, _ params: [DatabaseValue]) throws(DatabaseError) -> [[DatabaseValue]] {
        let text: String
        if let t = translated[sql] { text = t } else {
            text = PostgresDialect.translate(sql)
            translated[sql] = text
        }
        let c = try live()
        let strings: [String?] = params.map { p in
            switch p {
            case .null: return nil
            case .int(let v): return String(v)
            case .real(let v): return String(v)
            case .text(let v): return v
            }
        }
        let types: [UInt32] = params.map { p in
            switch p {
            case .null: return 0
            case .int: return 20  // int8
            case .real: return 701  // float8
            case .text: return 25  // text
            }
        }
        let result = Self.withCStrings(strings) { ptrs in
            types.withUnsafeBufferPointer { t in PQexecParams(c, text, Int32(ptrs.count), t.baseAddress, ptrs, nil, nil, 0) }
        }
        defer { PQclear(result) }
        guard let result else { throw lost(c, String(cString: PQerrorMessage(c))) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK:
            changes = Int(String(cString: PQcmdTuples(result))) ?? 0
            if text.uppercased().hasPrefix("INSERT") { lastID = (try? insertedID(c)) ?? lastID }
            return []
        case PGRES_TUPLES_OK:
            changes = Int(String(cString: PQcmdTuples(result))) ?? 0
            return rows(result)
        default:
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            if PQstatus(c) != CONNECTION_OK || Self.isConnectionFailure(result) { throw lost(c, message) }
            if Self.sqlState(result) == "53100" { throw .full(message: message) }  // disk_full
            throw .step(message: message)
        }
    }

    /// A failure of the connection rather than of the statement: libpq's own (no SQLSTATE: the
    /// server went away mid-statement), class 08 (connection exception), or the server shutting
    /// down or starting (57P01–57P03).
    package static func isConnectionFailure(_ r: OpaquePointer) -> Bool {
        guard let state = sqlState(r) else { return true }
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
    }

    /// The result's SQLSTATE (nil: an error of libpq's own).
    static func sqlState(_ r: OpaquePointer) -> String? {
        PQresultErrorField(r, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
    }

    /// `lastval()` after an INSERT into a table with a sequence; the previous id otherwise.
    private func insertedID(_ c: OpaquePointer) throws(DatabaseError) -> Int64 {
        // A savepoint keeps a failing lastval() (a table without a sequence) from aborting the transaction.
        let r = PQexec(c, inTransaction ? "SAVEPOINT callroom_lastval; SELECT lastval()" : "SELECT lastval()")
        defer { PQclear(r) }
        let ok = r.map { PQresultStatus($0) == PGRES_TUPLES_OK && PQntuples($0) == 1 } ?? false
        if inTransaction { PQclear(PQexec(c, ok ? "RELEASE SAVEPOINT callroom_lastval" : "ROLLBACK TO SAVEPOINT callroom_lastval; RELEASE SAVEPOINT callroom_lastval")) }
        guard ok, let r, let v = PQgetvalue(r, 0, 0), let id = Int64(String(cString: v)) else { return lastID }
        return id
    }

    private func rows(_ r: OpaquePointer) -> [[DatabaseValue]] {
        let n = PQntuples(r), f = PQnfields(r)
        var out: [[DatabaseValue]] = []
        out.reserveCapacity(Int(n))
        for i in 0..<n {
            var row: [DatabaseValue] = []
            row.reserveCapacity(Int(f))
            for j in 0..<f {
                guard PQgetisnull(r, i, j) == 0, let v = PQgetvalue(r, i, j) else { row.append(.null); continue }
                let s = String(cString: v)
                switch PQftype(r, j) {
                case 20, 21, 23, 26: row.append(Int64(s).map { .int($0) } ?? .text(s))  // int8, int2, int4, oid
                case 16: row.append(.int(s == "t" ? 1 : 0))  // bool
                case 700, 701: row.append(Double(s).map { .real($0) } ?? .text(s))  // float4, float8
                case 1700: row.append(Int64(s).map { .int($0) } ?? Double(s).map { .real($0) } ?? .text(s))  // numeric (SUM of integers)
                default: row.append(.text(s))
                }
            }
            out.append(row)
        }
        return out
    }

    public var lastInsertRowID: Int64 { lastID }

    public func transaction<T>(_ body: () throws(DatabaseError) -> T) throws(DatabaseError) -> T {
        try query("BEGIN", [])
        inTransaction = true
        defer { inTransaction = false }
        do {
            let v = try body()
            try query("COMMIT", [])
            return v
        } catch {
            if let conn, PQstatus(conn) == CONNECTION_OK { PQclear(PQexec(conn, "ROLLBACK")) }
            throw error
        }
    }

    /// Held until the transaction ends: nodes starting together migrate one at a time.
    public func migrationLock() throws(DatabaseError) {
        try query("SELECT pg_advisory_xact_lock(7243101)", [])
    }

    /// Calls `body` with C strings for `strings` (nil stays NULL), valid for the call.
    private static func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let owned = strings.map { $0.map { strdup($0) } ?? nil }
        defer { owned.forEach { free($0) } }
        return body(owned.map { $0.map { UnsafePointer($0) } })
    }
}
