@testable import CallsServer
import XCTest

/// The floor under a bucket download's client, on a virtual clock (milliseconds).
final class ReaderPaceTests: XCTestCase {
    let floor = ReaderPace.Floor(bytes: 1000, seconds: 10)

    func testAClientThatTakesTooLittleInAWindowIsCut() {
        var pace = ReaderPace(floor: floor)
        XCTAssertEqual(pace.full(nowMs: 0), .wait(untilMs: 10_000), "the buffer filling opens a window")
        pace.took(400, emptied: false)
        XCTAssertEqual(pace.full(nowMs: 3_000), .wait(untilMs: 10_000), "judged only at the window's end")
        pace.took(500, emptied: false)
        XCTAssertEqual(pace.full(nowMs: 10_000), .tooSlow(took: 900))
    }

    func testAClientThatTakesNothingIsCutAtTheWindowsEnd() {
        var pace = ReaderPace(floor: floor)
        _ = pace.full(nowMs: 5)
        XCTAssertEqual(pace.full(nowMs: 10_004), .wait(untilMs: 10_005))
        XCTAssertEqual(pace.full(nowMs: 10_005), .tooSlow(took: 0))
    }

    func testAClientThatKeepsUpOpensTheNextWindow() {
        var pace = ReaderPace(floor: floor)
        _ = pace.full(nowMs: 0)
        pace.took(1000, emptied: false)
        XCTAssertEqual(pace.full(nowMs: 12_000), .wait(untilMs: 22_000), "met the floor: a new window from now")
        pace.took(999, emptied: false)
        XCTAssertEqual(pace.full(nowMs: 22_000), .tooSlow(took: 999), "each window is judged on its own")
    }

    /// A client that empties the buffer is waiting on the store: its window closes unjudged,
    /// and what it took before does not count toward the next.
    func testEmptyingTheBufferClosesTheWindow() {
        var pace = ReaderPace(floor: floor)
        _ = pace.full(nowMs: 0)
        pace.took(10, emptied: true)
        XCTAssertNil(pace.window)
        pace.took(5000, emptied: false)
        XCTAssertEqual(pace.full(nowMs: 60_000), .wait(untilMs: 70_000), "a new window, from when it filled again")
        XCTAssertEqual(pace.full(nowMs: 70_000), .tooSlow(took: 0))
    }
}
