import CallRoomTestSupport
import CallsCore
@testable import CallsServer
import Foundation
import XCTest
import CallsRedis

/// The REST rate limit counted over every node, in a real redis-server: one address's requests
/// spread over two nodes get the limit once, not once per node; Redis away leaves each node's
/// own limit standing, and Redis back is used again.
final class SharedRateLimiterTests: XCTestCase {
    var redis: RedisServer!

    override func setUpWithError() throws {
        guard RedisServer.isInstalled else { throw XCTSkip("redis-server is not installed: run scripts/install-deps.sh") }
        redis = try RedisServer()
    }

    override func tearDown() { redis = nil }

    func testTwoNodesShareOneBucketPerPeerAndIdleBucketsExpire() throws {
        // Burst 4, then 2 a second — the same bucket whichever node counts.
        let a = SharedRateLimiter(redis: redis.address, name: "t", capacity: 4, perSecond: 2)
        let b = SharedRateLimiter(redis: redis.address, name: "t", capacity: 4, perSecond: 2)
        let verdicts = (0..<8).map { i in (i % 2 == 0 ? a : b).allow("203.0.113.7") }
        XCTAssertEqual(verdicts, [true, true, true, true, false, false, false, false], "the burst, counted once over both")
        XCTAssertEqual(a.allow("198.51.100.1"), true, "another address has its own bucket")
        Thread.sleep(forTimeInterval: 0.6)  // one interval (0.5 s) refills one request
        XCTAssertEqual(b.allow("203.0.113.7"), true)
        XCTAssertEqual(a.allow("203.0.113.7"), false)
        // The key lives only while the bucket is not full again (≤ 4 intervals), then is gone.
        let client = try RedisClient(address: redis.address)
        XCTAssertNotEqual(try client.command(["EXISTS", SharedRateLimiter.key(name: "t", peer: "203.0.113.7")]).integer, 0)
        let ttl = try client.command(["PTTL", SharedRateLimiter.key(name: "t", peer: "203.0.113.7")]).integer ?? -1
        XCTAssertTrue((1...2_100).contains(ttl), "expires when full again: \(ttl) ms")
    }

    func testRedisAwayAnswersNilAtOnceAndRedisBackCountsAgain() throws {
        let a = SharedRateLimiter(redis: redis.address, name: "t", capacity: 2, perSecond: 1, retryAfterSeconds: 0.5)
        XCTAssertEqual(a.allow("203.0.113.7"), true)
        redis.kill()
        let t0 = monotonicNanoseconds()
        XCTAssertNil(a.allow("203.0.113.7"), "no answer: the node's own limit stands alone")
        XCTAssertNil(a.allow("203.0.113.7"), "not tried again within the retry window")
        XCTAssertLessThan(Double(monotonicNanoseconds() - t0) / 1e6, 300, "neither waits long")
        try redis.start()
        Thread.sleep(forTimeInterval: 0.6)
        XCTAssertEqual(a.allow("203.0.113.7"), true, "Redis back (empty): counted again")
        XCTAssertEqual(a.allow("203.0.113.7"), true)
        XCTAssertEqual(a.allow("203.0.113.7"), false)
    }

    func testTheRESTLimitHoldsOverTwoNodesBehindOneAddress() throws {
        func node(_ id: String, dataDir: String? = nil) throws -> ServerHarness {
            try ServerHarness(dataDir: dataDir) { c in
                c.redisURL = self.redis.address
                c.nodeID = id
                c.restRequestsPerSecond = 2  // a burst of 4
            }
        }
        let a = try node("node-a")
        let nodes = [a, try node("node-b", dataDir: try a.dataDirSharingKeys())]
        defer { for n in nodes { n.stop(); n.removeData() } }
        let statuses = (0..<10).map { i in nodes[i % 2].request("GET", "/v3/users", headers: nodes[i % 2].adminHeaders).status }
        XCTAssertLessThanOrEqual(statuses.filter { $0 != 429 }.count, 5, "one burst over both nodes (one node alone allows 4): \(statuses)")
        XCTAssertTrue(statuses.enumerated().contains { $0.offset % 2 == 0 && $0.element == 429 }, "A refuses: \(statuses)")
        XCTAssertTrue(statuses.enumerated().contains { $0.offset % 2 == 1 && $0.element == 429 }, "B refuses: \(statuses)")
        XCTAssertEqual(statuses.prefix(4).filter { $0 == 429 }.count, 0, "the burst itself passes: \(statuses)")
    }
}
