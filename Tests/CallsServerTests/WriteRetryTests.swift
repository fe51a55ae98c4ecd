import CallRoomTestSupport
import CallsSupport
import Foundation
import XCTest

/// A write the store refused (a recording's end on a full disk) is tried again on the clock
/// until it is stored — logged once then, not per attempt — or its window passes (logged as
/// left for crash recovery). On a virtual clock.
final class WriteRetryTests: XCTestCase {
    func testAWriteIsTriedAgainUntilItIsStored() {
        let lines = Locked<[String]>([])
        let clock = VirtualScheduler()
        let log = ServerLog(level: .info, sink: { l in lines.withLock { $0.append(l) } })
        let failuresLeft = Locked(3)
        let retry = WriteRetry("recording end", fields: ["rid": "rec_1"], log: log, scheduler: clock, every: 5, window: 3600) {
            failuresLeft.withLock { n in
                guard n > 0 else { return nil }
                n -= 1
                return "database error: database or disk is full"
            }
        }
        retry.start()
        clock.advance(by: 4.9)
        XCTAssertEqual(retry.attempts, 1, "not before its interval")
        clock.advance(by: 15.1)
        XCTAssertEqual(retry.attempts, 5, "three more failed, the fourth more stored it")
        XCTAssertEqual(lines.withLock { $0.count }, 1, "one line: \(lines.withLock { $0 })")
        XCTAssertTrue(lines.withLock { $0[0] }.contains("INFO recording end stored after 5 attempts rid=rec_1"), lines.withLock { $0[0] })
        clock.advance(by: 60)
        XCTAssertEqual(retry.attempts, 5, "nothing after it is stored")
        XCTAssertEqual(clock.pendingCount, 0)
    }

    func testAWriteThatNeverSucceedsIsLeftForRecoveryWhenItsWindowPasses() {
        let lines = Locked<[String]>([])
        let clock = VirtualScheduler()
        let log = ServerLog(level: .info, sink: { l in lines.withLock { $0.append(l) } })
        let retry = WriteRetry("transcription end", fields: ["tid": "tr_1"], log: log, scheduler: clock, every: 5, window: 60) {
            "database unavailable: host=/tmp/pg: connection refused"
        }
        retry.start()
        clock.advance(by: 600)
        XCTAssertEqual(retry.attempts, 13, "the first and one every 5 s for a minute")
        XCTAssertEqual(clock.pendingCount, 0, "given up")
        XCTAssertEqual(lines.withLock { $0.count }, 1)
        XCTAssertTrue(lines.withLock { $0[0] }.contains("ERROR transcription end still not stored after 13 attempts: left for crash recovery at the next start"),
                      lines.withLock { $0[0] })
        XCTAssertTrue(lines.withLock { $0[0] }.contains("error=database unavailable"))
    }

    func testCancelStopsTheAttempts() {
        let clock = VirtualScheduler()
        let retry = WriteRetry("recording end", fields: [:], log: ServerLog(level: .info, sink: { _ in }), scheduler: clock) { "still full" }
        retry.start()
        clock.advance(by: 10)
        retry.cancel()
        clock.advance(by: 100)
        XCTAssertEqual(retry.attempts, 3)
        XCTAssertTrue(retry.isFinished)
    }

    /// A server's retries stop with it, and none starts once it is stopping (a recording whose
    /// end the stop itself wrote, refused).
    func testTheServersRetriesStopWithIt() {
        let clock = VirtualScheduler()
        let log = ServerLog(level: .info, sink: { _ in })
        let retries = WriteRetries()
        let stored = WriteRetry("transcription end", fields: [:], log: log, scheduler: clock) { nil }
        let full = (0..<2).map { _ in WriteRetry("recording end", fields: [:], log: log, scheduler: clock) { "still full" } }
        retries.start(stored)
        for r in full { retries.start(r) }
        XCTAssertEqual(retries.pending, 3)
        clock.advance(by: 5)
        XCTAssertEqual(retries.pending, 2, "the stored one has ended")
        retries.cancelAll()
        XCTAssertEqual(retries.pending, 0)
        clock.advance(by: 100)
        XCTAssertEqual(full.map(\.attempts), [2, 2], "no attempt after the stop")
        XCTAssertEqual(clock.pendingCount, 0)
        let late = WriteRetry("recording end", fields: [:], log: log, scheduler: clock) { "still full" }
        retries.start(late)
        clock.advance(by: 100)
        XCTAssertEqual(late.attempts, 1, "not started: the server is stopping")
        XCTAssertEqual(retries.pending, 0)
    }
}
