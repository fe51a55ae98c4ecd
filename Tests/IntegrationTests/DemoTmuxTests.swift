import CallRoomTestSupport
import Foundation
import XCTest

/// `callroom demo` in a real terminal (tmux): the tiles, control bar and event log appear, keys
/// work, and leaving exits 0 with the terminal restored.
final class DemoTmuxTests: XCTestCase {
    let session = "callroom-test-\(getpid())"

    func tmux(_ args: [String]) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // -u: UTF-8 output whatever the test runner's locale.
        p.arguments = ["tmux", "-u"] + args
        p.environment = ProcessInfo.processInfo.environment.merging(["LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"]) { $1 }
        // Output goes to a file, not a pipe: a tmux server started by `new-session` inherits the
        // client's descriptors, so a pipe would never reach end-of-file.
        let outPath = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString).out").path
        FileManager.default.createFile(atPath: outPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        guard let out = FileHandle(forWritingAtPath: outPath) else { return (-1, "cannot create \(outPath)") }
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch { return (-1, "\(error)") }
        p.waitUntilExit()
        try? out.close()
        let data = FileManager.default.contents(atPath: outPath) ?? Data()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func screen() -> String { tmux(["capture-pane", "-p", "-t", session]).1 }

    func waitFor(_ text: String, timeout: TimeInterval = 15) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if screen().contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    override func tearDown() { _ = tmux(["kill-session", "-t", session]) }

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
        XCTAssertTrue(s.contains("[m] Mute"))
        XCTAssertTrue(s.contains("[l] Leave"))
        XCTAssertTrue(s.contains("Event log"))
        XCTAssertTrue(s.contains("SessionStatus.onSessionJoined"))
        XCTAssertTrue(s.contains("ParticipantEvent.onParticipantList"), "(long entries wrap)")
        XCTAssertTrue(s.contains("┌"), "Unicode box drawing in a UTF-8 locale")
        XCTAssertTrue(waitFor("speaking"), "a bot's speaking indicator lights up")

        _ = tmux(["send-keys", "-t", session, "m"])
        XCTAssertTrue(waitFor("YOU ARE MUTED"))
        s = screen()
        XCTAssertTrue(s.contains("[m] Unmute"))
        XCTAssertTrue(s.contains("ButtonClick.onToggleAudioButtonClicke"), "button callback logged before the action")
        XCTAssertTrue(s.contains("MediaEvents.onAudioMuted"))

        _ = tmux(["send-keys", "-t", session, "l"])
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
        XCTAssertTrue(waitFor("DEMO-EXIT="), "the demo exits on SIGTERM:\n\(screen())")
        XCTAssertFalse(screen().contains("[l] Leave"))
        try? FileManager.default.removeItem(atPath: pidFile)
    }
}
