import CallRoomTestSupport
import CallsCore
import CallsTUI
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// The call screen's own share action (`d`), in a real tmux against a real `callroomd`: the
/// picker lists a new shell and the other panes of your tmux session; picking a pane shares it
/// (a viewer gets it cell for cell, with the screen-share events), `d` stops it; a new shell
/// opens a tmux window, and closing that window ends the share.
final class CallScreenShareTests: XCTestCase {
    func testTheShareKeySharesAPaneAndANewShell() async throws {
        let socket = "callroom-share-ui-\(getpid())"
        let t = Tmux(session: socket)
        try XCTSkipIf(!t.isAvailable, "tmux is not installed")
        let tmp = TemporaryDirectory("callroom-share-ui")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"))
        defer { _ = server.stop() }
        let (url, authKey) = (server.url, server.authKey)

        let events = EventRecorder<String>()
        let viewer = CallsClient(serverURL: try XCTUnwrap(URL(string: url)), appID: server.appId, eventQueue: DispatchQueue(label: "viewer")) { events.add($0.callback) }
        _ = try await viewer.login(uid: "qa", authKey: authKey)
        try await viewer.join(callToken: try await viewer.generateToken(sessionID: "triage"), sessionID: "triage",
                              settings: SessionSettingsBuilder().setSessionType(.voice).setAudioInput("null").setAudioOutput("none").build())

        // Window 0: a failing test run to share. Window 1: the call screen.
        let script = #"printf '\033[31mFAIL\033[0m test_checkout\n\033[32mok\033[0m test_login\n'; sleep 120"#
        XCTAssertTrue(t.start("bash -c \(Self.quoted(script))", width: 120, height: 34))
        let join = "\(BuiltProducts.path("callroom")) join triage --server \(url) --uid lead --auth-key \(authKey) --input null --output null; sleep 30"
        XCTAssertEqual(t.run(["new-window", "-t", socket, "LANG=C.UTF-8 \(join)"]).status, 0)
        func waitScreen(_ text: String, _ step: String, timeout: TimeInterval = 10) {
            if eventually(timeout, poll: 0.05, { t.screen().contains(text) }) { return }
            XCTFail("\(step): '\(text)' not on screen:\n\(t.screen())")
        }
        waitScreen("Share term", "the share button is on the bar")
        waitScreen("in call", "joined (sharing needs a session)")
        await eventually(5) { viewer.participants.count >= 2 }
        let sharedPane = try XCTUnwrap(t.run(["display-message", "-p", "-t", "\(socket):0", "#{pane_id}"]).output
            .trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty)

        // d: the picker, with a new shell first and window 0's pane; not the call screen's own.
        t.keys("d")
        waitScreen("Share a terminal", "the picker opens")
        let picker = t.screen()
        XCTAssertTrue(picker.contains("1  a new shell (new tmux window)"), picker)
        XCTAssertTrue(picker.contains("2  pane \(sharedPane)  window 0:"), picker)
        let ownPane = try XCTUnwrap(t.run(["display-message", "-p", "-t", "\(socket):1", "#{pane_id}"]).output
            .trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty)
        XCTAssertFalse(picker.contains("pane \(ownPane) "), "the call screen does not offer itself")
        t.keys("2")
        waitScreen("Stop share", "the button says it is sharing")

        func grid() -> (String, TerminalGrid)? { viewer.sharedScreens.first.map { ($0.key, $0.value) } }
        await eventually(5) { grid()?.1.text.contains("test_login") == true }
        let (pid, g) = try XCTUnwrap(grid(), "the viewer has the shared pane")
        let truth = TerminalCapture.grid(lines: try XCTUnwrap(TmuxPane(socket: socket, target: sharedPane).capture()),
                                         columns: g.columns, rows: g.rows, cursor: nil)
        XCTAssertEqual(g.columns, 120)
        for y in 0..<g.rows { for x in 0..<g.columns { XCTAssertEqual(g[x, y], truth[x, y], "cell \(x),\(y)") } }
        XCTAssertEqual(g[0, 0].style.fg, 1, "FAIL in red")
        XCTAssertEqual(viewer.participants.first { $0.pid == pid }?.name, "lead", "the caller presents: no second participant")
        XCTAssertEqual(viewer.participants.first { $0.pid == pid }?.isPresenting, true)
        XCTAssertTrue(events.has("onParticipantStartedScreenShare"), events.all.joined(separator: " "))

        // d again: stopped.
        t.keys("d")
        waitScreen("Share term", "the button is back")
        await eventually(3) { viewer.sharedScreens.isEmpty }
        XCTAssertTrue(viewer.sharedScreens.isEmpty, "the viewer's panel went")
        XCTAssertTrue(events.has("onParticipantStoppedScreenShare"), events.all.joined(separator: " "))

        // A new shell: a tmux window named "shared"; closing it ends the share.
        t.keys("d")
        waitScreen("Share a terminal", "the picker again")
        t.keys("1")
        waitScreen("Stop share", "sharing the new shell")
        let windows = t.run(["list-windows", "-t", socket, "-F", "#{window_name}"]).output
        XCTAssertTrue(windows.contains("shared"), windows)
        await eventually(5) { !viewer.sharedScreens.isEmpty }
        XCTAssertFalse(viewer.sharedScreens.isEmpty, "the new shell is shared")
        XCTAssertEqual(t.run(["kill-window", "-t", "\(socket):shared"]).status, 0)
        waitScreen("sharing stopped", "the screen says the shared terminal closed")
        await eventually(3) { viewer.sharedScreens.isEmpty }
        XCTAssertTrue(viewer.sharedScreens.isEmpty)

        t.keys("l")
        t.keys("l")
        waitScreen("You left", "leave")
        await viewer.leave()
    }

    static func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
}

private extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
