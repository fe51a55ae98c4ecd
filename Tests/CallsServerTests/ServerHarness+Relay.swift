import CallRoomTestSupport
import CallsCore
@testable import CallsServer
@testable import CallsRelay
import XCTest

extension ServerHarness {
    /// Waits until the server has handled what `probes` sent so far (a ping each, answered after
    /// it; then the rooms' queue drained, so every relay patch is posted) and, with the kernel
    /// fast path on, worker 0 has brought every change into its maps. The relay's workers apply
    /// posted patches before their next batch.
    func settleRelay(after probes: SignalProbe..., file: StaticString = #filePath, line: UInt = #line) {
        for p in probes {
            let id = Int.random(in: 1...1_000_000)
            p.send(.ping(id))
            XCTAssertNotNil(p.wait { $0 == .pong(id) }, "pong", file: file, line: line)
        }
        server.running?.parts.rooms.queue.sync {}
        XCTAssertTrue(eventually(2) { server.running?.relay.fastPathCaughtUp != false }, "the fast path's maps caught up", file: file, line: line)
    }
}
