import CallRoomTestSupport
import CallsServer
import CallsTUI
@testable import CometChatCallsSDK
import Foundation
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every `CallSession.shared` action observed end to end: through a real server, in this
/// client's listener callbacks (all five protocols, via `ListenerBridge`) and at a second
/// participant.
final class ActionsEndToEndTests: XCTestCase {
    var t: TestServer!
    var server: CallServer { t.server }
    var mine = EventRecorder<CallEvent>()
    var peer = EventRecorder<CallEvent>()
    var bridge: ListenerBridge!
    var bob: CallsClient!
    let queue = DispatchQueue(label: "sdk-callbacks")

    override func setUp() async throws {
        CometChatCalls.resetForTesting()
        t = try TestServer.forSDK()
        try t.initializeSDK(queue: queue)
        let m = mine
        bridge = ListenerBridge { m.add($0) }
        bridge.register()
    }

    override func tearDown() async throws {
        if let bob { await bob.leave() }
        CometChatCalls.resetForTesting()
        t.stop()
    }

    /// Alice (this SDK, joining first: the moderator) and Bob (a second client) in a video session.
    func startCall(_ configure: (SessionSettingsBuilder) -> Void = { _ in }) async throws {
        _ = try await CometChatCalls.login(UID: "alice", authKey: server.keys.authKey)
        let b = CometChatCalls.sessionSettingsBuilder.setSessionType(.video).setAudioInput("tone:440").setAudioOutput("null")
        configure(b)
        try await CometChatCalls.joinSession(sessionID: "acts", callSetting: b.build())
        let p = peer
        bob = try await t.joinedClient("bob", session: "acts", settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("none").build(),
                                       name: "Bob") { p.add($0) }
        mine.wait("bob joined") { if case .participantJoined(let x) = $0 { return x.uid == "bob" }; return false }
    }

    var bobPID: String { bob.localParticipantID ?? "" }
    func other(_ e: CallEvent, _ change: String) -> Bool { e.callback == change }

    func testMediaActions() async throws {
        try await startCall()
        let s = CallSession.shared
        s.muteAudio()
        XCTAssertTrue(mine.has(.audioMuted))
        peer.wait("peer muted") { if case .participantAudioMuted(let p) = $0 { return p.uid == "alice" }; return false }
        s.unmuteAudio()
        XCTAssertTrue(mine.has(.audioUnMuted))
        s.pauseVideo()
        XCTAssertTrue(mine.has(.videoPaused))
        peer.wait("peer video paused") { if case .participantVideoPaused(let p) = $0 { return p.uid == "alice" && p.isVideoPaused == true }; return false }
        s.resumeVideo()
        XCTAssertTrue(mine.has(.videoResumed))
        peer.wait("peer: participantVideoResumed") { if case .participantVideoResumed = $0 { return true }; return false }
        s.switchCamera()
        XCTAssertTrue(mine.has(.cameraFacingChanged(cameraFacing: .REAR)))
        // The change reaches Bob through the server, so it lands a round trip later than Alice's own event.
        await eventually(5) { bob.participants.first(where: { $0.uid == "alice" })?.cameraFacing == .REAR }
        XCTAssertEqual(bob.participants.first { $0.uid == "alice" }?.cameraFacing, .REAR, "camera facing goes through the server")
        s.switchCamera()
        XCTAssertTrue(mine.has(.cameraFacingChanged(cameraFacing: .FRONT)))
        s.raiseHand()
        let raised = mine.wait("mine: participantHandRaised") { if case .participantHandRaised(let p) = $0 { return p.uid == "alice" }; return false }
        if case .participantHandRaised(let p)? = raised { XCTAssertNotNil(p.raisedHandTimestamp) }
        peer.wait("peer: participantHandRaised") { if case .participantHandRaised = $0 { return true }; return false }
        s.lowerHand()
        peer.wait("peer: participantHandLowered") { if case .participantHandLowered = $0 { return true }; return false }
        s.setPresenting(true)
        peer.wait("peer: participantStartedScreenShare") { if case .participantStartedScreenShare(let p) = $0 { return p.isPresenting == true }; return false }
        s.setPresenting(false)
        peer.wait("peer: participantStoppedScreenShare") { if case .participantStoppedScreenShare = $0 { return true }; return false }
        XCTAssertTrue(s.isCallSessionActive())
        // Alice's tone is the only sound in the room: she is the dominant speaker, for both.
        mine.wait("dominant speaker") { if case .dominantSpeakerChanged(let p) = $0 { return p.uid == "alice" }; return false }
        peer.wait("peer's dominant speaker") { if case .dominantSpeakerChanged(let p) = $0 { return p.uid == "alice" }; return false }
    }

    func testServerFeaturesRefuseWhatTheyCannotDoNeverSilently() async throws {
        try await startCall()
        let s = CallSession.shared
        // (Each works for real: RecordingTests, TranscriptionTests, StreamingTests.)
        for (action, code) in [(s.stopRecording, "ERR_NOT_RECORDING"), (s.stopTranscription, "ERR_NOT_TRANSCRIBING"),
                               (s.stopStreaming, "ERR_NOT_STREAMING")] {
            mine.clear()
            action()
            mine.wait(code) { if case .error(code, _) = $0 { return true }; return false }
        }
    }

    func testModerationActions() async throws {
        try await startCall()
        let s = CallSession.shared
        s.pinParticipant(participantId: "bob", type: "human")  // by uid
        peer.wait("peer: bob pinned") { if case .participantListChanged(let ps) = $0 { return ps.first { $0.uid == "bob" }?.isPinned == true }; return false }
        s.unpinParticipant()
        peer.wait("peer: bob unpinned") { if case .participantListChanged(let ps) = $0 { return ps.first { $0.uid == "bob" }?.isPinned == false }; return false }
        s.muteParticipant(participantId: bobPID)
        XCTAssertTrue(peer.has(.audioMuted), "bob is told he was muted")
        mine.wait("mine: participantAudioMuted") { if case .participantAudioMuted(let p) = $0 { return p.uid == "bob" }; return false }
        XCTAssertTrue(bob.isAudioMuted)
        s.pauseParticipantVideo(participantId: bobPID)
        XCTAssertTrue(peer.has(.videoPaused))
        mine.wait("mine: participantVideoPaused") { if case .participantVideoPaused(let p) = $0 { return p.uid == "bob" }; return false }
        // Bob is no moderator.
        bob.muteParticipant("alice")
        peer.wait("peer: ERR_NOT_MODERATOR") { if case .error("ERR_NOT_MODERATOR", _) = $0 { return true }; return false }
        s.removeParticipant(participantId: "bob")
        XCTAssertTrue(peer.has(.sessionLeft))
        mine.wait("mine: participantLeft") { if case .participantLeft(let p) = $0 { return p.uid == "bob" }; return false }
        bob = nil
    }

    func testLocalSurfaceActions() async throws {
        try await startCall { $0.setLayout(.tile) }
        let s = CallSession.shared
        XCTAssertTrue(mine.has(.audioModesChanged(audioModes: s.availableAudioModes)), "announced after joining")
        XCTAssertTrue(s.availableAudioModes.contains(.speaker))
        s.setLayout("SPOTLIGHT")
        XCTAssertTrue(mine.has(.callLayoutChanged(layoutType: .spotlight)))
        XCTAssertEqual(s.layout, .spotlight)
        s.setLayout(.sidebar)
        XCTAssertTrue(mine.has(.callLayoutChanged(layoutType: .sidebar)))
        s.setLayout("DIAGONAL")
        XCTAssertTrue(mine.error("INVALID_LAYOUT"))
        s.setAudioMode("SPEAKER")
        let quiet = await holds(for: 0.3) { !mine.all.contains(.audioModeChanged(audioMode: .speaker)) }
        XCTAssertTrue(quiet, "picking the current mode fires nothing")
        s.setAudioMode("EARPIECE")
        XCTAssertTrue(mine.error("AUDIO_MODE_UNAVAILABLE"), "no earpiece on Linux")
        s.setAudioMode("LOUD")
        XCTAssertTrue(mine.error("INVALID_AUDIO_MODE"))
        s.enablePictureInPictureLayout()
        XCTAssertTrue(mine.has(.pictureInPictureLayoutEnabled))
        XCTAssertTrue(s.isPictureInPictureLayoutEnabled)
        s.disablePictureInPictureLayout()
        XCTAssertTrue(mine.has(.pictureInPictureLayoutDisabled))
        s.setChatButtonUnreadCount(3)
        XCTAssertEqual(s.chatButtonUnreadCount, 3)
        s.showSettingsPanel()
        XCTAssertTrue(s.isSettingsPanelVisible)
        s.hideSettingsPanel()
        XCTAssertFalse(s.isSettingsPanelVisible)
        s.sendChatMessage("hello bob")
        peer.wait("peer: chatMessage") { if case .chatMessage(let m) = $0 { return m.text == "hello bob" && m.uid == "alice" }; return false }
        XCTAssertEqual(s.chatMessages.last?.text, "hello bob")
        XCTAssertEqual(s.inviteLink, server.url + "/call/acts")
        // The invite shared twice is one invite (the server keeps 20 live ones per participant).
        let first = await s.shareableLink(), again = await s.shareableLink()
        guard case .guestInvite(let link)? = first else { return XCTFail("a guest invite: \(String(describing: first))") }
        XCTAssertTrue(link.hasPrefix(server.url + "/call/acts?invite="), link)
        XCTAssertEqual(again, first, "the same link again, not a new invite")
    }

    func testEveryBuiltInButtonFiresItsCallbackBeforeItsAction() async throws {
        try await startCall()
        let s = CallSession.shared
        let expectations: [(BuiltInButton, CallEvent, CallEvent?)] = [
            (.toggleAudio, .toggleAudioButtonClicked, .audioMuted),
            (.toggleVideo, .toggleVideoButtonClicked, .videoPaused),
            (.switchCamera, .switchCameraButtonClicked, .cameraFacingChanged(cameraFacing: .REAR)),
            (.changeLayout, .changeLayoutButtonClicked, .callLayoutChanged(layoutType: .spotlight)),
            (.participantList, .participantListButtonClicked, .participantListVisible),
            (.shareInvite, .shareInviteButtonClicked, nil),
            (.chat, .chatButtonClicked, nil),
            (.recordingToggle, .recordingToggleButtonClicked, .recordingStarted),
        ]
        for (button, clicked, effect) in expectations {
            mine.clear()
            s.click(button)
            XCTAssertTrue(mine.has(clicked), "\(button)")
            if let effect {
                XCTAssertTrue(mine.has(effect), "\(button) → \(effect.callback)")
                let order = mine.all.map(\.callback)
                XCTAssertLessThan(order.firstIndex(of: clicked.callback) ?? 99, order.firstIndex(of: effect.callback) ?? -1, "\(button): callback first")
            }
        }
        s.click(.raiseHand)
        XCTAssertTrue(mine.has(.raiseHandButtonClicked))
        mine.wait("mine: participantHandRaised") { if case .participantHandRaised = $0 { return true }; return false }
        s.click(.participantList)
        XCTAssertTrue(mine.has(.participantListHidden))
        s.click(.leaveSession)
        XCTAssertTrue(mine.has(.leaveSessionButtonClicked))
        XCTAssertTrue(mine.has(.sessionLeft))
    }

    func testSettingsTakeEffect() async throws {
        try await startCall {
            $0.setDisplayName("Alice Liddell").startAudioMuted(true).startVideoPaused(true).enableAutoStartRecording(true)
                .enableAutoStartTranscription(true).setLayout(.sidebar).enableIOSPictureInPicture(true)
        }
        let me = try XCTUnwrap(bob.participants.first { $0.uid == "alice" })
        XCTAssertEqual(me.name, "Alice Liddell", "setDisplayName")
        XCTAssertEqual(me.isAudioMuted, true, "startAudioMuted")
        XCTAssertEqual(me.isVideoPaused, true, "startVideoPaused")
        XCTAssertTrue(CallSession.shared.isAudioMuted)
        XCTAssertEqual(CallSession.shared.layout, .sidebar, "setLayout")
        XCTAssertTrue(CallSession.shared.isPictureInPictureLayoutEnabled, "enableIOSPictureInPicture: compact layout on Linux")
        mine.wait("enableAutoStartRecording: the moderator's session records from the start") { $0 == .recordingStarted }
        mine.wait("enableAutoStartTranscription: transcribed from the start, in the caption language") { $0 == .transcriptionStarted(language: "en-US") }
    }

    func testIdleTimeoutSetting() async throws {
        _ = try await CometChatCalls.login(UID: "ida", authKey: server.keys.authKey)
        try await CometChatCalls.joinSession(sessionID: "idle", callSetting: SessionSettingsBuilder()
            .setIdleTimeoutPeriod(1).setAudioInput("null").setAudioOutput("null").build())
        XCTAssertTrue(mine.has(.sessionTimedOut), "onSessionTimedOut after 1 s alone")
        XCTAssertFalse(CallSession.shared.isCallSessionActive())
    }

    func testCallLogs() async throws {
        try await startCall()
        CallSession.shared.leaveSession()
        XCTAssertTrue(mine.has(.sessionLeft))
        await bob.leave()
        bob = nil
        // A second call, alone.
        try await CometChatCalls.joinSession(sessionID: "solo-log", callSetting: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("null").build())
        CallSession.shared.leaveSession()
        mine.wait("mine: sessionLeft") { if case .sessionLeft = $0 { return true }; return false }
        // The leave is on disk a moment after `sessionLeft`: the log lists the session once it is.
        var all: [CallLog] = []
        await eventually(5) {
            all = (try? await CallLogsRequest.CallLogsBuilder().set(limit: 1).build().fetchNext()) ?? []
            return all.first?.sessionID == "solo-log"
        }
        XCTAssertEqual(all.map(\.sessionID), ["solo-log"], "newest first, one per page")
        let request = CallLogsRequest.CallLogsBuilder().set(limit: 10).set(callStatus: .ended).set(uid: "bob").build()
        let done = expectation(description: "fetchNext")
        nonisolated(unsafe) var logs: [CallLog] = []
        request.fetchNext(onSuccess: { logs = $0; done.fulfill() }, onError: { XCTFail("\(String(describing: $0))"); done.fulfill() })
        await fulfillment(of: [done], timeout: 5)
        let log = try XCTUnwrap(logs.first)
        XCTAssertEqual(logs.count, 1)
        XCTAssertEqual(log.sessionID, "acts")
        XCTAssertEqual(log.status, .ended)
        XCTAssertEqual(log.mode, .meet)
        XCTAssertEqual(log.receiverType, .callGroup)
        XCTAssertEqual((log.receiver as? CallGroup)?.guid, "acts")
        XCTAssertEqual(log.initiator.name, "alice")
        XCTAssertEqual((log.initiator as? CallUser)?.uid, "alice")
        XCTAssertEqual(log.direction, .outgoing)
        XCTAssertEqual(log.type, "video")
        XCTAssertEqual(log.totalParticipants, 2)
        XCTAssertEqual(log.participants.compactMap(\.uid), ["alice", "bob"])
        XCTAssertNotNil(log.endedAt)
        XCTAssertFalse(log.hasRecording)
        let filtered = try await CallLogsRequest.CallLogsBuilder().set(guid: "solo-log").set(callCategory: .meet)
            .set(callType: .video).set(hasRecording: false).set(callDirection: .outgoing).build().fetchNext()
        XCTAssertEqual(filtered.map(\.sessionID), ["solo-log"])
        let transcribed = try await CallLogsRequest.CallLogsBuilder().set(hasTranscriptions: true).build().fetchNext()
        XCTAssertEqual(transcribed.count, 0)
        let incoming = try await CallLogsRequest.CallLogsBuilder().set(callDirection: .incoming).build().fetchNext()
        XCTAssertEqual(incoming.count, 0)
        // Paging back.
        let paged = CallLogsRequest.CallLogsBuilder().set(limit: 1).build()
        let p1 = try await paged.fetchNext(), p2 = try await paged.fetchNext()
        XCTAssertEqual(p1.first?.sessionID, "solo-log")
        XCTAssertEqual(p2.first?.sessionID, "acts")
        let back = expectation(description: "fetchPrevious")
        paged.fetchPrevious(onSuccess: { XCTAssertEqual($0.first?.sessionID, "solo-log"); back.fulfill() }, onError: { _ in back.fulfill() })
        await fulfillment(of: [back], timeout: 5)
    }
}

extension ActionsEndToEndTests {
    func testTranscriptsRequest() async throws {
        try await startCall()
        CallSession.shared.leaveSession()
        XCTAssertTrue(mine.has(.sessionLeft))
        // Nobody transcribed this call: a real, empty answer — not an error.
        let none = try await TranscriptsRequest.TranscriptsBuilder().set(sessionId: "acts").set(limit: 10).build().fetchNext()
        XCTAssertEqual(none, [])
        do {
            _ = try await TranscriptsRequest.TranscriptsBuilder().set(sessionId: "never-held").build().fetchNext()
            XCTFail("an unknown session is an error")
        } catch {
            XCTAssertEqual(error.errorCode, "ERR_CALL_SESSION_NOT_FOUND")
        }
        let apiKey = server.keys.apiKey
        let tooMany = await { () async -> Int in
            var req = URLRequest(url: URL(string: server.url + "/v3/calls/acts/transcriptions?perPage=1001")!)
            req.setValue(apiKey, forHTTPHeaderField: "apikey")
            let sem = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var status = 0
            URLSession.shared.dataTask(with: req) { _, r, _ in status = (r as? HTTPURLResponse)?.statusCode ?? 0; sem.signal() }.resume()
            sem.wait()
            return status
        }()
        XCTAssertEqual(tooMany, 400, "perPage ≤ 1000")
    }
}
