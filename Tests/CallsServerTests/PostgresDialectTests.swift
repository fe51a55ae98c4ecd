import CallRoomTestSupport
@testable import CallsServer
import Testing
import CallsDatabase

/// The store's SQLite dialect turned into PostgreSQL's: each rule, and what must stay as it is.
@Suite("PostgreSQL dialect")
struct PostgresDialectTests {
    func t(_ s: String) -> String { PostgresDialect.translate(s) }

    @Test func parametersAreNumberedOutsideQuotesOnly() {
        #expect(t("SELECT a FROM x WHERE b = ? AND c = ?") == "SELECT a FROM x WHERE b = $1 AND c = $2")
        #expect(t("SELECT '?' , ?") == "SELECT '?' , $1", "a question mark inside a string literal stays")
        #expect(t("SELECT 'it''s', ?") == "SELECT 'it''s', $1")
    }

    @Test func typesBecomePostgreSQLs() {
        #expect(t("CREATE TABLE c(id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL)") == "CREATE TABLE c(id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL)")
        #expect(t("ALTER TABLE calls ADD COLUMN ring_timeout_s INTEGER") == "ALTER TABLE calls ADD COLUMN ring_timeout_s BIGINT")
        #expect(t("CREATE TABLE x(uid TEXT PRIMARY KEY)") == "CREATE TABLE x(uid TEXT PRIMARY KEY)")
    }

    @Test func scalarMaxAndMinBecomeGreatestAndLeastAggregatesStay() {
        #expect(t("SET left_at = MAX(joined_at, ?)") == "SET left_at = GREATEST(joined_at, $1)")
        #expect(t("SET n = max(t.n, excluded.n)") == "SET n = GREATEST(t.n, excluded.n)")
        #expect(t("SELECT MAX(version) FROM schema_version") == "SELECT MAX(version) FROM schema_version")
        #expect(t("SELECT MIN(a, COALESCE(b, c)), MIN(d)") == "SELECT LEAST(a, COALESCE(b, c)), MIN(d)")
        #expect(t("SELECT MAX(COALESCE(a, b))") == "SELECT MAX(COALESCE(a, b))", "one argument with a comma inside: still the aggregate")
    }

    @Test func rowidAndImmediateTransactions() {
        #expect(t("SELECT uid FROM call_members m WHERE m.call_id = ? ORDER BY m.rowid") == "SELECT uid FROM call_members m WHERE m.call_id = $1 ORDER BY m.seq")
        #expect(t("BEGIN IMMEDIATE") == "BEGIN")
        #expect(t("SAVEPOINT request") == "SAVEPOINT request")
        #expect(t("INSERT INTO webhooks(id) VALUES (?) ON CONFLICT DO NOTHING") == "INSERT INTO webhooks(id) VALUES ($1) ON CONFLICT DO NOTHING")
    }
}
