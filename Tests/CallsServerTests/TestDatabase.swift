import CallRoomTestSupport
import CallsDatabase
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// One test's database: a SQLite file in a temporary directory, or a fresh database on the
/// process's throwaway PostgreSQL cluster (`PostgresCluster`). Opening it again gives the same
/// data, as a restart would. The PostgreSQL variant skips, saying why, only when PostgreSQL is
/// not installed (scripts/install-deps.sh installs it).
struct TestDatabase {
    let backend: StoreBackend
    let dir: TemporaryDirectory
    let url: String?

    init(_ backend: StoreBackend = .current) throws {
        self.backend = backend
        dir = TemporaryDirectory("callroom-store")
        switch backend {
        case .sqlite: url = nil
        case .postgres:
            guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
            url = try PostgresCluster.shared().createDatabase()
        }
    }

    var path: String { dir.file("db.sqlite") }

    func open() throws -> any StoreDatabase {
        if let url { return try PostgresDatabase(url: url) }
        return try SQLiteDatabase(path: path)
    }

    func store(migrations: [SchemaMigration] = SchemaMigration.all) throws -> CallStore {
        try CallStore(database: try open(), migrations: migrations)
    }

    /// Tables in the database, as the engine's own catalogue lists them.
    func tables() throws -> Set<String> {
        let db = try open()
        let sql = backend == .sqlite ? "SELECT name FROM sqlite_master WHERE type = 'table'"
            : "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        return Set(try db.query(sql).compactMap { $0.first?.text })
    }

    /// The columns of `table`.
    func columns(_ table: String) throws -> Set<String> {
        let db = try open()
        if backend == .sqlite { return Set(try db.query("PRAGMA table_info(\(table))").compactMap { $0[1].text }) }
        return Set(try db.query("SELECT column_name FROM information_schema.columns WHERE table_name = ?", [.text(table)]).compactMap { $0.first?.text })
    }

    func remove() { dir.remove() }
}
