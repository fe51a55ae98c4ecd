import CallRoomTestSupport
import CallsCore
import CallsDatabase
@testable import CallsServer
@testable import CallsStore
import Foundation
import XCTest

/// The store writer against a real SQLite file (and a real PostgreSQL database in the suite's
/// PostgreSQL pass): group commit, a failing request rolled back alone, references resolved
/// across batches.
final class StoreWriterTests: XCTestCase {
    var database: TestDatabase!
    var store: CallStore!
    var receipts: Receipts!
    var writer: StoreWriter!

    final class Receipts: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [StoreReceipt] = []
        func add(_ r: [StoreReceipt]) { lock.withLock { list += r } }
        var all: [StoreReceipt] { lock.withLock { list } }
    }

    override func setUpWithError() throws {
        database = try TestDatabase()
        store = try database.store()
        let r = Receipts()
        receipts = r
        writer = StoreWriter(store: store) { r.add($0) }
    }

    override func tearDown() { database?.remove() }

    /// Holds the store's lock on another thread until the returned semaphore is signalled, so
    /// the writer's first batch waits and what is submitted meanwhile queues up.
    func holdStore() -> DispatchSemaphore {
        let release = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [store] in
            try? store!.locked { () throws(DatabaseError) in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        return release
    }

    func testRequestsThatQueueWhileABatchCommitsShareTheNextTransaction() throws {
        let call = CallRef(value: 1)
        // Everything submitted while the store is held must go in one more batch.
        let release = holdStore()
        writer.submit(StoreRequest(id: 0, commands: [.startCall(call, sessionId: "s", type: "audio", mode: "meet", at: 1)]))
        for i in 1...200 {
            writer.submit(StoreRequest(id: UInt64(i), commands: [.participantJoined(ParticipantRef(value: UInt64(i)), call: call, uid: "u\(i)",
                                                                                    pid: "p\(i)", displayName: nil, at: 2)]))
        }
        release.signal()
        writer.waitUntilIdle()
        XCTAssertEqual(receipts.all.map(\.id), Array(0...200), "every receipt, in order")
        XCTAssertTrue(receipts.all.allSatisfy { if case .success = $0.result { return true }; return false })
        let batches = store.metrics.batches.load(ordering: .relaxed)
        XCTAssertLessThanOrEqual(batches, 2, "201 requests in at most two transactions")
        XCTAssertEqual(store.metrics.batchedRequests.load(ordering: .relaxed), 201)
        XCTAssertEqual(try store.latestCall(sessionId: "s")?.participants.count, 200)
    }

    func testAFailingRequestIsRolledBackAloneAndReported() throws {
        _ = try store.createUser(uid: "ann", name: "Ann Stored")
        let call = CallRef(value: 1), ann = ParticipantRef(value: 2), ghost = ParticipantRef(value: 3)
        let release = holdStore()
        writer.submit(StoreRequest(id: 1, commands: [.startCall(call, sessionId: "s", type: "audio", mode: "meet", at: 10),
                                                     .participantJoined(ann, call: call, uid: "ann", pid: "pa", displayName: nil, at: 10)]))
        // Refers to a call nobody started: fails, and takes its first command with it.
        writer.submit(StoreRequest(id: 2, commands: [.chat(call: call, uid: "ann", pid: "pa", name: "Ann", text: "kept?", at: 11),
                                                     .participantJoined(ghost, call: CallRef(value: 99), uid: "x", pid: "px", displayName: nil, at: 11)]))
        writer.submit(StoreRequest(id: 3, commands: [.chat(call: call, uid: "ann", pid: "pa", name: "Ann", text: "kept", at: 12)]))
        release.signal()
        writer.waitUntilIdle()
        let byID = Dictionary(uniqueKeysWithValues: receipts.all.map { ($0.id, $0.result) })
        XCTAssertEqual(try byID[1]?.get().name, "Ann Stored", "the stored name, resolved in the batch")
        guard case .failure(let why)? = byID[2] else { return XCTFail("request 2 fails") }
        XCTAssertTrue(why.description.contains("not recorded"), why.description)
        XCTAssertGreaterThan(try XCTUnwrap(byID[3]?.get().chatID), 0)
        XCTAssertEqual(try store.chatMessages(sessionId: "s", page: 1, perPage: 10).items.map(\.text), ["kept"], "request 2's chat was rolled back")
        XCTAssertEqual(store.metrics.requestFailures.load(ordering: .relaxed), 1)

        // Later batches still resolve the references: leave, then end.
        writer.submit(StoreRequest(id: 4, commands: [.participantLeft(ann, at: 20), .endCall(call, at: 21)]))
        writer.waitUntilIdle()
        let stored = try XCTUnwrap(store.latestCall(sessionId: "s"))
        XCTAssertEqual(stored.status, "ended")
        XCTAssertEqual(stored.endedAt, 21)
        XCTAssertEqual(stored.participants.first?.leftAt, 20)
    }
}
