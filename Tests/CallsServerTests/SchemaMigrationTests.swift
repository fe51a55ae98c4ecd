@testable import CallsServer
import Foundation
import XCTest

/// The store's schema is migrated forward from what is on disk, all steps in one transaction;
/// a database from a newer build is refused untouched.
final class SchemaMigrationTests: XCTestCase {
    var dir: String!
    var path: String { dir + "/db.sqlite" }

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("crschema-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func tables() throws -> Set<String> {
        let db = try SQLiteDatabase(path: path, readOnly: true)
        return Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.first?.text })
    }

    func version() throws -> [Int64] {
        try SQLiteDatabase(path: path, readOnly: true).query("SELECT version FROM schema_version").compactMap { $0.first?.int }
    }

    let v2 = SchemaMigration(version: 2, statements: ["ALTER TABLE users ADD COLUMN locale TEXT", "CREATE TABLE extra(id INTEGER)"])

    func testAFreshDatabaseGetsTheLatestSchema() throws {
        let s = try CallStore(path: path)
        XCTAssertEqual(try s.storedSchemaVersion(), CallStore.schemaVersion)
        XCTAssertEqual(try version(), [CallStore.schemaVersion], "one row")
        XCTAssertTrue(try tables().isSuperset(of: ["users", "auth_tokens", "calls", "call_participants", "chat_messages", "transcripts"]))
    }

    func testMigratesForwardFromTheCurrentSchemaKeepingData() throws {
        do {
            let s = try CallStore(path: path, migrations: [.v1])
            _ = try s.createUser(uid: "ada", name: "Ada")
        }
        let s = try CallStore(path: path, migrations: [.v1, v2])
        XCTAssertEqual(try version(), [2])
        XCTAssertEqual(try s.user(uid: "ada")?.name, "Ada", "data survives the migration")
        XCTAssertTrue(try tables().contains("extra"))
        let cols = try SQLiteDatabase(path: path, readOnly: true).query("PRAGMA table_info(users)").compactMap { $0[1].text }
        XCTAssertTrue(cols.contains("locale"))
        // Opening again runs nothing twice.
        _ = try CallStore(path: path, migrations: [.v1, v2])
        XCTAssertEqual(try version(), [2])
    }

    func testAFailingStepLeavesTheDatabaseAsItWas() throws {
        do { _ = try CallStore(path: path, migrations: [.v1]).createUser(uid: "ada", name: "Ada") }
        let broken = SchemaMigration(version: 2, statements: ["CREATE TABLE extra(id INTEGER)", "ALTER TABLE nowhere ADD COLUMN x"])
        XCTAssertThrowsError(try CallStore(path: path, migrations: [.v1, broken]))
        XCTAssertEqual(try version(), [1])
        XCTAssertFalse(try tables().contains("extra"), "the whole step rolled back")
        XCTAssertEqual(try CallStore(path: path).user(uid: "ada")?.name, "Ada")
    }

    func testADatabaseFromANewerBuildIsRefusedUntouched() throws {
        do { _ = try CallStore(path: path, migrations: [.v1, v2]).createUser(uid: "ada", name: "Ada") }
        XCTAssertThrowsError(try CallStore(path: path, migrations: [.v1])) { e in
            XCTAssertTrue("\(e)".contains("newer callroomd"), "\(e)")
        }
        XCTAssertEqual(try version(), [2], "not rewritten")
        XCTAssertEqual(try CallStore(path: path, migrations: [.v1, v2]).user(uid: "ada")?.name, "Ada")
    }

    func testAGapInTheStepsIsRefused() throws {
        let v3 = SchemaMigration(version: 3, statements: ["CREATE TABLE later(id INTEGER)"])
        XCTAssertThrowsError(try CallStore(path: path, migrations: [.v1, v3]))
        XCTAssertTrue(try tables().isDisjoint(with: ["schema_version", "users", "later"]), "nothing written (all in one transaction)")
    }
}
