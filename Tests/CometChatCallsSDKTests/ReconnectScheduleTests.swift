@testable import CometChatCallsSDK
import XCTest

/// The client's heartbeat verdict and reconnect back-off on made-up time: no server, no sleep.
final class ReconnectScheduleTests: XCTestCase {
    let s: UInt64 = 1_000_000_000

    func testTheServerIsSilentOnlyAfterFiveSecondsOfNothingOnceHeard() {
        var r = ReconnectSchedule()
        XCTAssertFalse(r.isServerSilent(at: 100 * s), "never heard: no verdict (the join has its own timeout)")
        r.heard(at: 10 * s)
        XCTAssertFalse(r.isServerSilent(at: 15 * s))
        XCTAssertTrue(r.isServerSilent(at: 15 * s + 1))
        r.heard(at: 14 * s)
        XCTAssertFalse(r.isServerSilent(at: 18 * s), "each message resets it")
    }

    func testAttemptsBackOffToOneSecondAndStopWhenTheGracePeriodEnds() {
        var r = ReconnectSchedule()
        r.lost(at: 100 * s, graceSeconds: 3)
        var now = 100 * s
        var delays: [Double] = []
        while let d = r.nextAttempt(at: now) {
            delays.append(d)
            now += UInt64(d * 1e9)
        }
        XCTAssertEqual(delays, [0.25, 0.5, 1, 1, 1], "attempts at 0, 0.25, 0.75, 1.75 and 2.75 s; then the grace period (3 s) is over")
        XCTAssertGreaterThanOrEqual(now, 103 * s)
        XCTAssertNil(r.nextAttempt(at: now), "given up")
    }

    func testBackInStartsOverAndALaterLossHasItsOwnGracePeriod() {
        var r = ReconnectSchedule()
        r.lost(at: 0, graceSeconds: 30)
        _ = r.nextAttempt(at: 0)
        _ = r.nextAttempt(at: s)
        r.recovered()
        XCTAssertNil(r.deadline)
        XCTAssertNil(r.nextAttempt(at: 2 * s), "connected: nothing to attempt")
        r.lost(at: 1000 * s, graceSeconds: 30)
        XCTAssertEqual(r.nextAttempt(at: 1000 * s), 0.25, "the back-off starts over")
        XCTAssertNotNil(r.nextAttempt(at: 1029 * s))
        XCTAssertNil(r.nextAttempt(at: 1030 * s))
    }
}
