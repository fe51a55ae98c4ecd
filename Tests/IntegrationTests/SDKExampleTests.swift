import CallRoomTestSupport
import Foundation
import XCTest

/// The example app (Examples/CallsSDKExample), written in the documented style, is built by the
/// test suite and runs a whole session against a real callroomd.
final class SDKExampleTests: XCTestCase {
    func testExampleAppRunsAWholeSession() throws {
        let tmp = TemporaryDirectory("callroom-example")
        defer { tmp.remove() }
        let server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data")])
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on") })
        let words = line.split(separator: " ").map(String.init)
        let host = words[3].replacingOccurrences(of: "http://", with: "")
        let authKey = server.output.first { $0.contains("authKey") }?.split(separator: " ").last.map(String.init) ?? ""
        let settings = tmp.file("cometchat-settings.json")
        try #"{"appId":"\#(words.last ?? "")","region":"local","callsSDK":{"host":"\#(host)"}}"#.write(toFile: settings, atomically: true, encoding: .utf8)

        let app = try ManagedProcess(BuiltProducts.path("CallsSDKExample"), [settings, "zoe", authKey, "example-room"])
        XCTAssertEqual(app.wait(timeout: 15), 0, app.errorOutput + app.output.joined(separator: "\n"))
        // Listener callbacks in the documented order; joinSession's onSuccess comes after
        // onSessionJoined (its position relative to later action results is not defined).
        let out = app.output
        XCTAssertEqual(out.filter { !$0.hasPrefix("joinSession") }, [
            "logged in as zoe", "onSessionJoined", "onParticipantListChanged zoe",
            "onAudioMuted", "onCallLayoutChanged SPOTLIGHT", "onParticipantHandRaised zoe", "onSessionLeft",
        ], "the documented flow, in order")
        let success = try XCTUnwrap(out.firstIndex(of: "joinSession succeeded: example-room"))
        XCTAssertGreaterThan(success, try XCTUnwrap(out.firstIndex(of: "onSessionJoined")))
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }
}
