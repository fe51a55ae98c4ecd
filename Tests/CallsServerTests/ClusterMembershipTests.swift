import CallRoomTestSupport
@testable import CallsCluster
import CallsCore
import CallsRedis
@testable import CallsServer
import Foundation
import XCTest

/// callroomd nodes in a cluster registry, against a real redis-server: they register with their
/// address and load, list each other, show the rooms they hold; a clean stop leaves at once,
/// kill -9 is gone within the TTL; Redis going away leaves calls and REST alone, and the nodes
/// re-register when it returns; a Redis that cannot be reached stops the start with the reason.
final class ClusterMembershipTests: XCTestCase {
    var redis: RedisServer!

    override func setUpWithError() throws {
        guard RedisServer.isInstalled else { throw XCTSkip("redis-server is not installed: run scripts/install-deps.sh") }
        redis = try RedisServer()
    }
    override func tearDown() { redis = nil }

    func nodes(_ h: ServerHarness) -> [[String: Any]] {
        h.request("GET", "/v3/cluster/nodes", headers: h.adminHeaders).data["nodes"] as? [[String: Any]] ?? []
    }

    func testNodesRegisterWithTheirLoadAndRoomsAndLeaveCleanly() throws {
        let a = try ServerHarness { $0.redisURL = self.redis.address; $0.nodeID = "node-a" }
        defer { a.stop(); a.removeData() }
        let b = try ServerHarness(dataDir: try a.dataDirSharingKeys()) { $0.redisURL = self.redis.address; $0.nodeID = "node-b" }
        defer { b.stop(); b.removeData() }
        XCTAssertTrue(eventually { Set(nodes(b).compactMap { $0["id"] as? String }) == ["node-a", "node-b"] }, "\(nodes(b))")
        let listed = h(a, "node-a", in: nodes(b))
        XCTAssertEqual(listed?["url"] as? String, a.server.url)
        XCTAssertEqual(listed?["mediaAddress"] as? String, "127.0.0.1:\(a.server.mediaPort)", "where its clients send media")
        XCTAssertEqual(a.request("GET", "/v3/cluster/nodes", headers: a.adminHeaders).data["node"] as? String, "node-a")
        XCTAssertEqual(a.request("GET", "/v3/cluster/nodes").status, 401, "the admin key is needed")

        // A participant on node A: its load and its room show in the registry.
        let p = try SignalProbe(url: a.server.url)
        p.send(.join(.init(callToken: try a.callToken(uid: "ann", session: "standup"), sessionId: "standup")))
        XCTAssertNotNil(p.joined())
        XCTAssertTrue(eventually { (h(a, "node-a", in: nodes(b))?["participants"] as? Int) == 1 }, "\(nodes(b))")
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertEqual(try registry.node(forSession: "standup")?.id, "node-a", "the room → node map")
        XCTAssertEqual(try registry.place(session: "standup")?.id, "node-a", "a live room stays where it is")
        XCTAssertEqual(try registry.place(session: "new-room")?.id, "node-b", "a new one goes to the least loaded")

        a.stop()
        XCTAssertEqual(nodes(b).compactMap { $0["id"] as? String }, ["node-b"], "a clean stop leaves at once")
    }

    func testANodeWithOtherKeysIsRefusedAtStartUntilTheClusterHasStopped() throws {
        let dir = TemporaryDirectory("callroom-cluster-keys")
        defer { dir.remove() }
        let a = try CallroomdProcess(dataDir: dir.file("a"), extra: ["--redis", redis.address, "--node-id", "node-a"])
        // B generated keys of its own: refused before it listens, saying what to do.
        let b = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", dir.file("b"),
                                                                      "--redis", redis.address, "--node-id", "node-b"])
        XCTAssertEqual(b.wait(timeout: 15), 1, b.errorOutput)
        XCTAssertTrue(b.errorOutput.contains("are not the cluster's") && b.errorOutput.contains("keys.json"), b.errorOutput)
        XCTAssertFalse(b.output.contains { $0.contains("listening on") })
        // With A's keys it joins.
        try CallroomdProcess.shareKeys(from: dir.file("a"), into: dir.file("b"))
        let b2 = try CallroomdProcess(dataDir: dir.file("b"), extra: ["--redis", redis.address, "--node-id", "node-b"])
        XCTAssertEqual(b2.stop(), 0)
        // Once every node has stopped (and the TTL passed) the cluster takes new keys: a fresh start.
        XCTAssertEqual(a.stop(), 0)
        Thread.sleep(forTimeInterval: 3.2)
        let c = try CallroomdProcess(dataDir: dir.file("c"), extra: ["--redis", redis.address, "--node-id", "node-c"])
        XCTAssertEqual(c.stop(), 0)
    }

    /// Two live nodes with one id: the second took the first's live calls for ones its own crash
    /// had left open, ended them in a shared store (PostgreSQL; this test's SQLite nodes keep
    /// their own), and shared its registry entry. Refused now
    /// (the first's entry is beaten again while the second watches it); a node restarted with its
    /// id after kill -9 waits out its old entry (the 3 s TTL) and starts.
    func testASecondLiveNodeWithTheSameIDIsRefusedButARestartAfterACrashIsNot() throws {
        let a = try ServerHarness { $0.redisURL = self.redis.address; $0.nodeID = "twin" }
        defer { a.stop(); a.removeData() }
        XCTAssertEqual(a.request("POST", "/v3/users", headers: a.adminHeaders, body: #"{"uid":"ann"}"#).status, 200)
        let ann = try SignalProbe(url: a.server.url)
        ann.send(.join(.init(callToken: try a.callToken(uid: "ann", session: "live"), sessionId: "live")))
        XCTAssertNotNil(ann.joined())
        let twinDir = try a.dataDirSharingKeys("twin-b")
        defer { try? FileManager.default.removeItem(atPath: twinDir) }
        var twin: ServerHarness?
        defer { twin?.stop() }
        let started = Date()
        XCTAssertThrowsError(twin = try ServerHarness(dataDir: twinDir) { $0.redisURL = self.redis.address; $0.nodeID = "twin" }) {
            XCTAssertEqual($0 as? ServerStartError, .nodeIDInUse("twin", url: a.server.url), "\($0)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "told within a heartbeat or two")
        XCTAssertNil(a.request("GET", "/v3/calls/live", headers: a.adminHeaders).data["endedAt"], "the first node's live call goes on")

        let phoenix = try a.dataDirSharingKeys("phoenix")
        defer { try? FileManager.default.removeItem(atPath: phoenix) }
        let doomed = try CallroomdProcess(dataDir: phoenix, extra: ["--redis", redis.address, "--node-id", "phoenix"])
        doomed.process.signal(SIGKILL)
        _ = doomed.process.wait()
        let again = try CallroomdProcess(dataDir: phoenix, extra: ["--redis", redis.address, "--node-id", "phoenix"])
        XCTAssertEqual(again.stop(), 0, "a restart after a crash is not refused")
    }

    func h(_ unused: ServerHarness, _ id: String, in list: [[String: Any]]) -> [String: Any]? { list.first { $0["id"] as? String == id } }

    func testAKilledNodeIsGoneWithinItsTTLAndRedisGoingAwayLeavesCallsAlone() throws {
        let dir = TemporaryDirectory("callroom-cluster")
        defer { dir.remove() }
        let killed = try CallroomdProcess(dataDir: dir.file("k"), extra: ["--redis", redis.address, "--node-id", "doomed"])
        let b = try ServerHarness(dataDir: try ServerHarness.dataDir(withKeysFrom: dir.file("k"), name: "survivor")) { $0.redisURL = self.redis.address; $0.nodeID = "survivor" }
        defer { b.stop(); b.removeData() }
        XCTAssertTrue(eventually { nodes(b).count == 2 }, "\(nodes(b))")
        killed.process.signal(SIGKILL)
        let start = Date()
        XCTAssertTrue(eventually(6) { nodes(b).map { $0["id"] as? String } == ["survivor"] }, "\(nodes(b))")
        let gone = Date().timeIntervalSince(start)
        XCTAssertLessThan(gone, 4.5, "within the 3 s TTL and a beat: \(gone) s")

        // Redis away: the node serves on (REST, a join), the registry's listing says 503.
        redis.kill()
        XCTAssertEqual(b.request("POST", "/v3/users", headers: b.adminHeaders, body: #"{"uid":"zed"}"#).status, 200)
        let p = try SignalProbe(url: b.server.url)
        p.send(.join(.init(callToken: try b.callToken(uid: "zed", session: "on"), sessionId: "on")))
        XCTAssertNotNil(p.joined(), "calls do not need Redis")
        XCTAssertEqual(b.request("GET", "/v3/cluster/nodes", headers: b.adminHeaders).status, 503)
        // Back (empty): the next heartbeats register the node and its room again.
        try redis.start()
        XCTAssertTrue(eventually { nodes(b).map { $0["id"] as? String } == ["survivor"] }, "re-registered: \(nodes(b))")
        XCTAssertEqual(try NodeRegistry(redis: try RedisClient(address: redis.address)).node(forSession: "on")?.id, "survivor")

        // A Redis that cannot be reached at start: the reason, exit 1; a bad address: usage, exit 2.
        redis.kill()
        let down = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", dir.file("d"), "--redis", redis.address])
        XCTAssertEqual(down.wait(timeout: 20), 1)
        XCTAssertTrue(down.errorOutput.contains("redis unavailable"), down.errorOutput)
        let bad = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", dir.file("d"), "--redis", "http://x"])
        XCTAssertEqual(bad.wait(timeout: 20), 2)
        XCTAssertTrue(bad.errorOutput.contains("--redis must be"), bad.errorOutput)
    }
}
