import CallRoomTestSupport
import Foundation
import XCTest

/// The call screen in a real terminal (tmux), as a QA engineer uses it: every key, every
/// control-bar button clicked with real mouse sequences (exactly one event per click), the
/// event log as an instrument (search, payload, export), leaving with its summary.
final class CallScreenQATests: XCTestCase {
    /// A tmux server of its own per test: the previous test's, killed in its tearDown, may still
    /// be exiting on the same socket (new-session then failed now and then).
    let session = "callroom-qa-\(getpid())-\(UUID().uuidString.prefix(6))"
    var tmp: TemporaryDirectory!

    lazy var t = Tmux(session: session)
    func tmux(_ args: [String]) -> (Int32, String) { t.run(args) }
    func screen() -> String { t.screen() }
    func keys(_ k: String...) { t.run(["send-keys", "-t", session] + k) }

    func expectScreen(_ text: String, _ step: String, timeout: TimeInterval = 8, file: StaticString = #filePath, line: UInt = #line) {
        if eventually(timeout, poll: 0.05, { screen().contains(text) }) { return }
        XCTFail("\(step): '\(text)' not on screen:\n\(screen())", file: file, line: line)
    }

    func eventLog() -> [String] {
        String(decoding: FileManager.default.contents(atPath: tmp.file("events.jsonl")) ?? Data(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
    }

    func count(_ event: String) -> Int { eventLog().filter { $0.contains("\"event\":\"\(event)\"") }.count }

    func expectEvent(_ event: String, _ containing: String = "", _ step: String, file: StaticString = #filePath, line: UInt = #line) {
        if eventually(5, poll: 0.05, { eventLog().contains(where: { $0.contains("\"event\":\"\(event)\"") && (containing.isEmpty || $0.contains(containing)) }) }) {
            return
        }
        XCTFail("\(step): no \(event) \(containing) in the event log", file: file, line: line)
    }

    /// Waits until `event` has fired `n` times, then makes sure it stays at `n`.
    func expectExactly(_ n: Int, _ event: String, _ step: String, file: StaticString = #filePath, line: UInt = #line) {
        eventually(5, poll: 0.05) { count(event) >= n }
        _ = holds(for: 0.4, poll: 0.05) { count(event) == n }
        XCTAssertEqual(count(event), n, "\(step): \(event) fired \(count(event)) times, expected \(n)", file: file, line: line)
    }

    override func setUp() { tmp = TemporaryDirectory("callroom-qa") }
    override func tearDown() { _ = tmux(["kill-server"]); tmp.remove() }

    func startDemo(width: Int = 120, height: Int = 34, env: String = "LANG=C.UTF-8 LC_ALL=C.UTF-8", extra: String = "") throws {
        try XCTSkipIf(tmux(["-V"]).0 != 0, "tmux is not installed")
        let cmd = "cd \(tmp.path) && \(env) \(BuiltProducts.path("callroom")) demo --bots 2 --event-log \(tmp.file("events.jsonl")) \(extra); echo QA-EXIT=$?; sleep 30"
        XCTAssertEqual(tmux(["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)", cmd]).0, 0)
        expectScreen("Grace Hopper", "join")
        expectEvent("onSessionJoined", "", "join")
    }

    /// Leaves with l, l; the summary shows; a key exits 0 and the summary is printed on the shell.
    func leave() {
        keys("l")
        expectScreen("Leave?", "leave asks first")
        keys("l")
        expectEvent("onLeaveSessionButtonClicked", "", "leave")
        expectEvent("onSessionLeft", "", "leave")
        expectScreen("Press any key to exit.", "summary screen")
        XCTAssertTrue(screen().contains("SessionStatus.onSessionLeft"), "the summary screen shows the last events, onSessionLeft among them")
        keys("Enter")
        expectScreen("QA-EXIT=0", "exit")
        let s = screen()
        XCTAssertTrue(s.contains("Call summary: CallRoom demo"), "the summary is printed after the terminal is restored:\n\(s)")
        XCTAssertTrue(s.contains("participants    3"))
        XCTAssertFalse(s.contains("[?] Help") || s.contains("? Help"), "the call screen is gone")
    }

    func testQAWalkThroughWithKeys() throws {
        try startDemo()
        keys("m")
        expectScreen("YOU ARE MUTED", "mute")
        expectEvent("onAudioMuted", "", "mute")

        keys("h")
        expectScreen("▲ hand 1", "raise hand")
        expectEvent("onParticipantHandRaised", "\"uid\":\"you\"", "raise hand")

        keys("v")
        expectScreen("▨ cam off", "your cam off shows at once")

        keys("y")
        expectEvent("onCallLayoutChanged", "SPOTLIGHT", "spotlight")
        keys("y")
        expectEvent("onCallLayoutChanged", "SIDEBAR", "sidebar")
        keys("y")
        expectEvent("onCallLayoutChanged", "TILE", "tile")

        // In the demo you are the moderator: your own roster entry says so, and the list
        // shows it (moderation can be demoed).
        let roster = eventLog().last { $0.contains("\"event\":\"onParticipantListChanged\"") } ?? ""
        let object = (try? JSONSerialization.jsonObject(with: Data(roster.utf8))) as? [String: Any]
        let you = (object?["participants"] as? [[String: Any]])?.first { $0["uid"] as? String == "you" }
        XCTAssertEqual(you?["role"] as? String, "moderator", "you are the demo room's moderator: \(roster)")
        keys("p")
        expectScreen("Participants (3)", "participant list")
        expectEvent("onParticipantListVisible", "", "participant list")
        keys("Down", "m")
        expectScreen("Muting Ada Lovelace", "list keys act on the selection and say so")
        expectEvent("onParticipantAudioMuted", "\"uid\":\"bot-1\"", "the moderator's mute reaches Ada")
        XCTAssertFalse(eventLog().contains { $0.contains("ERR_NOT_MODERATOR") }, "not refused")
        keys("p")
        expectEvent("onParticipantListHidden", "", "participant list closed")

        keys("t")
        expectScreen("Chat · Enter sends", "chat")
        keys("-l", "café ü 王 — hello")
        keys("Enter")
        expectEvent("onChatMessage", "café ü 王 — hello", "non-ASCII chat is sent whole")
        expectScreen("You: café ü 王 — hello", "chat message")
        keys("Escape")
        expectScreen("Event log", "chat closed")

        keys("r")
        expectEvent("onRecordingStarted", "", "the moderator's r starts the server's recording")
        expectScreen("REC", "the header shows the recording")
        keys("r")
        expectEvent("onRecordingStopped", "", "and r again stops it")
        expectScreen("Recording stopped", "a toast says so")

        // Esc closes at once (ncurses' default would wait a second for the rest of a sequence).
        keys("?")
        expectScreen("Keys · Esc or ? closes", "help")
        let t0 = Date()
        keys("Escape")
        eventually(3) { !screen().contains("Keys · Esc or ? closes") }
        XCTAssertLessThan(Date().timeIntervalSince(t0), 0.5, "Esc closes within the escape delay (25 ms) plus tmux round trips")

        keys("w")
        expectScreen("PiP · CallRoom demo", "picture-in-picture")
        expectEvent("onPictureInPictureLayoutEnabled", "", "picture-in-picture")
        keys("w")
        expectScreen("Event log", "full view")

        keys("l")
        expectScreen("Leave?", "leave asks first")
        keys("m")
        expectScreen("Still in the call", "another key cancels")
        XCTAssertEqual(count("onLeaveSessionButtonClicked"), 0)
        leave()
        let order = eventLog().compactMap { l in l.range(of: "\"event\":\"").map { String(l[$0.upperBound...].prefix { $0 != "\"" }) } }
        XCTAssertLessThan(order.firstIndex(of: "onToggleAudioButtonClicked") ?? 99, order.firstIndex(of: "onAudioMuted") ?? -1,
                          "button callbacks come before their actions")
    }

    /// Pasted text is text (bracketed paste), never key commands; Home/End in encodings terminfo
    /// does not name are keys, not Esc plus letters; an answered prompt goes at once; Enter
    /// confirms it.
    func testPasteHomeEndAndPrompts() throws {
        try startDemo(width: 120, height: 34)
        let client = try TmuxClient(t, width: 120, height: 34)
        let esc: UInt8 = 0x1B
        // "lq" pasted on the call screen: no leave prompt, a toast says where pasting works.
        client.send([esc] + Array("[200~lq".utf8) + [esc] + Array("[201~".utf8))
        expectScreen("Pasted text is not read as keys", "a paste is not keys")
        XCTAssertFalse(screen().contains("Leave the call?"), "the pasted l did not ask to leave:\n\(screen())")
        // Two lines pasted into chat become one message.
        keys("t")
        expectScreen("> _", "chat open")
        client.send([esc] + Array("[200~first line\nsecond line".utf8) + [esc] + Array("[201~".utf8))
        expectScreen("first line | second line", "the draft keeps both lines")
        keys("Enter")
        expectEvent("onChatMessage", #"first line\nsecond line"#, "one message with both lines")
        keys("Escape")
        // Home and End as rxvt and VT220 send them: no Esc, no '[', no key commands.
        for seq in ["[7~", "[8~", "[1~", "[4~", "OH", "OF"] { client.send([esc] + Array(seq.utf8)) }
        XCTAssertTrue(holds(for: 0.3, poll: 0.05) { count("onCallLayoutChanged") == 0 }, "no stray keys from the sequences")
        // A prompt answered "stay" goes at once and never comes back; Enter confirms the next.
        keys("l")
        expectScreen("Leave the call?", "leave asks")
        keys("x")
        expectScreen("Still in the call", "stay")
        XCTAssertFalse(screen().contains("Leave the call?"), "the answered prompt is gone:\n\(screen())")
        XCTAssertTrue(holds(for: 2, poll: 0.1) { !screen().contains("Leave the call?") }, "…and does not come back")
        keys("l")
        expectScreen("Leave the call?", "leave asks again")
        keys("Enter")
        expectEvent("onSessionLeft", "", "Enter confirms")
    }

    /// Every control-bar button clicked with real xterm SGR mouse reports through a tmux client:
    /// exactly one action per click.
    func testEveryButtonClickedWithTheMouseActsOnce() throws {
        // Wide enough for every label of the demo's bar in full.
        try startDemo(width: 170, height: 34, extra: "--show screen-share")
        let client = try TmuxClient(t, width: 170, height: 34)
        func clickLabel(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
            let rows = screen().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard let bar = rows.last(where: { $0.contains(label) }), let r = bar.range(of: label), let y = rows.lastIndex(of: bar) else {
                return XCTFail("'\(label)' not on the control bar:\n\(screen())", file: file, line: line)
            }
            client.click(x: bar.distance(from: bar.startIndex, to: r.lowerBound) + 1, y: y)
        }
        let buttons: [(String, String, String?)] = [
            ("[m] Mute", "onToggleAudioButtonClicked", "onAudioMuted"),
            ("[v] Stop video", "onToggleVideoButtonClicked", "onVideoPaused"),
            ("[c] Camera", "onSwitchCameraButtonClicked", "onCameraFacingChanged"),
            ("[h] Raise hand", "onRaiseHandButtonClicked", nil),
            ("[y] Layout", "onChangeLayoutButtonClicked", "onCallLayoutChanged"),
            ("[p] People", "onParticipantListButtonClicked", "onParticipantListVisible"),
            ("[t] Chat", "onChatButtonClicked", nil),
            ("[s] Invite", "onShareInviteButtonClicked", nil),
            ("[r] Record", "onRecordingToggleButtonClicked", "onRecordingStarted"),
            // No documented callback for captions: the click starts the server's transcription.
            ("[a] Captions", "onTranscriptionStarted", nil),
        ]
        for (label, callback, effect) in buttons {
            clickLabel(label)
            expectExactly(1, callback, "click on \(label)")
            if let effect { expectExactly(1, effect, "click on \(label)") }
            if label == "[t] Chat" { keys("Escape") }
            if label == "[s] Invite" {
                // Inside tmux the link goes to tmux's buffer (verified by tmux), and the toast says so.
                expectScreen("Invite link copied (tmux buffer", "the copy reports where it went")
                let buffer = tmux(["show-buffer"]).1
                XCTAssertTrue(buffer.hasPrefix("http://127.0.0.1:") && buffer.contains("/call/"), "the link is in tmux's buffer: \(buffer)")
            }
        }
        // Terminal share has no documented callback: the click opens the picker, Esc closes it.
        clickLabel("[d] Share")
        expectScreen("Share a terminal", "the share picker by mouse")
        keys("Escape")
        expectScreen("Nothing shared", "Esc cancels the share")
        XCTAssertTrue(eventLog().contains { $0.contains("onCallLayoutChanged") && $0.contains("SPOTLIGHT") }, "one layout step, not two")
        expectScreen("Participants (3)", "the list is open")
        expectScreen("REC", "the click started the recording: the header says so")
        clickLabel("[?] Help")
        expectScreen("Keys · Esc or ? closes", "help by mouse")
        clickLabel("[?] Help")
        XCTAssertTrue(eventually(3) { !screen().contains("Keys · Esc or ? closes") }, "a second click closes help")
        // The wheel scrolls the list's selection (the list is open), not a button.
        client.wheel(up: false, x: 10, y: 5)
        clickLabel("[l] Leave")
        expectScreen("Leave?", "leave asks first")
        XCTAssertEqual(count("onLeaveSessionButtonClicked"), 0)
        clickLabel("Leave?")
        expectExactly(1, "onLeaveSessionButtonClicked", "second click on Leave")
        expectEvent("onSessionLeft", "", "left")
    }

    /// The event log as a QA instrument: search, the payload of an entry, export.
    func testEventLogSearchPayloadAndExport() throws {
        try startDemo()
        keys("m")
        expectEvent("onAudioMuted", "", "mute")
        keys("/")
        keys("-l", "onAudioMuted")
        keys("Enter")
        expectScreen("Event log · /onAudioMuted · 1/", "search")
        keys("Enter")
        expectScreen("MediaEvents.onAudioMuted · Esc closes", "payload")
        expectScreen("\"event\" : \"onAudioMuted\"", "the JSON payload")
        keys("Escape")
        keys("/")
        keys("Escape")
        keys("x")
        expectScreen("Exported", "export")
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix("callroom-events-") && $0.hasSuffix(".jsonl") }
        XCTAssertEqual(files.count, 1, "one export in the working directory")
        let lines = try String(contentsOfFile: tmp.file(files[0]), encoding: .utf8).split(separator: "\n")
        XCTAssertGreaterThan(lines.count, 3)
        for l in lines { XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(l.utf8)), "every line is JSON: \(l)") }
        XCTAssertTrue(lines.contains { $0.contains("\"event\":\"onSessionJoined\"") })
        XCTAssertTrue(lines.contains { $0.contains("\"event\":\"onAudioMuted\"") })
        keys("n")
        expectScreen("Event counts", "counts per event")
        keys("n")
        keys("i")
        expectScreen("Statistics · i or Esc closes", "statistics")
        expectScreen("round trip to server", "your round trip")
        keys("Escape")
        leave()
    }

    /// LANG=C: ASCII glyphs only (no '?'), the screen restored on vt100 and linux (no alternate
    /// screen), and a terminal that cannot address the cursor refused with exit 2.
    func testLocalesAndTerminalTypes() throws {
        try startDemo(width: 100, height: 30, env: "LANG=C LC_ALL=C NO_COLOR=1")
        let s = screen()
        XCTAssertTrue(s.contains("+ AL "), "ASCII boxes:\n\(s)")
        XCTAssertFalse(s.contains("?") && !s.contains("? Help") && !s.contains("? lists"), "no '?' for glyphs the locale cannot show:\n\(s)")
        XCTAssertFalse(s.unicodeScalars.contains { !$0.isASCII })
        keys("l"); keys("l")
        expectScreen("Press any key", "summary")
        keys("Enter")
        expectScreen("QA-EXIT=0", "exit")
        _ = tmux(["kill-server"])

        for term in ["vt100", "linux"] {
            let t2 = Tmux(session: session + "-" + term)
            let cmd = "clear; echo BEFORE; LANG=C.UTF-8 TERM=\(term) \(BuiltProducts.path("callroom")) demo --bots 1; echo EXIT=$?; sleep 30"
            XCTAssertTrue(t2.start(cmd, width: 100, height: 30))
            XCTAssertTrue(t2.waitFor("Ada Lovelace"), "\(term) draws:\n\(t2.screen())")
            t2.keys("l"); t2.keys("l")
            XCTAssertTrue(t2.waitFor("Press any key"))
            t2.keys("Enter")
            XCTAssertTrue(t2.waitFor("EXIT=0"), "\(term):\n\(t2.screen())")
            let after = t2.screen()
            XCTAssertFalse(after.contains("Help") || after.contains("┌ AL") || after.contains("Event log"),
                           "TERM=\(term): nothing of the call screen is left:\n\(after)")
            XCTAssertTrue(after.contains("Call summary"), "the summary is on the shell:\n\(after)")
        }

        let dumb = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--bots", "0"], environment: ["TERM": "dumb"])
        XCTAssertEqual(dumb.wait(timeout: 20), 2)
        XCTAssertTrue(dumb.errorOutput.contains("cannot address the cursor"), dumb.errorOutput)
        XCTAssertTrue(dumb.errorOutput.contains("--headless"))
        // No terminal at all (`ssh HOST callroom demo` without -t: pipes): said, not drawn into the pipe.
        let piped = try ManagedProcess(BuiltProducts.path("callroom"), ["demo", "--bots", "0"], environment: ["TERM": "xterm-256color"])
        XCTAssertEqual(piped.wait(timeout: 20), 2)
        XCTAssertTrue(piped.errorOutput.contains("needs a terminal") && piped.errorOutput.contains("ssh -t"), piped.errorOutput)
        XCTAssertTrue(piped.output.isEmpty, "nothing drawn: \(piped.output.prefix(2))")
    }

    /// Small terminals: 40×12 shows everyone or counts them; below the minimum it says so.
    func testSmallTerminals() throws {
        try startDemo(width: 40, height: 12, extra: "--name '王小明 🎧'")
        let s = screen()
        XCTAssertTrue(s.contains("王小明 🎧 (you)"), s)
        XCTAssertTrue(s.contains("l✕") || s.contains("l Leave"), "Leave is on the bar:\n\(s)")
        XCTAssertTrue(s.split(separator: "\n").last?.contains("?") == true, "and Help")
        _ = tmux(["resize-window", "-t", session, "-x", "20", "-y", "8"])
        expectScreen("window too small", "too small")
        _ = tmux(["resize-window", "-t", session, "-x", "80", "-y", "24"])
        expectScreen("Event log", "back to normal")
        leave()
    }
}
