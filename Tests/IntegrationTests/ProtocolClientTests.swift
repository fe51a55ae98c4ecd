import CallRoomTestSupport
import Foundation
import XCTest

/// A third party's client: `scripts/protocol_client.py`, written from docs/protocol.md alone (its
/// own WebSocket, libopus through ctypes, SRTP with `cryptography`; no CallRoom code), in a call
/// with the real `callroom` client on a real `callroomd`. If the document leaves out something a
/// client needs — a key's layout, the bind's MAC, the RED header, the MKI's place — this fails.
final class ProtocolClientTests: XCTestCase {
    func testAClientWrittenFromTheProtocolDocumentHearsAndIsHeard() throws {
        let tmp = TemporaryDirectory("callroom-protocol-client")
        defer { tmp.remove() }
        let server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data")])
        defer { server.signal(SIGTERM); _ = server.wait() }
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on http://") }, server.errorOutput)
        let url = line.split(separator: " ").map(String.init)[3]
        let authKey = try XCTUnwrap(server.output.first { $0.contains("authKey") }?.split(separator: " ").last.map(String.init))

        let wav = tmp.file("bob-heard.wav")
        let bob = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "room1", "--server", url, "--uid", "bob", "--name", "Bob",
                                                                       "--auth-key", authKey, "--input", "tone:440", "--output", "file:\(wav)",
                                                                       "--headless"])
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, "bob joined: \(bob.errorOutput)")

        let carol = try ManagedProcess("/usr/bin/env", ["python3", BuiltProducts.packageRoot + "/scripts/protocol_client.py",
                                                        "--server", url, "--auth-key", authKey, "--uid", "carol", "--session", "room1",
                                                        "--tone", "880", "--seconds", "4", "--listen-for", "440,880"], nullInput: true)
        XCTAssertEqual(carol.wait(timeout: 30), 0, "the client ran: \(carol.errorOutput)")
        let report = try XCTUnwrap(carol.output.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
                                   "\(carol.output) \(carol.errorOutput)")
        XCTAssertNil(report["error"], "\(report)")
        XCTAssertEqual(report["joined"] as? String, "room1")
        XCTAssertEqual(report["left"] as? Bool, true, "its leave answered with left: \(report)")
        // What it received from bob: every packet verified under bob's key, decoded, 440 Hz.
        let received = report["receivedPackets"] as? Int ?? 0, verified = report["verifiedPackets"] as? Int ?? -1
        XCTAssertGreaterThan(received, 150, "3 s or more of bob's 20 ms packets: \(report)")
        XCTAssertEqual(verified, received, "every packet from the relay verified: \(report)")
        let heard = try XCTUnwrap((report["heard"] as? [String: Any])?["bob"] as? [String: Any], "\(report)")
        XCTAssertGreaterThan(heard["440"] as? Double ?? -200, -3, "bob's tone is what it decoded: \(heard)")
        XCTAssertLessThan(heard["880"] as? Double ?? 0, -30, "\(heard)")

        // What bob heard from it: the 880 Hz tone, for most of its 4 s.
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"onParticipantLeft""#) && $0.contains("carol") }, bob.output.joined())
        bob.closeInput()
        XCTAssertEqual(bob.wait(), 0)
        let (_, samples) = try XCTUnwrap(SignalAnalysis.readWAV(wav))
        let carrying = SignalAnalysis.windowsCarrying(samples, tone: 880, over: [440, 660, 1000]).carrying
        XCTAssertGreaterThan(carrying, 25, "bob heard the client's 880 Hz for 2.5 s or more (of 4): \(carrying) windows of 100 ms")
    }

    /// The same client rings (`hello`, `initiateCall`, its `call` events; "Ringing calls") a
    /// `callroom listen --auto-accept` run as a script runs it — stdin at its end — joins the
    /// call's room once accepted, and hangs up with `endCall`: both hear each other and the call
    /// ends `ended` on both sides.
    func testTheClientRingsTheRealClientWhichAnswers() throws {
        let tmp = TemporaryDirectory("callroom-protocol-ring")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let wav = tmp.file("dave-heard.wav")
        let dave = try ManagedProcess(BuiltProducts.path("callroom"), ["listen", "--server", server.url, "--uid", "dave", "--name", "Dave",
                                                                        "--auth-key", server.authKey, "--input", "tone:440", "--output", "file:\(wav)",
                                                                        "--headless", "--auto-accept"], nullInput: true)
        XCTAssertNotNil(dave.waitForLine { $0.contains(#""event":"listening""#) }, dave.errorOutput)
        let erin = try ManagedProcess("/usr/bin/env", ["python3", BuiltProducts.packageRoot + "/scripts/protocol_client.py",
                                                       "--server", server.url, "--auth-key", server.authKey, "--uid", "erin", "--ring", "dave",
                                                       "--tone", "880", "--seconds", "4", "--listen-for", "440,880"], nullInput: true)
        XCTAssertEqual(erin.wait(timeout: 40), 0, "the client ran: \(erin.errorOutput)")
        let report = try XCTUnwrap(erin.output.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
                                   "\(erin.output) \(erin.errorOutput)")
        let call = try XCTUnwrap(report["call"] as? [String: Any], "\(report)")
        XCTAssertEqual(call["events"] as? [String], ["initiated", "accepted", "ended"], "\(report)")
        XCTAssertEqual(call["status"] as? String, "ended")
        XCTAssertEqual(report["joined"] as? String, call["sessionId"] as? String, "it joined the call's room")
        let heard = try XCTUnwrap((report["heard"] as? [String: Any])?["dave"] as? [String: Any], "dave was heard: \(report)")
        XCTAssertGreaterThan(heard["seconds"] as? Double ?? 0, 3, "\(heard)")
        XCTAssertGreaterThan(heard["440"] as? Double ?? -200, -3, "\(heard)")
        XCTAssertEqual(dave.wait(timeout: 10), 0, "the answering side exits 0 once the call ends: \(dave.errorOutput)")
        XCTAssertTrue(dave.output.contains { $0.contains(#""event":"onCallEndedMessageReceived""#) }, dave.output.joined(separator: "\n"))
        let (_, samples) = try XCTUnwrap(SignalAnalysis.readWAV(wav))
        let carrying = SignalAnalysis.windowsCarrying(samples, tone: 880, over: [440, 660, 1000]).carrying
        XCTAssertGreaterThan(carrying, 25, "dave heard the client's 880 Hz for 2.5 s or more (of 4): \(carrying) windows of 100 ms")
    }
}
