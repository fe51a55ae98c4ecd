import CallRoomTestSupport
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// The v4 standalone API (seed 002) on the v5 engine: the documented sample compiles and its
/// delegate hears the call.
@available(*, deprecated)
final class V4CompatibilityTests: XCTestCase {
    final class Delegate: CallsEventsDelegate, @unchecked Sendable {
        let lock = NSLock()
        var seen: [String] = []
        var users: [RTCUser] = []
        func note(_ s: String) { lock.lock(); seen.append(s); lock.unlock() }
        func onCallEnded() { note("onCallEnded") }
        func onCallEndButtonPressed() { note("onCallEndButtonPressed") }
        func onUserJoined(rtcUser: RTCUser) { lock.lock(); users.append(rtcUser); lock.unlock(); note("onUserJoined") }
        func onUserLeft(rtcUser: RTCUser) { note("onUserLeft") }
        func onUserListChanged(rtcUsers: [RTCUser]) { note("onUserListChanged:\(rtcUsers.count)") }
        func onAudioModeChanged(mode: [AudioMode]) { note("onAudioModeChanged") }
        func onUserMuted(rtcMutedUser: RTCMutedUser) { note("onUserMuted:\(rtcMutedUser.muted.uid):\(rtcMutedUser.isMuted)") }
        func onCallSwitchedToVideo(callSwitchedInfo: CallSwitchRequestInfo) { note("onCallSwitchedToVideo") }
        func wait(_ s: String) -> Bool {
            eventually(5) { lock.lock(); defer { lock.unlock() }; return seen.contains(s) }
        }
    }

    func testSettingsMapOntoV5() {
        let s = CometChatCalls.CallSettingsBuilder.setDefaultLayout(false).setIsAudioOnly(true).setShowRecordingButton(true)
            .setEndCallButtonDisable(true).setMuteAudioButtonDisable(true).setStartAudioMuted(true).setStartVideoMuted(true)
            .setMode(.spotlight).setDefaultAudioMode(AudioMode(mode: "HEADPHONES")).build()
        let v5 = s.sessionSettings
        XCTAssertEqual(v5.sessionType, .voice)
        XCTAssertFalse(v5.hideRecordingButton)
        XCTAssertTrue(v5.hideControlPanel)
        XCTAssertTrue(v5.hideHeaderPanel)
        XCTAssertTrue(v5.hideLeaveSessionButton)
        XCTAssertTrue(v5.hideToggleAudioButton)
        XCTAssertTrue(v5.startAudioMuted)
        XCTAssertTrue(v5.startVideoPaused)
        XCTAssertEqual(v5.layout, .spotlight)
        XCTAssertEqual(v5.audioMode, .headphones)
        XCTAssertEqual(CometChatCalls.CallSettingsBuilder().build().idleTimeoutPeriod, 180, "v4 default")
        XCTAssertEqual(AudioMode(mode: "nonsense"), .speaker)
    }

    func testStartSessionDeliversV4Events() async throws {
        CometChatCalls.resetForTesting()
        let harness = try ServerHarness(removesDataOnStop: true)
        let server = harness.server
        defer { CometChatCalls.resetForTesting(); harness.stop() }
        try CometChatCalls.initialize(CallAppSettingsBuilder().set(appID: server.keys.appId).set(region: "local").set(host: server.url)
            .set(callbackQueue: DispatchQueue(label: "v4")).build())
        // The v4 flow: an auth token from the REST API, then generateToken(authToken:sessionID:) and startSession.
        let auth = try await { () async throws -> String in
            let c = CallsClient(serverURL: URL(string: server.url)!, appID: server.keys.appId) { _ in }
            return try await c.login(uid: "vic", authKey: server.keys.authKey).authToken
        }()
        let delegate = Delegate()
        let started = expectation(description: "started")
        CometChatCalls.generateToken(authToken: auth as NSString, sessionID: "v4room") { (token: GenerateToken?) in
            guard let token else { return XCTFail("no token") }
            let settings = CometChatCalls.CallSettingsBuilder.setDefaultLayout(true).setIsAudioOnly(true).setDelegate(delegate).build()
            CometChatCalls.startSession(callToken: token, callSetting: settings, view: nil) { _ in started.fulfill() } onError: { e in
                XCTFail("startSession: \(String(describing: e))")
                started.fulfill()
            }
        } onError: { e in XCTFail("generateToken: \(String(describing: e))"); started.fulfill() }
        await fulfillment(of: [started], timeout: 5)
        XCTAssertTrue(delegate.wait("onUserListChanged:1"))
        XCTAssertTrue(delegate.wait("onAudioModeChanged"))

        let peer = CallsClient(serverURL: URL(string: server.url)!, appID: server.keys.appId, eventQueue: DispatchQueue(label: "p")) { _ in }
        _ = try await peer.login(uid: "wes", authKey: server.keys.authKey)
        try await peer.join(callToken: try await peer.generateToken(sessionID: "v4room"),
                            settings: SessionSettingsBuilder().setAudioInput("null").setAudioOutput("none").build())
        XCTAssertTrue(delegate.wait("onUserJoined"))
        XCTAssertEqual(delegate.users.first?.uid, "wes")
        peer.setAudioMuted(true)
        XCTAssertTrue(delegate.wait("onUserMuted:wes:true"))
        CometChatCalls.switchToVideoCall()
        XCTAssertTrue(delegate.wait("onCallSwitchedToVideo"))
        await peer.leave()
        XCTAssertTrue(delegate.wait("onUserLeft"))
        CometChatCalls.audioMuted(true)
        XCTAssertTrue(CallSession.shared.isCallSessionActive())
        CallSession.shared.click(.leaveSession)
        XCTAssertTrue(delegate.wait("onCallEndButtonPressed"))
        XCTAssertTrue(delegate.wait("onCallEnded"))
    }
}
