import CallRoomTestSupport
import CallsCore
import CallsTUI
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// `callroom share -- COMMAND` against a real `callroomd`: a scripted program's terminal
/// arrives at a viewer cell for cell (checked against tmux's own capture of the shared pane),
/// keeps up as it changes, the screen-share events fire, and it ends with the command.
final class ScreenShareEndToEndTests: XCTestCase {
    func testAScriptedTerminalArrivesCellExact() async throws {
        let tmp = TemporaryDirectory("callroom-share")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"))
        defer { _ = server.stop() }
        let (url, appId, authKey) = (server.url, server.appId, server.authKey)

        let events = EventRecorder<String>()
        let viewer = CallsClient(serverURL: try XCTUnwrap(URL(string: url)), appID: appId, eventQueue: DispatchQueue(label: "viewer")) { events.add($0.callback) }
        _ = try await viewer.login(uid: "qa", authKey: authKey)
        try await viewer.join(callToken: try await viewer.generateToken(sessionID: "triage"), sessionID: "triage",
                              settings: SessionSettingsBuilder().setSessionType(.voice).setAudioInput("null").setAudioOutput("none").build())
        // The script: colours, a wide character, then a counter that changes for 2 s, then it waits.
        let script = #"printf '\033[31mFAIL\033[0m test_login \033[1;32mPASS\033[0m 日本\n'; for i in 1 2 3 4 5 6 7 8 9 10; do printf 'tick %d\r' $i; sleep 0.2; done; echo; echo done; sleep 6"#
        let share = try ManagedProcess(BuiltProducts.path("callroom"), ["share", "triage", "--server", url, "--uid", "lead", "--auth-key", authKey,
                                                                        "--size", "50x8", "--", "bash", "-c", script])
        XCTAssertNotNil(share.waitForLine(timeout: 15) { $0.contains("sharing") }, share.errorOutput)
        func grid() -> (String, TerminalGrid)? { viewer.sharedScreens.first.map { ($0.key, $0.value) } }
        await eventually(5) { grid()?.1.text.contains("done") == true }
        let (pid, g) = try XCTUnwrap(grid(), "the viewer has the shared terminal")
        // tmux's own view of the shared pane is the truth the viewer must match, cell for cell.
        let pane = TmuxPane(socket: "callroom-share-\(share.process.processIdentifier)", target: "share:0.0")
        let truth = TerminalCapture.grid(lines: try XCTUnwrap(pane.capture()), columns: 50, rows: 8, cursor: nil)
        XCTAssertEqual(g.columns, 50)
        XCTAssertEqual(g.rows, 8)
        for y in 0..<8 { for x in 0..<50 { XCTAssertEqual(g[x, y], truth[x, y], "cell \(x),\(y)") } }
        XCTAssertTrue(g.text.hasPrefix("FAIL test_login PASS 日本\ntick 10\ndone"), g.text)
        XCTAssertEqual(g[0, 0].style.fg, 1, "red")
        XCTAssertEqual(g[17, 0].style.fg, 2, "green")
        XCTAssertEqual(g[17, 0].style.bold, true)
        XCTAssertTrue(events.has("onParticipantStartedScreenShare"), events.all.joined(separator: " "))
        XCTAssertEqual(viewer.participants.first { $0.pid == pid }?.isPresenting, true)
        // The command ends (sleep 6): the share stops, its presenter leaves.
        XCTAssertEqual(share.wait(timeout: 20), 0, share.errorOutput)
        await eventually(3) { viewer.sharedScreens.isEmpty }
        XCTAssertTrue(viewer.sharedScreens.isEmpty, "the share ended with the command")
        XCTAssertTrue(events.has("onParticipantStoppedScreenShare") || events.has("onParticipantLeft"))
        await viewer.leave()
    }
}

/// Listener callback names (`EventRecorder<String>` of `CallEvent.callback`): whether one came.
extension EventRecorder where Event == String {
    func has(_ name: String) -> Bool { all.contains { $0.hasSuffix(name) || $0 == name } }
}
