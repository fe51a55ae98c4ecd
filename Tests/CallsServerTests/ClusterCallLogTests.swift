import CallRoomTestSupport
@testable import CallsServer
@testable import CallsStore
import XCTest

/// Call logs with several nodes on one database (SQLite here, PostgreSQL in the suite's
/// PostgreSQL pass): each node's calls carry its id; a node that dies leaves its calls open
/// until a live node closes them at its last heartbeat (or takes the room over); either way the
/// session's next room continues the same call, its earlier participants left at the cut.
final class ClusterCallLogTests: XCTestCase {
    var database: TestDatabase!
    override func setUpWithError() throws { database = try TestDatabase() }
    override func tearDown() { database.remove() }

    func store(node: String?) throws -> CallStore {
        let s = try database.store()
        s.nodeID = node
        return s
    }

    /// A room of `session` on `store` with `uid` in it, heartbeat at `seen`.
    func room(_ s: CallStore, _ session: String, uid: String, at: Int64, seen: Int64) {
        let call = CallRef(value: 1), p = ParticipantRef(value: 2)
        var refs = StoreRefs()
        let receipts = s.commit([
            StoreRequest(id: 1, commands: [.startCall(call, sessionId: session, type: "audio", mode: "meet", at: at),
                                           .participantJoined(p, call: call, uid: uid, pid: "p-\(uid)", displayName: nil, at: at)]),
            StoreRequest(id: 2, commands: [.heartbeat([call], at: seen)]),
        ], refs: &refs)
        XCTAssertTrue(receipts.allSatisfy { if case .success = $0.result { return true }; return false }, "\(receipts)")
    }

    func testARoomMovedToAnotherNodeContinuesItsCall() throws {
        let a = try store(node: "node-a"), b = try store(node: "node-b")
        room(a, "s", uid: "ann", at: 1000, seen: 4000)
        // Node A dies; the room is placed on B before anyone closed A's call: B takes the call over.
        room(b, "s", uid: "ann", at: 6000, seen: 7000)
        let c = try XCTUnwrap(try b.latestCall(sessionId: "s"))
        XCTAssertEqual(c.status, "ongoing")
        XCTAssertEqual(c.participants.map(\.leftAt), [4000, nil], "before the move: left at A's last heartbeat; after: still in")
        XCTAssertEqual(c.participants.map(\.joinedAt), [1000, 6000])
        XCTAssertEqual(try b.nodesWithOpenCalls(), ["node-b"])
        XCTAssertEqual(try database.open().query("SELECT COUNT(*) FROM calls").first?.first?.int, 1, "one call, not two")
    }

    func testTheCallsOfAGoneNodeAreClosedAndReopenedWhenTheRoomReturns() throws {
        let a = try store(node: "node-a"), b = try store(node: "node-b")
        room(a, "s", uid: "ann", at: 1000, seen: 4000)
        room(b, "t", uid: "bob", at: 1000, seen: 4000)
        // Ringing calls (no node yet) and B's calls are not A's.
        XCTAssertEqual(try b.closeInterruptedCalls(of: .nodes(["node-a"]), now: 9000), 1)
        XCTAssertEqual(try b.closeInterruptedCalls(of: .nodes(["node-a"]), now: 9000), 0, "once")
        XCTAssertEqual(try b.closeInterruptedCalls(of: .nodes([]), now: 9000), 0)
        XCTAssertEqual(try b.latestCall(sessionId: "t")?.status, "ongoing")
        let cut = try XCTUnwrap(try b.latestCall(sessionId: "s"))
        XCTAssertEqual(cut.status, "ended")
        XCTAssertEqual(cut.endedAt, 4000, "at A's last heartbeat")
        // The room starts again within the window, on B: the same call goes on, now B's.
        room(b, "s", uid: "ann", at: 10000, seen: 11000)
        let again = try XCTUnwrap(try b.latestCall(sessionId: "s"))
        XCTAssertEqual(again.id, cut.id)
        XCTAssertEqual(again.status, "ongoing")
        XCTAssertNil(again.endedAt)
        XCTAssertEqual(again.participants.map(\.leftAt), [4000, nil])
        XCTAssertEqual(try b.nodesWithOpenCalls(), ["node-b"])
        // Past the window a new call starts.
        XCTAssertEqual(try b.closeInterruptedCalls(of: .nodes(["node-b"]), now: 12000), 2)
        room(a, "s", uid: "ann", at: 12000 + CallStore.reopenWindowMilliseconds + 1, seen: 12000 + CallStore.reopenWindowMilliseconds + 2)
        XCTAssertNotEqual(try a.latestCall(sessionId: "s")?.id, cut.id)
    }
}
