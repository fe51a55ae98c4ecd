import CallRoomTestSupport
@testable import CallsCluster
import CallsRedis
@testable import CallsServer
import Foundation
import XCTest

/// The cluster's registry against a real redis-server the test starts: three nodes register
/// with their load, rooms go to the least-loaded live node and stay there, a node that stops
/// its heartbeat is gone within its TTL and its rooms move on the next placement, a draining
/// node takes no new rooms, and after a Redis restart the nodes' next heartbeats rebuild it all.
final class NodeRegistryTests: XCTestCase {
    var redis: RedisServer!

    override func setUpWithError() throws {
        guard RedisServer.isInstalled else { throw XCTSkip("redis-server is not installed: run scripts/install-deps.sh") }
        redis = try RedisServer()
    }
    override func tearDown() { redis = nil }

    func registry(ttlMs: Int = 600) throws -> NodeRegistry { NodeRegistry(redis: try RedisClient(address: redis.address), ttlMs: ttlMs) }

    func node(_ id: String, _ participants: Int, draining: Bool = false) -> ClusterNode {
        ClusterNode(id: id, url: "http://127.0.0.1:7\(id.suffix(1))0", mediaAddress: "127.0.0.1:7\(id.suffix(1))1",
                    participants: participants, draining: draining)
    }

    func testRoomsGoToTheLeastLoadedLiveNodeAndStayThere() throws {
        let a = try registry(), b = try registry(), c = try registry()
        try a.heartbeat(node("n1", 40)); try b.heartbeat(node("n2", 10)); try c.heartbeat(node("n3", 25))
        XCTAssertEqual(try a.liveNodes().map(\.id), ["n1", "n2", "n3"])
        XCTAssertEqual(try c.liveNodes().first { $0.id == "n2" }?.mediaAddress, "127.0.0.1:721", "what a client is told to send media to")
        XCTAssertEqual(try a.place(session: "room-1")?.id, "n2", "the least loaded")
        // n2 fills up; the room it has stays, a new one goes elsewhere.
        try b.heartbeat(node("n2", 90))
        XCTAssertEqual(try c.place(session: "room-1")?.id, "n2", "a live room does not move")
        XCTAssertEqual(try c.place(session: "room-2")?.id, "n3")
        XCTAssertEqual(try b.node(forSession: "room-2")?.id, "n3", "every node sees the same map")
        try a.release(session: "room-2", nodeID: "n1")
        XCTAssertEqual(try b.node(forSession: "room-2")?.id, "n3", "only its node releases a room")
        try c.release(session: "room-2", nodeID: "n3")
        XCTAssertNil(try b.node(forSession: "room-2"))
    }

    func testAStormOfNewRoomsBetweenHeartbeatsIsSpreadOverTheNodes() throws {
        let a = try registry(), b = try registry(), c = try registry()
        try a.heartbeat(node("n1", 0)); try b.heartbeat(node("n2", 0)); try c.heartbeat(node("n3", 2))
        // Nine rooms inside one heartbeat, placed by different nodes: the loads in the registry
        // have not moved, yet the rooms go round, each counted as one participant until then
        // (n3, with 2 participants already, gets one).
        let placed = try (1...9).map { i in try [a, b, c][i % 3].place(session: "storm-\(i)")?.id ?? "-" }
        let counts = Dictionary(placed.map { ($0, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(counts, ["n1": 4, "n2": 4, "n3": 1], "\(placed)")
        XCTAssertEqual(Array(placed.prefix(2)), ["n1", "n2"], "ties: the order of the load, then id")
        // The next heartbeat counts them as participants and clears the pending count.
        try a.heartbeat(node("n1", 40)); try b.heartbeat(node("n2", 30)); try c.heartbeat(node("n3", 20))
        XCTAssertEqual(try a.place(session: "after")?.id, "n3")
    }

    func testPlacingTheSameNewRoomAtOnceAgreesOnOneNode() throws {
        let setup = try registry()
        for (i, load) in [5, 5, 5].enumerated() { try setup.heartbeat(node("n\(i + 1)", load)) }
        let placed = LockedList()
        let address = redis.address, light = node("n1", 1)
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            guard let c = try? RedisClient(address: address) else { return placed.add("no client") }
            let r = NodeRegistry(redis: c, ttlMs: 600)
            // Some placers see a different load picture first (as nodes do between heartbeats).
            if i % 3 == 0 { try? r.heartbeat(light) }
            placed.add((try? r.place(session: "busy"))?.id ?? "none")
        }
        XCTAssertEqual(Set(placed.all).count, 1, "one node for the room: \(placed.all)")
    }

    func testADeadNodeIsGoneWithinItsTTLAndItsRoomsMove() throws {
        let a = try registry(), b = try registry()
        try a.heartbeat(node("n1", 0)); try b.heartbeat(node("n2", 50))
        XCTAssertEqual(try a.place(session: "r")?.id, "n1")
        // n1 dies (kill -9: no goodbye, no more heartbeats); n2 keeps beating.
        let died = Date()
        let gone = try eventuallyValue(3, poll: 0.05) { () -> TimeInterval? in
            try b.heartbeat(node("n2", 50))
            return try b.liveNodes().contains(where: { $0.id == "n1" }) ? nil : Date().timeIntervalSince(died)
        }
        let after = try XCTUnwrap(gone, "n1 never expired")
        XCTAssertLessThan(after, 1.0, "gone within its 600 ms TTL (and a beat)")
        XCTAssertNil(try b.node(forSession: "r"), "its room has no live node")
        XCTAssertEqual(try b.place(session: "r")?.id, "n2", "the next placement moves it to a live node")
        // A clean stop leaves at once.
        try b.leave(nodeID: "n2")
        XCTAssertEqual(try b.liveNodes(), [])
        XCTAssertNil(try b.place(session: "r"), "no node: nowhere to put it")
    }

    func testADrainingNodeTakesNoNewRoomsAndKeepsItsOwn() throws {
        let a = try registry(), b = try registry()
        try a.heartbeat(node("n1", 0)); try b.heartbeat(node("n2", 30))
        XCTAssertEqual(try a.place(session: "kept")?.id, "n1")
        try a.heartbeat(node("n1", 0, draining: true))
        XCTAssertEqual(try b.place(session: "kept")?.id, "n1", "nothing moves mid-call")
        XCTAssertEqual(try b.place(session: "new")?.id, "n2", "new rooms go elsewhere")
        try b.heartbeat(node("n2", 30, draining: true))
        XCTAssertNil(try b.place(session: "newer"), "every node draining: nowhere for a new room")
        XCTAssertEqual(try b.place(session: "kept")?.id, "n1", "an existing room still answers")
    }

    func testAfterARedisRestartTheNextHeartbeatsRebuildTheRegistry() throws {
        let a = try registry(ttlMs: 3000), b = try registry(ttlMs: 3000)
        try a.heartbeat(node("n1", 0), rooms: []); try b.heartbeat(node("n2", 9))
        XCTAssertEqual(try a.place(session: "live")?.id, "n1")
        redis.kill()
        XCTAssertThrowsError(try a.heartbeat(node("n1", 1), rooms: ["live"])) { e in
            guard case RedisError.unavailable(let m) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(m.contains("redis.sock"), m)
        }
        try redis.start()  // empty: nothing was persisted
        XCTAssertEqual(try b.liveNodes(), [], "a restarted Redis knows nobody")
        // Each node's next heartbeat (the client reconnects by itself) re-registers it and its rooms.
        try a.heartbeat(node("n1", 1), rooms: ["live"]); try b.heartbeat(node("n2", 9))
        XCTAssertEqual(try b.liveNodes().map(\.id), ["n1", "n2"])
        XCTAssertEqual(try b.node(forSession: "live")?.id, "n1", "the room is where it was, not re-placed")
    }

    func testTheLeastLoadedChoiceIsTheSameOnEveryNode() {
        let nodes = [node("n2", 5), node("n1", 5), node("n3", 2, draining: true)]
        XCTAssertEqual(NodeRegistry.leastLoaded(nodes)?.id, "n1", "ties by id; a draining node never")
        var busy = nodes
        busy[1].cpuPercent = 80
        XCTAssertEqual(NodeRegistry.leastLoaded(busy)?.id, "n2", "then by CPU")
        XCTAssertNil(NodeRegistry.leastLoaded([node("n1", 0, draining: true)]))
    }
}
