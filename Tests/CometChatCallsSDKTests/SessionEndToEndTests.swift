import CallRoomTestSupport
import CallsCore
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Records every callback of all five listener protocols (as the documented API delivers them),
/// on the suite's one `EventRecorder`.
final class Recorder: SessionStatusListener, MediaEventsListener, ParticipantEventListener, Sendable {
    private let log = EventRecorder<(name: String, participant: Participant?)>()
    private let roster = Locked<[Participant]>([])

    private func note(_ n: String, _ p: Participant? = nil) { log.add((n, p)) }
    var events: [String] { log.all.map(\.name) }
    var lastRoster: [Participant] { roster.withLock { $0 } }
    func participant(for event: String) -> Participant? { log.all.last { $0.name == event && $0.participant != nil }?.participant }

    func onSessionJoined() { note("onSessionJoined") }
    func onSessionLeft() { note("onSessionLeft") }
    func onConnectionClosed() { note("onConnectionClosed") }
    func onAudioMuted() { note("onAudioMuted") }
    func onAudioUnMuted() { note("onAudioUnMuted") }
    func onParticipantJoined(participant: Participant) { note("onParticipantJoined", participant) }
    func onParticipantLeft(participant: Participant) { note("onParticipantLeft", participant) }
    func onParticipantListChanged(participants: [Participant]) {
        roster.withLock { $0 = participants }
        note("onParticipantListChanged")
    }
    func onParticipantAudioMuted(participant: Participant) { note("onParticipantAudioMuted", participant) }
    func onParticipantAudioUnmuted(participant: Participant) { note("onParticipantAudioUnmuted", participant) }

    /// (Async: the wait sleeps without holding a cooperative thread the SDK may need.)
    func waitFor(_ name: String, count: Int = 1, timeout: TimeInterval = 5) async -> Bool {
        await log.wait(count: count, timeout) { $0.name == name }
    }
}

final class SessionEndToEndTests: XCTestCase {
    var t: TestServer!
    var server: CallServer { t.server }
    let queue = DispatchQueue(label: "sdk-callbacks")

    override func setUpWithError() throws {
        CometChatCalls.resetForTesting()
        t = try TestServer.forSDK()
        try t.initializeSDK(queue: queue)
    }

    override func tearDown() {
        CometChatCalls.resetForTesting()
        t.stop()
    }

    func login(_ uid: String) async -> CallsUser? {
        let done = expectation(description: "login")
        nonisolated(unsafe) var user: CallsUser?
        CometChatCalls.login(UID: uid, authKey: server.keys.authKey, onSuccess: { u in user = u; done.fulfill() },
                             onError: { e in XCTFail("login failed: \(e)"); done.fulfill() })
        await fulfillment(of: [done], timeout: 5)
        return user
    }

    func bot(_ uid: String, output: String = "none", input: String = "tone:330") async throws -> CallsClient {
        try await t.joinedClient(uid, session: "e2e", settings: SessionSettingsBuilder().setAudioInput(input).setAudioOutput(output).build(),
                                 name: uid.uppercased())
    }

    func testJoinBeforeLoginFailsOnceWithAuthTokenError() {
        let failed = expectation(description: "onError once")
        failed.expectedFulfillmentCount = 1
        failed.assertForOverFulfill = true
        CometChatCalls.joinSession(sessionID: "x", callSetting: SessionSettingsBuilder().build(), container: nil,
                                   onSuccess: { _ in XCTFail("must not join") },
                                   onError: { e in XCTAssertEqual(e?.errorCode, "AUTH_TOKEN_ERROR"); failed.fulfill() })
        wait(for: [failed], timeout: 3)
    }

    func testLoginFailuresAreReported() {
        let failed = expectation(description: "bad key")
        CometChatCalls.login(UID: "u", authKey: "wrong", onSuccess: { _ in XCTFail() },
                             onError: { e in XCTAssertEqual(e.errorCode, "AUTH_ERR_AUTH_KEY_INVALID"); failed.fulfill() })
        wait(for: [failed], timeout: 3)
        XCTAssertNil(CometChatCalls.getLoggedInUser())
    }

    func testWholeSessionThroughTheDocumentedAPI() async throws {
        let loggedIn = await login("alice")
        let user = try XCTUnwrap(loggedIn)
        XCTAssertEqual(user.uid, "alice")
        XCTAssertEqual(CometChatCalls.getLoggedInUser()?.uid, "alice")

        let rec = Recorder()
        CallSession.shared.addSessionStatusListener(rec)
        CallSession.shared.addMediaEventsListener(rec)
        CallSession.shared.addParticipantEventListener(rec)
        // A listener nobody else holds is released and hears nothing (listeners are weak).
        weak var orphan: Recorder?
        do { let r = Recorder(); orphan = r; CallSession.shared.addSessionStatusListener(r) }
        XCTAssertNil(orphan)
        let stream = CallSession.shared.events()
        let streamed = Task { () -> [String] in
            var seen: [String] = []
            for await e in stream { seen.append(e.callback); if e == .sessionLeft { break } }
            return seen
        }

        let token = try await CometChatCalls.generateToken(sessionID: "e2e")
        let joined = expectation(description: "joined")
        CometChatCalls.joinSession(callToken: token, callSetting: CometChatCalls.sessionSettingsBuilder
            .setSessionType(.voice).setAudioInput("tone:440").setAudioOutput("null").build(), container: nil,
            onSuccess: { id in XCTAssertEqual(id, "e2e"); joined.fulfill() },
            onError: { e in XCTFail("join failed: \(String(describing: e))"); joined.fulfill() })
        await fulfillment(of: [joined], timeout: 5)
        XCTAssertTrue(CallSession.shared.isCallSessionActive())
        let heard1 = await rec.waitFor("onSessionJoined")
        XCTAssertTrue(heard1, "onSessionJoined")
        XCTAssertEqual(rec.lastRoster.map(\.uid), ["alice"])
        // No public URL configured: the invite link is the address this client reached.
        XCTAssertEqual(CallSession.shared.inviteLink, server.url + "/call/e2e")

        // A second participant arrives, with real payloads.
        let listenerBot = try await bot("bob", output: "null")
        let heard2 = await rec.waitFor("onParticipantJoined")
        XCTAssertTrue(heard2, "onParticipantJoined")
        let bob = try XCTUnwrap(rec.participant(for: "onParticipantJoined"))
        XCTAssertEqual(bob.uid, "bob")
        XCTAssertEqual(bob.name, "BOB")
        XCTAssertEqual(bob.isJoined, true)
        XCTAssertEqual(bob.mid, "e2e")
        XCTAssertNotNil(bob.pid)
        let heard3 = await rec.waitFor("onParticipantListChanged", count: 2)
        XCTAssertTrue(heard3, "onParticipantListChanged")
        XCTAssertEqual(rec.lastRoster.compactMap(\.uid), ["alice", "bob"])

        // Our tone reaches bob: his engine measures our level well above silence.
        let alicePID = try XCTUnwrap(CallSession.shared.localParticipantID)
        await eventually(3) { (listenerBot.audioLevels()[alicePID] ?? -127) >= -30 }
        let heard = listenerBot.audioLevels()[alicePID] ?? -127
        XCTAssertGreaterThan(heard, -30, "bob hears alice's tone")

        CallSession.shared.muteAudio()
        let heard4 = await rec.waitFor("onAudioMuted")
        XCTAssertTrue(heard4, "onAudioMuted")
        XCTAssertTrue(CallSession.shared.isAudioMuted)
        CallSession.shared.unmuteAudio()
        let heard5 = await rec.waitFor("onAudioUnMuted")
        XCTAssertTrue(heard5, "onAudioUnMuted")

        listenerBot.setAudioMuted(true)
        let heard6 = await rec.waitFor("onParticipantAudioMuted")
        XCTAssertTrue(heard6, "onParticipantAudioMuted")
        XCTAssertEqual(rec.participant(for: "onParticipantAudioMuted")?.isAudioMuted, true)
        listenerBot.setAudioMuted(false)
        let heard7 = await rec.waitFor("onParticipantAudioUnmuted")
        XCTAssertTrue(heard7, "onParticipantAudioUnmuted")

        await listenerBot.leave()
        let heard8 = await rec.waitFor("onParticipantLeft")
        XCTAssertTrue(heard8, "onParticipantLeft")
        XCTAssertEqual(rec.participant(for: "onParticipantLeft")?.isJoined, false)

        CallSession.shared.leaveSession()
        let heard9 = await rec.waitFor("onSessionLeft")
        XCTAssertTrue(heard9, "onSessionLeft")
        XCTAssertFalse(CallSession.shared.isCallSessionActive())
        let seen = await streamed.value
        XCTAssertEqual(seen.first, "onSessionJoined")
        XCTAssertTrue(seen.contains("onParticipantAudioMuted"))
        XCTAssertEqual(seen.last, "onSessionLeft")
        XCTAssertEqual(rec.events.filter { $0 == "onSessionLeft" }.count, 1)

        CallSession.shared.clearAllListeners()
        let again = try await bot("carol")
        let silent = await holds(for: 0.3) { !(rec.events.contains("onParticipantJoined") && rec.participant(for: "onParticipantJoined")?.uid == "carol") }
        XCTAssertTrue(silent, "a cleared listener hears nothing more")
        await again.leave()
    }

    func testServerShutdownClosesTheConnection() async throws {
        let loggedIn = await login("dora")
        _ = try XCTUnwrap(loggedIn)
        let rec = Recorder()
        CallSession.shared.addSessionStatusListener(rec)
        try await CometChatCalls.joinSession(sessionID: "e2e", callSetting: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build())
        let heard10 = await rec.waitFor("onSessionJoined")
        XCTAssertTrue(heard10, "onSessionJoined")
        server.stop()
        let over = await rec.waitFor("onSessionLeft")
        let closed = over ? false : await rec.waitFor("onConnectionClosed")
        XCTAssertTrue(over || closed, "the client learns the session is over")
        XCTAssertFalse(CallSession.shared.isCallSessionActive())
    }
}

final class ReconnectionTests: XCTestCase {
    func testDroppedSignallingIsResumedWithoutPeersNoticing() async throws {
        CometChatCalls.resetForTesting()
        defer { CometChatCalls.resetForTesting() }
        let harness = try ServerHarness(removesDataOnStop: true) { $0.gracePeriodSeconds = 5 }
        defer { harness.stop() }
        let server = harness.server
        let url = try XCTUnwrap(URL(string: server.url))

        let aLog = EventRecorder<CallEvent>(), bLog = EventRecorder<CallEvent>()
        let a = CallsClient(serverURL: url, appID: server.keys.appId, eventQueue: DispatchQueue(label: "a")) { aLog.add($0) }
        let b = CallsClient(serverURL: url, appID: server.keys.appId, eventQueue: DispatchQueue(label: "b")) { bLog.add($0) }
        let settings = SessionSettingsBuilder().setAudioInput("tone:500").setAudioOutput("null").build()
        for (client, uid) in [(a, "ada"), (b, "bob")] {
            _ = try await client.login(uid: uid, authKey: server.keys.authKey)
            try await client.join(callToken: try await client.generateToken(sessionID: "rc"), sessionID: "rc", settings: settings)
        }
        let seen1 = await aLog.wait { if case .participantJoined(let p) = $0 { return p.uid == "bob" }; return false }
        XCTAssertNotNil(seen1)
        let pidBefore = a.localParticipantID

        a.simulateConnectionDrop()
        let seen2 = await aLog.wait { $0 == .connectionLost }
        XCTAssertNotNil(seen2, "onConnectionLost fires")
        let seen3 = await aLog.wait { $0 == .connectionRestored }
        XCTAssertNotNil(seen3, "onConnectionRestored fires")
        XCTAssertEqual(a.localParticipantID, pidBefore, "the same participant")
        XCTAssertTrue(a.isSessionActive)
        XCTAssertFalse(bLog.all.contains { if case .participantLeft = $0 { return true }; return false }, "the peer saw no leave")
        // Still a working session: a mute after the resume reaches the peer, and media re-bound.
        a.setAudioMuted(true)
        let seen4 = await bLog.wait { if case .participantAudioMuted(let p) = $0 { return p.uid == "ada" }; return false }
        XCTAssertNotNil(seen4)
        a.setAudioMuted(false)
        let aPID = try XCTUnwrap(pidBefore)
        await eventually(3) { (b.audioLevels()[aPID] ?? -127) >= -30 }
        let heard = b.audioLevels()[aPID] ?? -127
        XCTAssertGreaterThan(heard, -30, "media flows after the resume")
        await a.leave()
        await b.leave()
        let seen5 = await aLog.wait { $0 == .sessionLeft }
        XCTAssertNotNil(seen5)
    }

    /// The server is killed (-9) and started again on its port: its rooms are gone, its users,
    /// tokens and keys are on disk. Each client's resume is refused as expired, and it rejoins
    /// the same session with a fresh call token on a new connection and a new relay — and they
    /// hear each other again. (The rejoin's transitions are `ClientConnectionTests`; this is the
    /// whole of it, for real.)
    func testAfterAServerCrashAndRestartBothClientsRejoinAndHearEachOther() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crsdk-rj-\(UUID().uuidString.prefix(6))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try CallroomdProcess(dataDir: dir)
        let url = try XCTUnwrap(URL(string: first.url))
        let port = try XCTUnwrap(url.port)
        let aLog = EventRecorder<CallEvent>(), bLog = EventRecorder<CallEvent>()
        let a = CallsClient(serverURL: url, appID: first.appId, eventQueue: DispatchQueue(label: "a")) { aLog.add($0) }
        let b = CallsClient(serverURL: url, appID: first.appId, eventQueue: DispatchQueue(label: "b")) { bLog.add($0) }
        for (client, uid, tone) in [(a, "ada", "tone:440"), (b, "bob", "tone:700")] {
            _ = try await client.login(uid: uid, authKey: first.authKey)
            try await client.join(callToken: try await client.generateToken(sessionID: "restart"), sessionID: "restart",
                                  settings: SessionSettingsBuilder().setAudioInput(tone).setAudioOutput("null").build())
        }
        let seen6 = await aLog.wait { if case .participantJoined(let p) = $0 { return p.uid == "bob" }; return false }
        XCTAssertNotNil(seen6)

        first.process.signal(SIGKILL)
        _ = first.process.wait()
        let seen7 = await aLog.wait(10) { $0 == .connectionLost }
        XCTAssertNotNil(seen7)
        let second = try CallroomdProcess(dataDir: dir, listen: "127.0.0.1:\(port)")
        defer { _ = second.stop() }
        for (client, log) in [(a, aLog), (b, bLog)] {
            let seen8 = await log.wait(15) { if case .sessionRejoined = $0 { return true }; return false }
            XCTAssertNotNil(seen8,
                            "rejoined, not given up: \(log.all.map { "\($0)".prefix(40) })")
            let seen9 = await log.wait { $0 == .connectionRestored }
            XCTAssertNotNil(seen9)
            XCTAssertEqual(client.sessionRejoinCount, 1)
            XCTAssertTrue(client.isSessionActive)
            XCTAssertFalse(log.all.contains { $0 == .connectionClosed }, "never gave up")
        }
        // Both are in the restarted server's room, and each hears the other through its new relay.
        let together = await eventually(10) { Set(a.participants.map(\.uid)) == ["ada", "bob"] && Set(b.participants.map(\.uid)) == ["ada", "bob"] }
        XCTAssertTrue(together, "both in the restarted server's room")
        let aPID = try XCTUnwrap(a.localParticipantID), bPID = try XCTUnwrap(b.localParticipantID)
        let heard = await eventually(5) { (b.audioLevels()[aPID] ?? -127) >= -30 && (a.audioLevels()[bPID] ?? -127) >= -30 }
        XCTAssertTrue(heard, "levels after the rejoin: \(b.audioLevels()) \(a.audioLevels())")
        await a.leave()
        await b.leave()
    }
}
