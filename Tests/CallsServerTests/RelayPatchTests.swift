@testable import CallsServer
import CallsCore
import CallsTransport
import XCTest

/// Relay membership as per-room patches: a change touches its own room only, tokens follow
/// the members, and every worker's copy ends up where the canonical table is.
final class RelayPatchTests: XCTestCase {
    func token(_ b: UInt8) -> BindToken? { BindToken(Array(repeating: b, count: 16)) }

    func testAPatchReplacesOneRoomAndReportsWhoLeft() {
        var t = RelayTable()
        t.apply(RelayPatch(room: 1, members: [.init(key: 1, room: 1, ssrc: 11, token: token(1)), .init(key: 2, room: 1, ssrc: 12, token: token(2))]))
        t.apply(RelayPatch(room: 2, members: [.init(key: 3, room: 2, ssrc: 13, token: token(3))]))
        // Member 2 leaves, member 1 resumes with a new bind token.
        let removed = t.apply(RelayPatch(room: 1, members: [.init(key: 1, room: 1, ssrc: 11, token: token(9))]))
        XCTAssertEqual(removed, [2])
        XCTAssertEqual(t.rooms[1], [1])
        XCTAssertNil(t.members[2])
        XCTAssertNil(t.byToken[token(1)!], "the old token no longer binds")
        XCTAssertNil(t.byToken[token(2)!])
        XCTAssertEqual(t.byToken[token(9)!], 1)
        XCTAssertEqual(t.rooms[2], [3], "room 2 untouched")
        XCTAssertEqual(t.byToken[token(3)!], 3)
        XCTAssertEqual(t.apply(RelayPatch(room: 2, members: [])), [3])
        XCTAssertNil(t.rooms[2], "an empty room goes")
        XCTAssertEqual(t.members.count, 1)
    }

    func testWorkersApplyTheSameChangesAndALaggingWorkerResyncs() throws {
        let shared = RelayShared(workers: 2, maxDelayNanoseconds: 0)
        let addr = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: 5000))
        shared.apply(RelayPatch(room: 1, members: [.init(key: 1, room: 1, ssrc: 11, token: token(1))]))
        guard case .bound(let m) = shared.bind(token: try XCTUnwrap(token(1)), ssrc: 11, from: addr, now: 1) else { return XCTFail("bind") }
        XCTAssertEqual(m.key, 1)
        guard case .badToken = shared.bind(token: try XCTUnwrap(token(1)), ssrc: 12, from: addr, now: 2) else { return XCTFail("wrong SSRC") }
        let (changes, whole) = shared.takeChanges(worker: 0)
        XCTAssertNil(whole)
        XCTAssertEqual(changes.count, 2, "the patch and the bind")
        XCTAssertTrue(shared.takeChanges(worker: 0).changes.isEmpty, "taken once")
        // Leaving drops the binding in the canonical state too.
        shared.apply(RelayPatch(room: 1, members: []))
        XCTAssertNil(shared.state.withLock { $0.bindings.addressOf[1] })
        // Worker 1 never ran: past the inbox limit it is told to copy the whole state.
        for k in 0..<RelayState.inboxLimit { shared.apply(RelayPatch(room: 2, members: [.init(key: UInt64(100 + k % 2), room: 2, ssrc: 1)])) }
        let lagging = shared.takeChanges(worker: 1)
        XCTAssertTrue(lagging.changes.isEmpty)
        XCTAssertEqual(lagging.resync?.0.rooms[2]?.count, 1)
    }
}
