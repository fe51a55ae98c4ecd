@testable import CometChatCallsSDK
import Foundation
import XCTest

final class SettingsTests: XCTestCase {
    var dir: String!
    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("crsdk-\(UUID().uuidString.prefix(6))").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        CometChatCalls.resetForTesting()
    }
    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
        CometChatCalls.resetForTesting()
    }

    func write(_ text: String) -> String {
        let p = dir + "/cometchat-settings.json"
        XCTAssertTrue(FileManager.default.createFile(atPath: p, contents: Data(text.utf8)))
        return p
    }

    func code(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch let e as CometChatCallException { return e.errorCode } catch { return "other" }
    }

    func testEachDocumentedSettingsError() {
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: dir + "/missing.json") }, "SETTINGS_FILE_NOT_FOUND")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write("{not json")) }, "SETTINGS_FILE_INVALID")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write("[1,2]")) }, "SETTINGS_FILE_INVALID")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write(#"{"region":"us"}"#)) }, "SETTINGS_MISSING_APP_ID")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write(#"{"appId":" ","region":"us"}"#)) }, "SETTINGS_MISSING_APP_ID")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write(#"{"appId":"a"}"#)) }, "SETTINGS_MISSING_REGION")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write(#"{"appId":"a","region":"us","callsSDK":3}"#)) },
                       "SETTINGS_FILE_INVALID")
        XCTAssertEqual(code { try CometChatCalls.initFromSettings(path: write(#"{"appId":"a","region":"us","callsSDK":{"host":"ftp://x"}}"#)) },
                       "HOST_INVALID")
        XCTAssertNil(CometChatCalls.appSettings, "failed inits leave the SDK unconfigured")
    }

    func testSettingsFileHostIsTheServer() throws {
        try CometChatCalls.initFromSettings(path: write(#"{"appId":"app1","region":"eu","callsSDK":{"host":"127.0.0.1:9999","adminHost":""}}"#))
        let s = try XCTUnwrap(CometChatCalls.appSettings)
        XCTAssertEqual(s.appID, "app1")
        XCTAssertEqual(s.region, "eu")
        XCTAssertEqual(try s.resolvedServerURL().absoluteString, "http://127.0.0.1:9999")
    }

    func testSecondInitIsRefusedAndDoesNotReconfigure() throws {
        try CometChatCalls.initialize(CallAppSettingsBuilder().set(appID: "first").set(region: "us").set(host: "h:1").build())
        XCTAssertEqual(code { try CometChatCalls.initialize(CallAppSettingsBuilder().set(appID: "second").set(region: "us").build()) },
                       "ALREADY_INITIALIZED")
        XCTAssertEqual(CometChatCalls.appSettings?.appID, "first")
    }

    func testCallbackInitReportsOnTheCallbackQueue() {
        let q = DispatchQueue(label: "cb")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 1)
        let ok = expectation(description: "onSuccess")
        _ = CometChatCalls(callsAppSettings: CallAppSettingsBuilder().set(appID: "a").set(region: "r").set(host: "h:1")
            .set(callbackQueue: q).build(), onSuccess: { _ in
                XCTAssertEqual(DispatchQueue.getSpecific(key: key), 1)
                ok.fulfill()
            }, onError: { _ in XCTFail("unexpected error") })
        wait(for: [ok], timeout: 2)
        let err = expectation(description: "onError")
        _ = CometChatCalls(callsAppSettings: CallAppSettingsBuilder().set(appID: "b").set(region: "r").build(),
                           onSuccess: { _ in XCTFail("second init must fail") },
                           onError: { e in XCTAssertEqual(e?.errorCode, "ALREADY_INITIALIZED"); err.fulfill() })
        wait(for: [err], timeout: 2)
    }

    @available(*, deprecated)
    func testDeprecatedAliasesStillWork() {
        let s = CallAppSettingsBuilder().setAppId("x").setRegion("y").build()
        XCTAssertEqual(s.appID, "x")
        XCTAssertEqual(s.region, "y")
        XCTAssertEqual(SessionSettingsBuilder().setType(.voice).build().sessionType, .voice)
        XCTAssertEqual(SessionType.audio, .voice)
        XCTAssertEqual(CameraFacing.BACK, .REAR)
    }

    func testSessionSettingsDefaultsAreTheDocumentedOnes() {
        let s = CometChatCalls.sessionSettingsBuilder.build()
        XCTAssertNil(s.title)
        XCTAssertNil(s.displayName)
        XCTAssertEqual(s.sessionType, .video)
        XCTAssertEqual(s.layout, .tile)
        XCTAssertEqual(s.idleTimeoutPeriod, 300)
        XCTAssertFalse(s.startAudioMuted)
        XCTAssertFalse(s.startVideoPaused)
        XCTAssertEqual(s.audioMode, .speaker)
        XCTAssertEqual(s.initialCameraFacing, .FRONT)
        XCTAssertFalse(s.autoStartRecording)
        XCTAssertFalse(s.autoStartTranscription)
        XCTAssertEqual(s.captionLanguage, "en-US")
        XCTAssertFalse(s.enableIOSPictureInPicture)
        XCTAssertTrue(s.hideRecordingButton)
        XCTAssertTrue(s.hideTranscriptionButton)
        XCTAssertTrue(s.hideClosedCaptionButton)
        XCTAssertTrue(s.hideShareInviteButton)
        XCTAssertTrue(s.hideChatButton)
        XCTAssertFalse(s.hideControlPanel)
        XCTAssertFalse(s.hideLeaveSessionButton)
        XCTAssertFalse(s.hideToggleAudioButton)
        XCTAssertFalse(s.hideParticipantListButton)
        XCTAssertEqual(s.audioInput, "alsa:default")
        XCTAssertEqual(s.audioFrameMs, 20)
        XCTAssertEqual(s.audioMixLoudest, 4)
        XCTAssertNil(SessionSettingsBuilder().setAudioMixLoudest(nil).build().audioMixLoudest, "everyone")
        XCTAssertEqual(SessionSettingsBuilder().setAudioMixLoudest(0).build().audioMixLoudest, 1)
    }

    func testSettersChain() {
        let s = SessionSettingsBuilder().setTitle("T").setDisplayName("D").setSessionType(.voice).setLayout(.spotlight)
            .setIdleTimeoutPeriod(0).startAudioMuted(true).hideControlPanel(true).hideRecordingButton(false)
            .setAudioInput("tone:300").setAudioOutput("null").build()
        XCTAssertEqual(s.title, "T")
        XCTAssertEqual(s.displayName, "D")
        XCTAssertEqual(s.sessionType, .voice)
        XCTAssertEqual(s.layout, .spotlight)
        XCTAssertEqual(s.idleTimeoutPeriod, 0)
        XCTAssertTrue(s.startAudioMuted)
        XCTAssertTrue(s.hideControlPanel)
        XCTAssertFalse(s.hideRecordingButton)
        XCTAssertEqual(s.audioInput, "tone:300")
        XCTAssertEqual(LayoutType.spotlight.value, "SPOTLIGHT")
        XCTAssertEqual(AudioMode.headphones.value, "HEADPHONES")
    }
}
