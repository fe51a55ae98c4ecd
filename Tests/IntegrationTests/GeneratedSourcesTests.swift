import CallRoomTestSupport
import Foundation
import XCTest

/// Files derived from one declaration are current: scripts/gen-listeners.py rewrites the
/// listener defaults, `CallEvent` and `ListenerBridge` from the listener protocols.
final class GeneratedSourcesTests: XCTestCase {
    func testListenerCallbacksAreGeneratedFromTheirDeclaration() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let p = try ManagedProcess("/usr/bin/env", ["python3", root + "/scripts/gen-listeners.py", "--check"])
        let status = p.wait(timeout: 30)
        XCTAssertEqual(status, 0, "generated files are out of date; run scripts/gen-listeners.py:\n\(p.errorOutput)")
        XCTAssertNotNil(p.waitForLine(timeout: 1) { $0.contains("61 callbacks in 6 protocols") }, "\(p.output)")
    }
}
