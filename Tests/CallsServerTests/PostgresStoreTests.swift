import CallRoomTestSupport
import CallsCore
import CallsDatabase
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// What only PostgreSQL brings, against real PostgreSQL servers each test starts for itself:
/// the store rides out the server going away (clear errors, nothing half-written, reconnected
/// when it returns), nodes starting together migrate once, and callroomd keeps its store there —
/// two servers with different data directories share one database.
final class PostgresStoreTests: XCTestCase {
    func cluster() throws -> PostgresCluster {
        guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
        return try PostgresCluster()
    }

    func testTheStoreRidesOutPostgreSQLGoingAwayAndReconnectsWhenItReturns() throws {
        let pg = try cluster()
        defer { pg.stop(mode: "immediate") }
        let store = try CallStore(database: try PostgresDatabase(url: try pg.createDatabase()))
        XCTAssertEqual(store.databaseKind, .postgres)
        XCTAssertNotNil(try store.createUser(uid: "ada", name: "Ada"))
        let token = try store.createAuthToken(uid: "ada").token

        pg.stop(mode: "immediate")  // as a crash
        XCTAssertThrowsError(try store.createUser(uid: "bea", name: "Bea")) { e in
            guard case DatabaseError.unavailable(let m) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(m.contains(pg.dir), "says which database: \(m)")
        }
        // The rooms' writer: the whole batch fails and says so; nothing of it is written.
        var refs = StoreRefs()
        let receipts = store.commit([StoreRequest(id: 1, commands: [.startCall(CallRef(value: 1), sessionId: "s", type: "audio", mode: "meet", at: 1)])],
                                    refs: &refs)
        XCTAssertEqual(receipts.count, 1)
        guard case .failure(let f) = receipts.first?.result else { return XCTFail("\(receipts)") }
        XCTAssertTrue(f.description.contains("unavailable"), f.description)
        XCTAssertTrue(refs.calls.isEmpty, "no row id for what did not commit")

        try pg.start()
        // The next statement reconnects by itself.
        XCTAssertNotNil(try store.createUser(uid: "bea", name: "Bea"))
        XCTAssertEqual(try store.user(authToken: token)?.uid, "ada", "what was committed before the crash is there")
        XCTAssertNil(try store.createUser(uid: "bea", name: "again"), "once")
        XCTAssertNil(try store.latestCall(sessionId: "s"), "the failed batch left nothing")
    }

    /// A database that is down is a typed error the ringing side answers as such: `hello` with a
    /// valid token hears ERR_STORAGE (try again), never that the token does not exist — and
    /// once the database is back the same token is welcome.
    func testRingingSaysStorageNotBadTokenWhileTheDatabaseIsDown() throws {
        let pg = try cluster()
        defer { pg.stop(mode: "immediate") }
        let url = try pg.createDatabase()
        let h = try ServerHarness { $0.databaseURL = url }
        defer { h.stop(); h.removeData() }
        let token = try RingingTests.authToken(url: h.server.url, appId: h.server.keys.appId, authKey: h.server.keys.authKey, uid: "ada")
        pg.stop(mode: "immediate")
        let p = try SignalProbe(url: h.server.url)
        p.send(.hello(authToken: token))
        XCTAssertEqual(p.error(), "ERR_STORAGE")
        try pg.start()
        // The first statement after the return reconnects (libpq can still call the dead
        // connection OK after one failure: the store drops it on any connection failure).
        let again = try SignalProbe(url: h.server.url)
        again.send(.hello(authToken: token))
        let answer = again.wait { if case .welcome = $0 { return true }; if case .error = $0 { return true }; return false }
        guard case .welcome("ada", _)? = answer else { return XCTFail("welcome once the database is back, not \(String(describing: answer))") }
    }

    func testNodesStartingTogetherMigrateOnce() throws {
        let pg = try cluster()
        defer { pg.stop(mode: "immediate") }
        let url = try pg.createDatabase()
        let errors = LockedList()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do { _ = try CallStore(database: try PostgresDatabase(url: url)) } catch { errors.add("\(error)") }
        }
        XCTAssertEqual(errors.all, [], "every node opened the store")
        let rows = try PostgresDatabase(url: url).query("SELECT version FROM schema_version")
        XCTAssertEqual(rows.map { $0.first?.int }, [CallStore.schemaVersion], "one row, the latest")
    }

    func testCallroomdKeepsItsStoreInPostgreSQLSharedByTwoServers() throws {
        let pg = try cluster()
        defer { pg.stop(mode: "immediate") }
        let url = try pg.createDatabase()
        let a = TemporaryDirectory("callroom-pg-node-a"), b = TemporaryDirectory("callroom-pg-node-b")
        defer { a.remove(); b.remove() }
        let first = try CallroomdProcess(dataDir: a.path, extra: ["--database", url])
        let made = BlockingHTTP.request("POST", first.url + "/v3/users", headers: ["apikey": first.apiKey], body: #"{"uid":"ada","name":"Ada"}"#)
        XCTAssertEqual(made.status, 200, "\(made.json)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: a.file("callroom.sqlite")), "no SQLite file: the store is in PostgreSQL")
        // Another server (another data directory, the same keys) sees the same users.
        let second = try CallroomdProcess(dataDir: b.path, extra: ["--database", url, "--api-key", first.apiKey])
        let seen = BlockingHTTP.request("GET", second.url + "/v3/users/ada", headers: ["apikey": first.apiKey])
        XCTAssertEqual(seen.data["name"] as? String, "Ada", "\(seen.json)")
        XCTAssertEqual(second.stop(), 0)

        // PostgreSQL away: REST says so (503), changes nothing, and works again when it returns.
        pg.stop(mode: "fast")
        let refused = BlockingHTTP.request("POST", first.url + "/v3/users", headers: ["apikey": first.apiKey], body: #"{"uid":"bea"}"#)
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.errorCode, "ERR_UNAVAILABLE")
        try pg.start()
        XCTAssertEqual(BlockingHTTP.request("POST", first.url + "/v3/users", headers: ["apikey": first.apiKey], body: #"{"uid":"bea"}"#).status, 200)
        XCTAssertEqual(first.stop(), 0)

        // A database that cannot be reached stops the start with the reason; a bad URL is a usage error.
        pg.stop(mode: "fast")
        let down = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", a.path, "--database", url])
        XCTAssertEqual(down.wait(timeout: 20), 1)
        XCTAssertTrue(down.errorOutput.contains("database unavailable"), down.errorOutput)
        let bad = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", a.path, "--database", "mysql://x"])
        XCTAssertEqual(bad.wait(timeout: 20), 2)
        XCTAssertTrue(bad.errorOutput.contains("--database must be"), bad.errorOutput)
    }
}

extension PostgresStoreTests {
    /// Two servers on one database, both delivering the same webhook: every event reaches the
    /// receiver once (whoever claims a row sends it), in order per call.
    func testTwoNodesOnOneDatabaseDeliverEachWebhookOnce() throws {
        let pg = try cluster()
        defer { pg.stop(mode: "immediate") }
        let url = try pg.createDatabase()
        let tmp = TemporaryDirectory("callroom-pg-hooks")
        defer { tmp.remove() }
        // A slow receiver: each attempt is in flight for 0.3 s, while the other node looks at the
        // same due rows every 100 ms — without claims, both would send them.
        let receiver = try WebhookReceiver(log: tmp.file("hooks.jsonl"), answerDelaySeconds: 0.3)
        defer { receiver.stop() }
        let hook = [WebhookConfig(id: "main", url: receiver.url, secret: "s3cret-s3cret-s3cret")]
        let a = try ServerHarness { $0.databaseURL = url; $0.webhooks = hook }
        defer { a.stop(); a.removeData() }
        let b = try ServerHarness { $0.databaseURL = url; $0.webhooks = hook }
        defer { b.stop(); b.removeData() }
        // Calls rung on node A; node B's deliverer sees the same outbox.
        let (u, app, key) = (a.server.url, a.server.keys.appId, a.server.keys.authKey)
        let calls = 8
        for i in 0..<calls {
            let caller = try RingingTests.online(url: u, appId: app, authKey: key, uid: "caller\(i)")
            let callee = try RingingTests.online(url: u, appId: app, authKey: key, uid: "callee\(i)")
            caller.send(.initiateCall(receiverId: "callee\(i)", receiverType: .user, type: .audio, timeoutSeconds: nil))
            guard case .call(_, let call, _)? = callee.wait({ if case .call(.incoming, _, _) = $0 { return true }; return false }) else { return XCTFail("no incoming call") }
            callee.send(.rejectCall(sessionId: call.sessionId, status: .rejected))
        }
        XCTAssertTrue(receiver.waitFor(2 * calls, timeout: 30), "every event: \(receiver.received.count)")
        Thread.sleep(forTimeInterval: 1.5)  // long enough for a second copy to show, if one were sent
        let got = receiver.received
        let ids = got.compactMap { $0.headers["x-callroom-delivery-id"] }
        XCTAssertEqual(ids.count, 2 * calls, "each event once, not once per node")
        XCTAssertEqual(Set(ids).count, ids.count, "no delivery id twice")
        // Per call: initiated before rejected.
        var order: [String: [String]] = [:]
        for r in got {
            guard let o = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any],
                  let sid = (o["data"] as? [String: Any])?["sessionId"] as? String else { continue }
            order[sid, default: []].append(o["trigger"] as? String ?? "?")
        }
        XCTAssertEqual(order.count, calls)
        XCTAssertTrue(order.values.allSatisfy { $0 == ["call_initiated", "call_rejected"] }, "\(order)")
    }
}

/// Strings collected from several threads.
final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ s: String) { lock.withLock { items.append(s) } }
    var all: [String] { lock.withLock { items } }
}
