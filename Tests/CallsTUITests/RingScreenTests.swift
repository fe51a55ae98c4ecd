@testable import CallsTUI
import Foundation
import XCTest

/// The ringing screens on an in-memory terminal: what each state shows, the bell, keys and
/// clicks as actions, and a window too small.
final class RingScreenTests: XCTestCase {
    // (XCTest runs tests on the main thread; the screen is main-actor isolated.)
    func testIncomingRingsOnceAndKeysAndClicksAnswer() { MainActor.assumeIsolated { Self.incomingRingsOnceAndKeysAndClicksAnswer() } }
    func testASmallWindowSaysSoAndASCIIFrames() { MainActor.assumeIsolated { Self.smallWindowAndASCII() } }

    static func text(_ t: MemoryTerminal) -> String {
        (0..<t.screen.height).map { y in String((0..<t.screen.width).map { t.screen.character(t.screen.cells[y * t.screen.width + $0]) }) }
            .joined(separator: "\n")
    }

    @MainActor static func incomingRingsOnceAndKeysAndClicksAnswer() {
        let t = MemoryTerminal(width: 80, height: 24)
        let s = RingScreen(driver: t, state: .idle(name: "Bob", uid: "bob", note: nil))
        var actions: [RingScreen.Action] = []
        s.onAction = { actions.append($0) }
        s.draw()
        XCTAssertTrue(text(t).contains("online as Bob (bob)"))
        s.show(.offline(name: "Bob", uid: "bob", note: "connection lost: reconnecting…"))
        XCTAssertTrue(text(t).contains("offline: Bob (bob)") && text(t).contains("calls cannot ring here")
                      && text(t).contains("connection lost: reconnecting…"), text(t))
        XCTAssertFalse(text(t).contains("online as"), "never says online while it is not")
        s.show(.idle(name: "Bob", uid: "bob", note: nil))
        s.show(.incoming(from: "Ann", type: "video", group: "Team", since: Date()))
        s.show(.incoming(from: "Ann", type: "video", group: "Team", since: Date()))
        XCTAssertEqual(t.bells, 1, "the bell rings when the call arrives, not on every redraw")
        XCTAssertTrue(text(t).contains("video call · Team · ringing 0:00"), text(t))
        for (key, action) in [("a", RingScreen.Action.accept), ("r", .reject), ("b", .busy)] {
            s.handle(.char(Unicode.Scalar(key)!))
            XCTAssertEqual(actions.last, action)
        }
        s.handle(.enter)
        XCTAssertEqual(actions.last, .accept)
        // A click on [r] Reject.
        let row = text(t).components(separatedBy: "\n").firstIndex { $0.contains("[r] Reject") }!
        let col = text(t).components(separatedBy: "\n")[row].range(of: "[r] Reject")!.lowerBound.utf16Offset(in: text(t).components(separatedBy: "\n")[row])
        actions = []
        s.handle(.click(x: col + 2, y: row))
        XCTAssertEqual(actions, [.reject])
        s.show(.outgoing(to: "Cat", type: "audio", since: Date()))
        s.handle(.escape)
        XCTAssertEqual(actions.last, .cancel)
        s.show(.history(["2026-12-01 12:00  → Cat  audio  busy  00:00:00"]))
        XCTAssertTrue(text(t).contains("→ Cat  audio  busy"))
        s.handle(.escape)
        XCTAssertEqual(actions.last, .back)
    }

    @MainActor static func smallWindowAndASCII() {
        let small = MemoryTerminal(width: 20, height: 5)
        RingScreen(driver: small, state: .outcome("cat is busy")).draw()
        XCTAssertTrue(text(small).contains("window too small"))
        let ascii = MemoryTerminal(width: 40, height: 12, unicode: false)
        RingScreen(driver: ascii, state: .outcome("cat is busy")).draw()
        XCTAssertTrue(text(ascii).contains("+ CallRoom"), text(ascii))
        XCTAssertTrue(text(ascii).contains("cat is busy"))
    }
}
