import CallRoomTestSupport
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// The signalling heartbeat: a server that stops answering (a stalled process, a dead path: the
/// TCP connection stays "open") is noticed within seconds; a stall shorter than the grace period
/// resumes, a longer one ends the session instead of hanging forever "reconnecting".
final class HeartbeatTests: XCTestCase {
    /// The client's events with when each came.
    typealias Log = EventRecorder<(event: CallEvent, at: Date)>

    private func when(_ e: CallEvent, in log: Log, timeout: TimeInterval) -> Date? { log.wait(timeout) { $0.event == e }?.at }

    static let silence = 1.5

    private func start(grace: Double) throws -> ServerHarness {
        try ServerHarness(removesDataOnStop: true) { $0.gracePeriodSeconds = grace }
    }

    private func joinThrough(_ recorder: TCPRecorder, _ server: CallServer, log: Log) async throws -> CallsClient {
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:\(recorder.port)"))
        let client = CallsClient(serverURL: url, appID: server.keys.appId, eventQueue: DispatchQueue(label: "hb")) { log.add(($0, Date())) }
        // 1.5 s of silence instead of 5 (the 5 s itself: ClientConnectionTests, on made-up time).
        client.setServerSilence(seconds: Self.silence)
        _ = try await client.login(uid: "ada", authKey: server.keys.authKey)
        try await client.join(callToken: try await client.generateToken(sessionID: "hb"), sessionID: "hb",
                              settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("null").build())
        return client
    }

    func testAStalledServerIsNoticedAndAShortStallResumes() async throws {
        let harness = try start(grace: 20), server = harness.server
        defer { harness.stop() }
        let recorder = try TCPRecorder(forwardingTo: server.port)
        defer { recorder.stop() }
        let log = Log()
        let client = try await joinThrough(recorder, server, log: log)
        let stalled = Date()
        recorder.pause(true)
        let lost = try XCTUnwrap(when(.connectionLost, in: log, timeout: 10), "never noticed (it used to hang)")
        XCTAssertLessThan(lost.timeIntervalSince(stalled), Self.silence + 2 + 1, "noticed after the silence, at the next 2 s tick")
        recorder.pause(false)
        XCTAssertNotNil(when(.connectionRestored, in: log, timeout: 10), "the stall ended within the grace period: resumed")
        XCTAssertTrue(client.isSessionActive)
        await client.leave()
    }

    func testAStallLongerThanTheGracePeriodEndsTheSession() async throws {
        let harness = try start(grace: 2), server = harness.server
        defer { harness.stop() }
        let recorder = try TCPRecorder(forwardingTo: server.port)
        defer { recorder.stop() }
        let log = Log()
        let client = try await joinThrough(recorder, server, log: log)
        recorder.pause(true)
        XCTAssertNotNil(when(.connectionLost, in: log, timeout: 10))
        XCTAssertNotNil(when(.connectionClosed, in: log, timeout: 10), "gave up after the grace period instead of reconnecting forever")
        XCTAssertFalse(client.isSessionActive)
    }
}
