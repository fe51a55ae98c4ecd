import CallRoomTestSupport
import CallsCore
import CallsDatabase
@testable import CallsRelay
import CallsSecurity
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// The room registry on a virtual clock with a fake outbox: idle timeouts, grace periods and
/// token expiry without sleeping (the registry's queue still runs; time only moves by hand).
final class RoomClockTests: XCTestCase {
    /// A fresh `jti` for each token (one token is one participant).
    nonisolated(unsafe) static var tokenCounter = 0
    static func nextTokenID() -> String {
        tokenCounter += 1
        return "t\(tokenCounter)"
    }

    var dir: String!
    var clock: VirtualScheduler!
    var outbox: RecordingOutbox!
    var registry: RoomRegistry!
    var relay: MediaRelay!
    let signer = CallTokenSigner(secret: Array(repeating: 7, count: 32))

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("crclock-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        clock = VirtualScheduler()
        outbox = RecordingOutbox()
        relay = try MediaRelay(host: "127.0.0.1", port: 0)
        var limits = RoomLimits()
        limits.gracePeriodSeconds = 30
        registry = RoomRegistry(store: try CallStore(path: dir + "/db.sqlite"), signer: signer, appID: "app", relay: relay,
                                log: ServerLog(level: .error), limits: limits, scheduler: clock)
        registry.attach(outbox: outbox)
    }

    override func tearDown() {
        relay.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Sends a message as `connection` and waits until it is handled (store writes included).
    func send(_ m: ClientMessage, from c: ConnectionID) {
        registry.received(m, from: c)
        registry.settle()
    }

    /// Moves the virtual clock and lets what fell due reach the disk and the outbox.
    func advance(by seconds: Double) {
        clock.advance(by: seconds)
        registry.settle()
    }

    func token(_ uid: String, session: String, ttl: Int64 = 600) -> String {
        let now = clock.nowMilliseconds() / 1000
        return signer.sign(CallTokenClaims(app: "app", sub: uid, sid: session, iat: now, exp: now + ttl, jti: Self.nextTokenID(), aud: "callroom:app"))
    }

    func join(_ uid: String, _ c: ConnectionID, session: String = "room", idle: Int? = nil) throws -> ServerMessage.Joined {
        send(.join(.init(callToken: token(uid, session: session), sessionId: session, idleTimeoutSeconds: idle)), from: c)
        for m in outbox.to(c) { if case .joined(let j) = m { return j } }
        XCTFail("no joined for \(uid): \(outbox.to(c))")
        throw CancellationError()
    }

    let a = ConnectionID(node: "n", local: 1), b = ConnectionID(node: "n", local: 2), b2 = ConnectionID(node: "n", local: 3)

    /// The store heartbeat runs on the runner's scheduler: it beats as virtual time passes (a
    /// crash loses at most one beat of end time) and not at all once stopped.
    func testTheStoreHeartbeatBeatsOnTheSchedulersClock() throws {
        _ = try join("ann", ConnectionID(node: "n", local: 1))
        let start = clock.nowMilliseconds()
        func lastSeen() throws -> Int64? {
            try registry.store.locked { () throws(DatabaseError) in try registry.store.db.query("SELECT last_seen_at FROM calls", []).first?.first?.int }
        }
        XCTAssertEqual(try lastSeen(), start)
        registry.startHeartbeat(every: 5)
        advance(by: 4.9)
        XCTAssertEqual(try lastSeen(), start, "not before the period")
        advance(by: 0.1)
        XCTAssertEqual(try lastSeen(), start + 5000)
        advance(by: 10)
        XCTAssertEqual(try lastSeen(), start + 15000, "every period")
        registry.stopHeartbeat()
        advance(by: 30)
        XCTAssertEqual(try lastSeen(), start + 15000, "stopped")
    }

    func testAloneForTheIdleTimeoutEndsTheSessionAndJoiningDisarmsIt() throws {
        _ = try join("ann", a, idle: 60)
        advance(by: 59)
        XCTAssertFalse(outbox.to(a).contains(.left(reason: .timedOut)), "not yet")
        _ = try join("bea", b, idle: 60)
        advance(by: 120)
        XCTAssertFalse(outbox.to(a).contains(.left(reason: .timedOut)), "two in the room: no timeout")
        send(.leave, from: b)
        advance(by: 59.9)
        XCTAssertFalse(outbox.to(a).contains(.left(reason: .timedOut)))
        advance(by: 0.2)
        XCTAssertTrue(outbox.to(a).contains(.left(reason: .timedOut)), "alone again for 60 s: \(outbox.to(a).suffix(2))")
        XCTAssertEqual(clock.pendingCount, 0, "nothing left scheduled")
    }

    func testADroppedConnectionIsHeldForTheGracePeriodThenLeaves() throws {
        let ja = try join("ann", a)
        let jb = try join("bea", b)
        registry.connectionClosed(b)
        registry.settle()
        advance(by: 29)
        XCTAssertFalse(outbox.to(a).contains { if case .participantLeft = $0 { return true }; return false }, "held")
        // Resumed in time on a new connection: nobody sees a leave.
        send(.resume(token: try XCTUnwrap(jb.resumeToken)), from: b2)
        XCTAssertTrue(outbox.to(b2).contains { if case .resumed = $0 { return true }; return false })
        advance(by: 60)
        XCTAssertFalse(outbox.to(a).contains { if case .participantLeft = $0 { return true }; return false })
        // Dropped again and not back: leaves as disconnected exactly at the end of the grace period.
        registry.connectionClosed(b2)
        registry.settle()
        advance(by: 29.9)
        XCTAssertFalse(outbox.to(a).contains { if case .participantLeft = $0 { return true }; return false })
        advance(by: 0.2)
        XCTAssertTrue(outbox.to(a).contains { if case .participantLeft(let p, .disconnected) = $0 { return p.pid == jb.you.pid }; return false })
        _ = ja
    }

    func testAnExpiredTokenIsRefusedOnTheRegistrysClock() {
        let t = token("ann", session: "room", ttl: 10)
        advance(by: 11)
        send(.join(.init(callToken: t, sessionId: "room")), from: a)
        XCTAssertTrue(outbox.to(a).contains { if case .error(.tokenExpired, _) = $0 { return true }; return false }, "\(outbox.to(a))")
    }

    func testTimestampsComeFromTheRegistrysClock() throws {
        let ja = try join("ann", a)
        XCTAssertEqual(ja.you.joinedAt, clock.nowMilliseconds())
        advance(by: 5)
        send(.setHandRaised(true), from: a)
        let hand = outbox.to(a).compactMap { m -> Int64? in if case .participantUpdated(let p, .handRaised) = m { return p.raisedHandTimestamp }; return nil }
        XCTAssertEqual(hand, [clock.nowMilliseconds()])
    }
}
