import CallRoomTestSupport
@testable import CallsServer
@testable import CallsStore
import XCTest

/// The store itself (on SQLite, and on PostgreSQL in the suite's PostgreSQL pass: `StoreBackend.current`).
final class CallStoreTests: XCTestCase {
    func testInterruptedCallsAreClosedAtTheirLastHeartbeat() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        do {
            // Written the way the rooms write (the store writer's batches).
            let s = try database.store()
            let call = CallRef(value: 1), a = ParticipantRef(value: 2), b = ParticipantRef(value: 3)
            var refs = StoreRefs()
            let receipts = s.commit([
                StoreRequest(id: 1, commands: [.startCall(call, sessionId: "s", type: "audio", mode: "meet", at: 1000),
                                               .participantJoined(a, call: call, uid: "a", pid: "pa", displayName: "A", at: 1000)]),
                StoreRequest(id: 2, commands: [.participantJoined(b, call: call, uid: "b", pid: "pb", displayName: "B", at: 2000)]),
                StoreRequest(id: 3, commands: [.participantLeft(a, at: 3000)]),
                StoreRequest(id: 4, commands: [.heartbeat([call], at: 5000)]),
            ], refs: &refs)
            XCTAssertTrue(receipts.allSatisfy { if case .success = $0.result { return true }; return false }, "\(receipts)")
            // The process "dies" here: nothing closes the call.
        }
        let s = try database.store()
        XCTAssertEqual(try s.closeInterruptedCalls(), 1)
        let c = try XCTUnwrap(try s.latestCall(sessionId: "s"))
        XCTAssertEqual(c.status, "ended")
        XCTAssertEqual(c.endedAt, 5000)
        XCTAssertEqual(c.participants.map(\.leftAt), [3000, 5000])
        XCTAssertEqual(try s.closeInterruptedCalls(), 0)
    }

    func testAuthTokensAreStoredHashed() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let s = try database.store()
        _ = try s.createUser(uid: "u", name: "U")
        XCTAssertNil(try s.createUser(uid: "u", name: "again"))
        let t = try s.createAuthToken(uid: "u")
        XCTAssertEqual(try s.user(authToken: t)?.uid, "u")
        XCTAssertNil(try s.user(authToken: t + "x"))
        let db = try database.open()
        let stored = try db.query("SELECT token_hash FROM auth_tokens").first?.first?.text
        XCTAssertNotEqual(stored, t)
        XCTAssertEqual(stored?.count, 64)
    }
}

extension CallStoreTests {
    /// Nodes sharing a database claim each outbox row before an attempt: one wins, the row stays
    /// out of sight for the lease, and is due again when the lease runs out (the node died).
    func testOutboxRowsAreClaimedByOneSenderAtATime() throws {
        let database = try TestDatabase()
        defer { database.remove() }
        let a = try database.store(), b = try database.store()  // two nodes' connections
        try a.insertOutbox([OutboxRow(deliveryId: "d1", webhookId: "w", url: "http://127.0.0.1:9/", sessionId: "s", trigger: "call_initiated",
                                      body: "{}", at: 1000)])
        let due = try b.dueDeliveries(now: 1000, limit: 10)
        XCTAssertEqual(due.map(\.deliveryId), ["d1"])
        let id = try XCTUnwrap(due.first?.id)
        XCTAssertTrue(try a.claimDelivery(id: id, now: 1000, until: 31_000), "the first claim wins")
        XCTAssertFalse(try b.claimDelivery(id: id, now: 1000, until: 31_000), "the second loses")
        XCTAssertEqual(try b.dueDeliveries(now: 20_000, limit: 10), [], "out of sight during the lease")
        XCTAssertTrue(try b.claimDelivery(id: id, now: 31_000, until: 61_000), "the lease ran out: another node may try")
        try b.recordAttempt(id: id, status: "delivered", httpStatus: 200, error: nil, next: nil, at: 31_500)
        XCTAssertFalse(try a.claimDelivery(id: id, now: 100_000, until: 130_000), "delivered: nobody sends it again")
    }
}
