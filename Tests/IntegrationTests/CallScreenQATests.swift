import CallRoomTestSupport
import Foundation
import XCTest

/// The QA walk-through of the call screen in a real terminal (tmux): join a demo room, mute,
/// raise a hand, switch every layout, open the participant list and chat, send a message, enter
/// and leave picture-in-picture, and leave — checking the screen at each step and the matching
/// lines of the JSON event log.
final class CallScreenQATests: XCTestCase {
    let session = "callroom-qa-\(getpid())"
    var tmp: TemporaryDirectory!

    lazy var t = Tmux(session: session)
    func tmux(_ args: [String]) -> (Int32, String) { t.run(args) }
    func screen() -> String { t.screen() }
    func keys(_ k: String...) { t.run(["send-keys", "-t", session] + k) }

    func expectScreen(_ text: String, _ step: String, timeout: TimeInterval = 8) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if screen().contains(text) { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTFail("\(step): '\(text)' not on screen:\n\(screen())")
    }

    func eventLog() -> [String] {
        String(decoding: FileManager.default.contents(atPath: tmp.file("events.jsonl")) ?? Data(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
    }

    func expectEvent(_ event: String, _ containing: String = "", _ step: String) {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if eventLog().contains(where: { $0.contains("\"event\":\"\(event)\"") && (containing.isEmpty || $0.contains(containing)) }) { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTFail("\(step): no \(event) \(containing) in the event log")
    }

    override func setUp() { tmp = TemporaryDirectory("callroom-qa") }
    override func tearDown() { _ = tmux(["kill-server"]); tmp.remove() }

    func testQAWalkThrough() throws {
        try XCTSkipIf(tmux(["-V"]).0 != 0, "tmux is not installed")
        let cmd = "\(BuiltProducts.path("callroom")) demo --bots 2 --event-log \(tmp.file("events.jsonl")); echo QA-EXIT=$?; sleep 30"
        XCTAssertEqual(tmux(["new-session", "-d", "-s", session, "-x", "120", "-y", "34", cmd]).0, 0)
        expectScreen("Grace Hopper", "join")
        expectEvent("onSessionJoined", "", "join")

        keys("m")
        expectScreen("YOU ARE MUTED", "mute")
        expectEvent("onAudioMuted", "", "mute")

        keys("h")
        expectScreen("hand #1", "raise hand")
        expectScreen("[h] Lower hand", "raise hand")
        expectEvent("onParticipantHandRaised", "\"uid\":\"you\"", "raise hand")

        keys("y")
        expectEvent("onCallLayoutChanged", "SPOTLIGHT", "spotlight")
        keys("y")
        expectEvent("onCallLayoutChanged", "SIDEBAR", "sidebar")
        keys("y")
        expectEvent("onCallLayoutChanged", "TILE", "tile")

        keys("p")
        expectScreen("Participants (3)", "participant list")
        expectEvent("onParticipantListVisible", "", "participant list")
        keys("p")
        expectEvent("onParticipantListHidden", "", "participant list closed")

        keys("t")
        expectScreen("Chat · Enter sends", "chat")
        keys("hello from QA", "Enter")
        expectScreen("You: hello from QA", "chat message")
        expectEvent("onChatMessage", "hello from QA", "chat message")
        keys("Escape")
        expectScreen("Event log", "chat closed")

        keys("w")
        expectScreen("PiP · CallRoom demo", "picture-in-picture")
        expectEvent("onPictureInPictureLayoutEnabled", "", "picture-in-picture")
        keys("w")
        expectScreen("Event log", "full view")
        expectEvent("onPictureInPictureLayoutDisabled", "", "full view")

        keys("l")
        expectScreen("QA-EXIT=0", "leave")
        expectEvent("onLeaveSessionButtonClicked", "", "leave")
        expectEvent("onSessionLeft", "", "leave")
        let order = eventLog().compactMap { l in l.range(of: "\"event\":\"").map { String(l[$0.upperBound...].prefix { $0 != "\"" }) } }
        XCTAssertLessThan(order.firstIndex(of: "onToggleAudioButtonClicked") ?? 99, order.firstIndex(of: "onAudioMuted") ?? -1,
                          "button callbacks come before their actions")
    }
}
