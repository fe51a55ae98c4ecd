import CallRoomTestSupport
import Foundation
import XCTest

/// The ringing screens in a real terminal (tmux): `callroom listen` idle → an incoming call →
/// Accept → the call screen → the caller hangs up → back to idle, history one key away; and
/// `callroom call` saying why a call did not connect, at 40×12 under LANG=C. The other end is
/// a headless `callroom` process.
final class RingScreenTmuxTests: XCTestCase {
    var tmp: TemporaryDirectory!
    override func setUp() { tmp = TemporaryDirectory("callroom-ringtmux") }
    override func tearDown() { tmp.remove() }

    /// `callroom listen --headless` as `uid` answering with `answer` (`--busy`, `--auto-accept`),
    /// once it is listening.
    func headlessListener(_ uid: String, _ answer: String, on server: CallroomdProcess) throws -> ManagedProcess {
        let p = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--uid", uid, answer, "--server", server.url,
                                                                    "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(p.waitForLine { $0.contains(#""event":"listening""#) }, p.errorOutput)
        return p
    }

    func testListenAnswersACallShowsTheCallScreenAndReturnsToIdle() throws {
        let tmux = Tmux(session: "ring-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let auth = "--server \(server.url) --auth-key \(server.authKey) --output null"
        XCTAssertTrue(tmux.start("LANG=C.UTF-8 \(BuiltProducts.path("callroom")) listen --uid bob \(auth) --input tone:300; echo RING-EXIT=$?; sleep 30",
                                 width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("online as bob"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("[h] History"))
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["call", "bob", "--uid", "ann", "--server", server.url, "--auth-key", server.authKey,
                                                                      "--input", "tone:500", "--output", "null", "--headless"])
        XCTAssertTrue(tmux.waitFor("Incoming call"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("[a] Accept   [r] Reject   [b] Busy"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("audio call"))
        tmux.keys("a")
        XCTAssertTrue(tmux.waitFor("call with ann"), "the call screen: \(tmux.screen())")
        XCTAssertTrue(tmux.waitFor("2 participants"), tmux.screen())
        XCTAssertNotNil(ann.waitForLine { $0.contains(#""event":"onSessionJoined""#) })
        ann.closeInput()  // the caller hangs up: the call ends for both
        XCTAssertEqual(ann.wait(timeout: 10), 0)
        XCTAssertTrue(tmux.waitFor("call with ann ended", timeout: 25), "back to idle after the summary: \(tmux.screen())")
        tmux.keys("h")
        XCTAssertTrue(tmux.waitFor("Call history"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("← ann  audio  ended"), tmux.screen())
        tmux.keys("Escape")
        XCTAssertTrue(tmux.waitFor("online as bob"))
        tmux.keys("q")
        XCTAssertTrue(tmux.waitFor("RING-EXIT=0"), tmux.screen())
    }

    /// Leaving the call screen ends the call for the other side at once, while the summary
    /// still waits for a key (it used to end only once the summary was dismissed).
    func testLeavingOnTheScreenEndsTheCallBeforeTheSummaryGoes() throws {
        let tmux = Tmux(session: "leave-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "info"])
        defer { _ = server.stop() }
        let bob = try headlessListener("bob", "--auto-accept", on: server)
        defer { bob.signal(SIGTERM) }
        XCTAssertTrue(tmux.start("LANG=C.UTF-8 \(BuiltProducts.path("callroom")) call bob --uid ann --name 'Ann A' --server \(server.url) --auth-key \(server.authKey) --input null --output null; echo RING-EXIT=$?; sleep 30",
                                 width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("2 participants"), tmux.screen())
        tmux.keys("l")
        tmux.keys("l")
        XCTAssertTrue(tmux.waitFor("Press any key to exit"), tmux.screen())
        XCTAssertNotNil(bob.waitForLine(timeout: 5) { $0.contains(#""event":"onCallEndedMessageReceived""#) },
                        "the call ended for bob while ann's summary shows: \(bob.output.suffix(4))")
        XCTAssertTrue(tmux.screen().contains("Press any key to exit"), "the summary is still up: \(tmux.screen())")
        XCTAssertEqual(bob.wait(timeout: 10), 0, "bob's auto-accept exits once the call he took is over")
        // Leaving ends the call first (CallScreenController.beforeLeaving), as in RingCommandTests.
        server.assertCallEndedBefore("ann")
        tmux.keys("x")
        XCTAssertTrue(tmux.waitFor("RING-EXIT=0"), tmux.screen())
    }

    /// `demo --ring` is never a dead end: declined, Ada calls again a few seconds later, and
    /// answering then brings you into the call.
    func testTheRingDemoCallsAgainAfterADecline() throws {
        let tmux = Tmux(session: "again-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        XCTAssertTrue(tmux.start("LANG=C.UTF-8 \(BuiltProducts.path("callroom")) demo --ring --bots 1 --input null --output null --video none; echo DEMO-EXIT=$?; sleep 30",
                                 width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("Incoming call"), tmux.screen())
        tmux.keys("r")
        XCTAssertTrue(tmux.waitFor("declined"), tmux.screen())
        XCTAssertTrue(tmux.waitFor("Incoming call", timeout: 15), "Ada calls again: \(tmux.screen())")
        tmux.keys("a")
        XCTAssertTrue(tmux.waitFor("2 participants", timeout: 15), tmux.screen())
        tmux.keys("l")
        tmux.keys("Enter")
        XCTAssertTrue(tmux.waitFor("Press any key to exit"), tmux.screen())
    }

    func testCallSaysWhyItDidNotConnectAtFortyByTwelveInASCII() throws {
        let tmux = Tmux(session: "out-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let cat = try headlessListener("cat", "--busy", on: server)
        defer { cat.signal(SIGTERM) }
        XCTAssertTrue(tmux.start("LC_ALL=C LANG=C NO_COLOR=1 \(BuiltProducts.path("callroom")) call cat --uid dan --server \(server.url) --auth-key \(server.authKey) --input null --output null; echo RING-EXIT=$?; sleep 30",
                                 width: 40, height: 12))
        // The outcome on the screen (an ASCII frame under LANG=C) for a moment, then on the shell.
        let framed = eventuallyValue(15, poll: 0.05) { () -> String? in
            let s = tmux.screen()
            return s.contains("+ CallRoom") && s.contains("cat is busy") ? s : nil
        } ?? ""
        XCTAssertFalse(framed.isEmpty, "the framed outcome: \(tmux.screen())")
        XCTAssertTrue(tmux.waitFor("RING-EXIT=4"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("callroom: cat is busy"), "said on the shell too")
    }
}
