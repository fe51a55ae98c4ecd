import CallRoomTestSupport
@testable import CallsServer
import CallsCore
import XCTest
import CallsDatabase

/// A background loop meeting a failing store: the error reaches it (nil, the step skipped), the
/// log says so once when the outage starts and once when it ends — never once per retry.
final class StoreOutageTests: XCTestCase {
    func testAnOutageIsLoggedOnceWhenItStartsAndOnceWhenItEnds() {
        let lines = Locked<[String]>([])
        let outage = StoreOutage("webhooks", log: ServerLog(level: .info, sink: { l in lines.withLock { $0.append(l) } }))
        var down = true
        func read() -> Int? {
            outage.attempt("due deliveries") { () throws(DatabaseError) -> Int in
                if down { throw .unavailable("host=/tmp/pg: connection refused") }
                return 7
            }
        }
        XCTAssertNil(read())
        XCTAssertNil(read())
        XCTAssertNil(read())
        XCTAssertTrue(outage.isOngoing)
        XCTAssertEqual(lines.withLock { $0.count }, 1, "one line for the whole outage")
        XCTAssertTrue(lines.withLock { $0[0] }.contains("WARN webhooks: the database failed; retrying"))
        XCTAssertTrue(lines.withLock { $0[0] }.contains("operation=due deliveries"))
        down = false
        XCTAssertEqual(read(), 7)
        XCTAssertEqual(read(), 7)
        XCTAssertFalse(outage.isOngoing)
        XCTAssertEqual(lines.withLock { $0.count }, 2)
        XCTAssertTrue(lines.withLock { $0[1] }.contains("webhooks: the database answers again failed_operations=3"), lines.withLock { $0[1] })
    }
}
