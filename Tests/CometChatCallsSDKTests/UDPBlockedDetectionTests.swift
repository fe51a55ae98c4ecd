import CallRoomTestSupport
import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
@testable import CometChatCallsSDK
import Foundation
import Synchronization
import XCTest

/// "UDP is blocked" is judged per binding: a rejoin that moves the engine to another relay gets
/// its own wait for the acknowledgement, however long the call has run. (It used to count from
/// the start of the call, so a new relay whose first ack took one frame turned media over to
/// the signalling connection — which a cluster refuses for a room elsewhere: silence after a
/// fail-over, about one run in twenty of ClusterFailoverTests.) Real UDP sockets on loopback
/// stand in for the relays.
final class UDPBlockedDetectionTests: XCTestCase {
    func key(_ ssrc: UInt32) -> WireMediaKey { WireMediaKey(ssrc: ssrc, epoch: 0, key: Base64URL.encode([UInt8](repeating: 7, count: 28))) }

    func testEachBindingGetsItsOwnWaitBeforeUDPIsCalledBlocked() throws {
        let blocked = Atomic<Int>(0)
        var o = MediaEngine.Options()
        o.udpBlockedAfterMs = 300
        o.onUDPBlocked = { blocked.add(1, ordering: .relaxed) }
        let engine = try MediaEngine(input: NullInput(frameSamples: 960), output: nil, options: o)
        let first = try FakeRelay(ackAfter: 0), second = try FakeRelay(ackAfter: 0.15), silent = try FakeRelay(ackAfter: nil)
        defer { for r in [first, second, silent] { r.stop() } }
        try engine.start(relay: first.socket.localAddress, ssrc: 1, bindToken: [UInt8](repeating: 1, count: 16), keys: [key(1)])
        defer { engine.stop() }
        Thread.sleep(forTimeInterval: 0.6)  // (deliberate: the rejoin below comes 0.6 s into the call, past the 300 ms wait)
        XCTAssertTrue(engine.statistics.bound, "the first relay acknowledged")
        XCTAssertEqual(blocked.load(ordering: .relaxed), 0)

        // A rejoin, 0.6 s into the call, to a relay that acknowledges 0.15 s later: not blocked.
        try engine.retarget(relay: second.socket.localAddress, ssrc: 2, bindToken: [UInt8](repeating: 2, count: 16), keys: [key(2)])
        Thread.sleep(forTimeInterval: 0.6)
        XCTAssertTrue(engine.statistics.bound, "the second relay acknowledged (after \(second.binds.load(ordering: .relaxed)) binds)")
        XCTAssertEqual(blocked.load(ordering: .relaxed), 0, "a new binding waits its own 300 ms")

        // One that never answers: reported once, 300 ms after that binding began.
        let moved = Date()
        try engine.retarget(relay: silent.socket.localAddress, ssrc: 3, bindToken: [UInt8](repeating: 3, count: 16), keys: [key(3)])
        eventually(3) { blocked.load(ordering: .relaxed) > 0 }
        let after = Date().timeIntervalSince(moved)
        XCTAssertEqual(blocked.load(ordering: .relaxed), 1)
        XCTAssertGreaterThanOrEqual(after, 0.29, "not before its wait: \(after) s")
        XCTAssertTrue(holds(for: 0.5) { blocked.load(ordering: .relaxed) == 1 }, "once per binding")
    }
}
