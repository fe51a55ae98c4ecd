import CallRoomTestSupport
@testable import CallsServer
import Foundation
import XCTest

/// A stopped server lets go of what it held: started and stopped twenty times in one process
/// (as the suite does hundreds of times), the process's open descriptors come back to where
/// they were — the store, the audit log, sockets and event loops all closed, not kept alive by
/// a cycle until the process ends. (The suite's PostgreSQL pass once ran out: a `postgres` it
/// started inherited ~980 descriptors.)
final class ServerLifecycleTests: XCTestCase {
    func testAStoppedServerLeavesNoDescriptorsBehind() throws {
        // One first: what stays for the process (libraries' one-time descriptors) is not a leak.
        let warm = try ServerHarness(removesDataOnStop: true)
        _ = try warm.joinAndBind("a", session: "warm")
        warm.stop()
        let before = openDescriptorCount()
        for i in 0..<20 {
            let h = try ServerHarness(removesDataOnStop: true)
            let p = try h.joinAndBind("u\(i)", session: "s\(i)")
            p.probe.send(.leave)
            XCTAssertTrue(p.probe.waitClosed())
            p.probe.disconnect()
            p.socket.close()
            h.stop()
        }
        let after = eventuallyValue(5) { () -> Int? in
            let n = openDescriptorCount()
            return n <= before + 4 ? n : nil
        } ?? openDescriptorCount()
        XCTAssertLessThanOrEqual(after, before + 4, "20 servers started and stopped: \(before) descriptors open before, \(after) after")
    }

    /// What the suite starts as a daemon (PostgreSQL, tmux servers) inherits none of the test
    /// process's descriptors: they would hold its pipes open and count against the daemon's
    /// own limit.
    func testAToolThatLeavesADaemonInheritsNothingButItsOutput() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let r = DetachedTool.run(["/bin/ls", "/proc/self/fd"], timeout: 10)
        XCTAssertEqual(r.status, 0, r.output)
        let inherited = r.output.split(separator: "\n").compactMap { Int($0) }.sorted()
        // 0–2, and the directory ls reads.
        XCTAssertEqual(inherited, [0, 1, 2, 3], "descriptors the tool had: \(inherited) (the test process has \(openDescriptorCount()))")
    }
}
