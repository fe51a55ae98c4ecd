import CallRoomTestSupport
import Foundation
import XCTest

/// `callroom demo` in a real terminal (tmux): the tiles, control bar and event log appear, keys
/// work, and leaving exits 0 with the terminal restored.
final class DemoTmuxTests: XCTestCase {
    /// A tmux server of its own per test (the previous one may still be exiting on a shared socket).
    let session = "callroom-test-\(getpid())-\(UUID().uuidString.prefix(6))"

    lazy var t = Tmux(session: session)
    func tmux(_ args: [String]) -> (Int32, String) { t.run(args) }
    func screen() -> String { t.screen() }
    func waitFor(_ text: String, timeout: TimeInterval = 15) -> Bool { t.waitFor(text, timeout: timeout) }

    override func tearDown() { _ = tmux(["kill-server"]) }

    func testDemoShowsTilesControlsAndEventLog() throws {
        let (which, _) = tmux(["-V"])
        try XCTSkipIf(which != 0, "tmux is not installed (scripts/install-deps.sh installs it)")
        let cmd = "LANG=C.UTF-8 LC_ALL=C.UTF-8 \(BuiltProducts.path("callroom")) demo --bots 2; echo DEMO-EXIT=$?; sleep 30"
        let (rc, out) = tmux(["new-session", "-d", "-s", session, "-x", "120", "-y", "34", cmd])
        XCTAssertEqual(rc, 0, out)
        XCTAssertTrue(waitFor("Grace Hopper"), "tiles appear:\n\(screen())")
        var s = screen()
        XCTAssertTrue(s.contains("Ada Lovelace"))
        XCTAssertTrue(s.contains("You (you)"))
        XCTAssertTrue(s.contains("3 participants"))
        XCTAssertTrue(s.contains("[m] Mute"), s)
        XCTAssertTrue(s.contains("[l] Leave"))
        XCTAssertTrue(s.contains("[?] Help"))
        XCTAssertTrue(s.contains("Event log"))
        XCTAssertTrue(s.contains("SessionStatus.onSessionJoined"))
        XCTAssertTrue(s.contains("ParticipantEvent.onParticipant"), "(long entries wrap)")
        XCTAssertTrue(s.contains("┌"), "Unicode box drawing in a UTF-8 locale")
        XCTAssertTrue(waitFor("speaking"), "a bot's speaking indicator lights up")

        _ = tmux(["send-keys", "-t", session, "m"])
        XCTAssertTrue(waitFor("YOU ARE MUTED"))
        s = screen()
        XCTAssertTrue(s.contains("[m] Unmute"))
        XCTAssertTrue(s.contains("ButtonClick.onToggleAudioButton"), "button callback logged before the action")
        XCTAssertTrue(s.contains("MediaEvents.onAudioMuted"))

        _ = tmux(["send-keys", "-t", session, "l"])
        XCTAssertTrue(waitFor("Leave?"), "leaving asks first:\n\(screen())")
        _ = tmux(["send-keys", "-t", session, "l"])
        XCTAssertTrue(waitFor("Press any key to exit."), "the summary:\n\(screen())")
        _ = tmux(["send-keys", "-t", session, "Enter"])
        XCTAssertTrue(waitFor("DEMO-EXIT=0"), "leaving exits 0:\n\(screen())")
        XCTAssertFalse(screen().contains("[m] Unmute"), "the call screen is gone: terminal restored")
    }

    func testSIGTERMLeavesAndRestoresTheTerminal() throws {
        let (which, _) = tmux(["-V"])
        try XCTSkipIf(which != 0, "tmux is not installed")
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("demo-\(getpid()).pid").path
        let cmd = "LANG=C.UTF-8 sh -c 'echo $$ > \(pidFile); exec \(BuiltProducts.path("callroom")) demo --bots 1'; echo DEMO-EXIT=$?; sleep 30"
        XCTAssertEqual(tmux(["new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd]).0, 0)
        XCTAssertTrue(waitFor("Ada Lovelace"))
        let pid = try XCTUnwrap(Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""))
        kill(pid, SIGTERM)
        XCTAssertTrue(waitFor("DEMO-EXIT=0"), "the demo leaves and exits 0 on SIGTERM:\n\(screen())")
        XCTAssertFalse(screen().contains("Leave"))
        XCTAssertTrue(screen().contains("Call summary"), "and prints the summary")
        try? FileManager.default.removeItem(atPath: pidFile)
    }
}
