import CallRoomTestSupport
import Foundation
import XCTest

/// The ringing example (Examples/RingingExample), in the documented order, as two real
/// processes against a real callroomd: one calls, the other answers; both join one session.
final class RingingExampleTests: XCTestCase {
    struct Server {
        let process: ManagedProcess
        let settings: String
        let authKey: String
        let url: String
        let apiKey: String
    }

    func start(_ tmp: TemporaryDirectory, extra: [String] = []) throws -> Server {
        let server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data")] + extra)
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on") })
        let words = line.split(separator: " ").map(String.init)
        let host = words[3].replacingOccurrences(of: "http://", with: "")
        func key(_ name: String) -> String { server.output.first { $0.contains(name) }?.split(separator: " ").last.map(String.init) ?? "" }
        let settings = tmp.file("cometchat-settings.json")
        try #"{"appId":"\#(words.last ?? "")","region":"local","callsSDK":{"host":"\#(host)"}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        return Server(process: server, settings: settings, authKey: key("authKey"), url: words[3], apiKey: key("apiKey"))
    }

    func example(_ s: Server, _ args: [String], environment: [String: String]? = nil) throws -> ManagedProcess {
        try ManagedProcess(BuiltProducts.path("RingingExample"), [s.settings] + args, environment: environment)
    }

    func testACallAcceptedTalkedAndEndedBetweenTwoApps() throws {
        let tmp = TemporaryDirectory("callroom-ringing")
        defer { tmp.remove() }
        let s = try start(tmp)
        defer { s.process.signal(SIGTERM); _ = s.process.wait() }
        let bob = try example(s, ["bob", s.authKey, "answer", "accept"])
        XCTAssertNotNil(bob.waitForLine { $0 == "waiting for a call" }, bob.errorOutput)
        let ann = try example(s, ["ann", s.authKey, "call", "bob", "2"])
        XCTAssertEqual(ann.wait(timeout: 20), 0, ann.errorOutput + ann.output.joined(separator: "\n"))
        XCTAssertEqual(bob.wait(timeout: 10), 0, bob.errorOutput + bob.output.joined(separator: "\n"))
        let a = ann.output, b = bob.output
        let session = try XCTUnwrap(a.first { $0.hasPrefix("initiateCall succeeded: ") }?.split(separator: " ")[2].description)
        XCTAssertTrue(a.contains("onOutgoingCallAccepted status=ongoing"), "\(a)")
        XCTAssertTrue(a.contains("onSessionJoined \(session)"), "\(a)")
        XCTAssertTrue(a.contains("endCall succeeded"), "\(a)")
        XCTAssertTrue(b.contains("onIncomingCallReceived from ann audio"), "\(b)")
        XCTAssertTrue(b.contains("acceptCall succeeded: status=ongoing"), "\(b)")
        XCTAssertTrue(b.contains("onSessionJoined \(session)"), "the same session on both ends: \(b)")
        XCTAssertTrue(b.contains("onCallEndedMessageReceived status=ended"), "\(b)")
        XCTAssertEqual(b.filter { $0.hasPrefix("getActiveCall: ") }, ["getActiveCall: \(session)", "getActiveCall: none"],
                       "the active call while in it, none once ended")
        // One call in the logs, with both in it.
        let call = BlockingHTTP.request("GET", s.url + "/v3/calls/\(session)", headers: ["apikey": s.apiKey]).data
        XCTAssertEqual(call["status"] as? String, "ended")
        XCTAssertEqual(call["mode"] as? String, "call")
        XCTAssertEqual(Set((call["participants"] as? [[String: Any]] ?? []).compactMap { $0["uid"] as? String }), ["ann", "bob"])
    }

    func testBusyAndRejectReachTheCaller() throws {
        let tmp = TemporaryDirectory("callroom-ringing")
        defer { tmp.remove() }
        let s = try start(tmp)
        defer { s.process.signal(SIGTERM); _ = s.process.wait() }
        for answer in ["busy", "reject"] {
            let bob = try example(s, ["bob", s.authKey, "answer", answer])
            XCTAssertNotNil(bob.waitForLine { $0 == "waiting for a call" }, bob.errorOutput)
            let ann = try example(s, ["ann", s.authKey, "call", "bob"])
            XCTAssertEqual(ann.wait(timeout: 15), 0, ann.errorOutput)
            XCTAssertEqual(bob.wait(timeout: 10), 0, bob.errorOutput)
            let status = answer == "busy" ? "busy" : "rejected"
            XCTAssertTrue(ann.output.contains("onOutgoingCallRejected status=\(status)"), "\(ann.output)")
            XCTAssertTrue(bob.output.contains("rejectCall succeeded: status=\(status)"), "\(bob.output)")
        }
    }

    /// The app registers its PushKit token with `CometChat.registerTokenForPushNotification`; the
    /// call then rings that token through APNs (the stand-in), the reject stops it, and the app
    /// removes the token again.
    func testARegisteredVoIPTokenIsPushedAndRemoved() throws {
        let tmp = TemporaryDirectory("callroom-ringing")
        defer { tmp.remove() }
        let standIn = try PushStandIn(dir: tmp.file("push"))
        defer { standIn.stop() }
        let config = tmp.file("config.json")
        try #"{"apns": {"keyFile": "\#(standIn.apnsKeyFile)", "keyId": "\#(standIn.keyId)", "teamId": "\#(standIn.teamId)", "bundleId": "\#(standIn.bundle)", "endpoint": "\#(standIn.endpoint)", "caFile": "\#(standIn.caFile)"}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let s = try start(tmp, extra: ["--config", config])
        defer { s.process.signal(SIGTERM); _ = s.process.wait() }
        let token = String(repeating: "5e", count: 32)
        let bob = try example(s, ["bob", s.authKey, "answer", "reject"], environment: ["VOIP_TOKEN": token])
        XCTAssertNotNil(bob.waitForLine { $0 == "waiting for a call" }, bob.errorOutput + bob.output.joined(separator: "\n"))
        XCTAssertTrue(bob.output.contains("VoIP token registered"))
        let ann = try example(s, ["ann", s.authKey, "call", "bob"])
        XCTAssertEqual(ann.wait(timeout: 15), 0, ann.errorOutput)
        XCTAssertEqual(bob.wait(timeout: 10), 0, bob.errorOutput)
        XCTAssertTrue(bob.output.contains("VoIP token removed"), "\(bob.output)")
        let pushes = standIn.waitFor(2, service: "apns")
        XCTAssertEqual(pushes.map(\.status), [200, 200], "\(pushes.map { $0.reason ?? "" })")
        XCTAssertEqual(pushes.map(\.path), ["/3/device/\(token)", "/3/device/\(token)"])
        XCTAssertTrue(pushes[0].body.contains(#""callAction":"initiated""#))
        XCTAssertTrue(pushes[1].body.contains(#""reason":"declined""#))
        let left = BlockingHTTP.request("GET", s.url + "/v3/users/bob/push_tokens", headers: ["apikey": s.apiKey]).json["data"] as? [Any]
        XCTAssertEqual(left?.count, 0, "removed by the app")
    }
}
