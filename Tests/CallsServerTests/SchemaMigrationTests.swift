import CallRoomTestSupport
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// The store's schema is migrated forward from what is on disk, all steps in one transaction;
/// a database from a newer build is refused untouched.
/// (On SQLite, and on PostgreSQL in the suite's PostgreSQL pass: `StoreBackend.current`.)
final class SchemaMigrationTests: XCTestCase {
    var database: TestDatabase!

    override func setUpWithError() throws { database = try TestDatabase() }
    override func tearDown() { database?.remove() }

    func tables() throws -> Set<String> { try database.tables() }

    func version() throws -> [Int64] {
        try database.open().query("SELECT version FROM schema_version").compactMap { $0.first?.int }
    }

    func store(migrations: [SchemaMigration] = SchemaMigration.all) throws -> CallStore { try database.store(migrations: migrations) }

    let v2 = SchemaMigration(version: 2, statements: ["ALTER TABLE users ADD COLUMN locale TEXT", "CREATE TABLE extra(id INTEGER)"])

    func testAFreshDatabaseGetsTheLatestSchema() throws {
        let s = try store()
        XCTAssertEqual(try s.storedSchemaVersion(), CallStore.schemaVersion)
        XCTAssertEqual(try version(), [CallStore.schemaVersion], "one row")
        XCTAssertTrue(try tables().isSuperset(of: ["users", "auth_tokens", "calls", "call_participants", "chat_messages", "transcripts"]))
    }

    /// What a login, retention and the call log look up per user, per call or per transcript is
    /// found by an index, not by scanning the table (v13, v14; SQLite's plans: PostgreSQL plans
    /// by its own statistics).
    func testLookupsByUserCallAndTranscriptUseAnIndex() throws {
        try XCTSkipIf(StoreBackend.current == .postgres, "SQLite's query plans")
        _ = try store()
        let db = try database.open()
        for (table, sql) in [("transcripts", "SELECT 1 FROM calls c WHERE EXISTS (SELECT 1 FROM transcripts t WHERE t.call_id = c.id)"),
                             ("transcripts", "UPDATE transcripts SET end_time = 1 WHERE tid = 'x'"),
                             ("transcripts", "DELETE FROM transcripts WHERE tid = 'x'"),
                             ("auth_tokens", "SELECT token_hash FROM auth_tokens WHERE uid = 'x' ORDER BY created_at DESC LIMIT 1000 OFFSET 100"),
                             ("group_members", "SELECT guid FROM group_members WHERE uid = 'x'"),
                             ("groups", "SELECT COUNT(*) FROM groups WHERE owner_uid = 'x'"),
                             // v14: retention's page of auth tokens past their lifetime.
                             ("auth_tokens", "SELECT token_hash FROM auth_tokens WHERE created_at < 5 LIMIT 2000")] {
            let plan = try db.query("EXPLAIN QUERY PLAN " + sql).compactMap { $0.last?.text }
            XCTAssertTrue(plan.contains { $0.contains("INDEX \(table)_") }, "\(sql): \(plan)")
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN") && !$0.hasPrefix("SCAN c") }, "\(sql): \(plan)")
        }
    }

    func testMigratesForwardFromTheCurrentSchemaKeepingData() throws {
        do {
            let s = try store(migrations: [.v1])
            _ = try s.createUser(uid: "ada", name: "Ada")
        }
        let s = try store(migrations: [.v1, v2])
        XCTAssertEqual(try version(), [2])
        XCTAssertEqual(try s.user(uid: "ada")?.name, "Ada", "data survives the migration")
        XCTAssertTrue(try tables().contains("extra"))
        XCTAssertTrue(try database.columns("users").contains("locale"))
        // Opening again runs nothing twice.
        _ = try store(migrations: [.v1, v2])
        XCTAssertEqual(try version(), [2])
    }

    func testAFailingStepLeavesTheDatabaseAsItWas() throws {
        do { _ = try store(migrations: [.v1]).createUser(uid: "ada", name: "Ada") }
        let broken = SchemaMigration(version: 2, statements: ["CREATE TABLE extra(id INTEGER)", "ALTER TABLE nowhere ADD COLUMN x"])
        XCTAssertThrowsError(try store(migrations: [.v1, broken]))
        XCTAssertEqual(try version(), [1])
        XCTAssertFalse(try tables().contains("extra"), "the whole step rolled back")
        XCTAssertEqual(try store().user(uid: "ada")?.name, "Ada")
    }

    func testADatabaseFromANewerBuildIsRefusedUntouched() throws {
        do { _ = try store(migrations: [.v1, v2]).createUser(uid: "ada", name: "Ada") }
        XCTAssertThrowsError(try store(migrations: [.v1])) { e in
            XCTAssertTrue("\(e)".contains("newer callroomd"), "\(e)")
        }
        XCTAssertEqual(try version(), [2], "not rewritten")
        XCTAssertEqual(try store(migrations: [.v1, v2]).user(uid: "ada")?.name, "Ada")
    }

    func testAGapInTheStepsIsRefused() throws {
        let v3 = SchemaMigration(version: 3, statements: ["CREATE TABLE later(id INTEGER)"])
        XCTAssertThrowsError(try store(migrations: [.v1, v3]))
        XCTAssertTrue(try tables().isDisjoint(with: ["schema_version", "users", "later"]), "nothing written (all in one transaction)")
    }
}
