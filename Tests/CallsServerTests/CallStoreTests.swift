@testable import CallsServer
import XCTest

final class CallStoreTests: XCTestCase {
    func testInterruptedCallsAreClosedAtTheirLastHeartbeat() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crstore-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/db.sqlite"
        do {
            // Written the way the rooms write (the store writer's batches).
            let s = try CallStore(path: path)
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
        let s = try CallStore(path: path)
        XCTAssertEqual(try s.closeInterruptedCalls(), 1)
        let c = try XCTUnwrap(try s.latestCall(sessionId: "s"))
        XCTAssertEqual(c.status, "ended")
        XCTAssertEqual(c.endedAt, 5000)
        XCTAssertEqual(c.participants.map(\.leftAt), [3000, 5000])
        XCTAssertEqual(try s.closeInterruptedCalls(), 0)
    }

    func testAuthTokensAreStoredHashed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crstore-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try CallStore(path: dir + "/db.sqlite")
        _ = try s.createUser(uid: "u", name: "U")
        XCTAssertNil(try s.createUser(uid: "u", name: "again"))
        let t = try s.createAuthToken(uid: "u")
        XCTAssertEqual(try s.user(authToken: t)?.uid, "u")
        XCTAssertNil(try s.user(authToken: t + "x"))
        let db = try SQLiteDatabase(path: dir + "/db.sqlite", readOnly: true)
        let stored = try db.query("SELECT token_hash FROM auth_tokens").first?.first?.text
        XCTAssertNotEqual(stored, t)
        XCTAssertEqual(stored?.count, 64)
    }
}
