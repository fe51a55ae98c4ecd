import CallRoomTestSupport
import CallsAudio
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Push-to-talk, per-participant volume and capture processing in a real call.
final class LocalAudioControlsTests: XCTestCase {
    func testPushToTalkAndVolume() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let speaker = try await t.joinedClient("spk", session: "ptt", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none")
            // (No noise suppression here: a steady test tone is exactly what it learns to remove.)
            .setCaptureProcessing(CaptureProcessing(noiseSuppression: false, automaticGain: false, echoCancellation: true)).build())
        let mix = MixProbe()
        let listener = try await t.joinedClient("lis", session: "ptt", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), probe: mix)
        let pid = try XCTUnwrap(speaker.localParticipantID)
        func level(settle: Double = 0.6) async -> Float {
            try? await Task.sleep(nanoseconds: UInt64(settle * 1e9))
            return listener.audioLevels()[pid] ?? -127
        }
        let normal = await level(settle: 1.0)
        XCTAssertGreaterThan(normal, -30, "heard with processing on")

        speaker.setPushToTalk(true)
        XCTAssertFalse(speaker.isTransmitting)
        let silentLevel = await level()
        XCTAssertLessThan(silentLevel, -60, "push-to-talk: nothing sent while not talking")
        speaker.setTalking(true)
        XCTAssertTrue(speaker.isTransmitting)
        let talkingLevel = await level()
        XCTAssertGreaterThan(talkingLevel, -30, "sent while talking")

        let full = mix.level
        listener.setVolume(0.25, for: "spk")
        try await Task.sleep(nanoseconds: 500_000_000)
        XCTAssertEqual(mix.level, full - 12, accuracy: 2, "volume 0.25 plays 12 dB quieter")
        XCTAssertGreaterThan(listener.audioLevels()[pid] ?? -127, -30, "the tile meter still shows what they send")
        listener.setVolume(0, for: pid)
        try await Task.sleep(nanoseconds: 500_000_000)
        XCTAssertLessThan(mix.level, -90, "volume 0 silences one participant")
        // Pauses in sending (push-to-talk, mute) are not network loss.
        try await Task.sleep(nanoseconds: 2_200_000_000)
        XCTAssertEqual(listener.connectionQuality()[pid], .good, "a sender that paused is not a bad connection")
        await speaker.leave()
        await listener.leave()
    }
}

/// The settings panel's device choices and test tone, in a real call.
final class AudioDeviceSwitchTests: XCTestCase {
    func testSwitchingTheMicrophoneAndATestTone() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let speaker = try await t.joinedClient("mic", session: "devs", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("none").build())
        let mix = MixProbe()
        let listener = try await t.joinedClient("ear", session: "devs", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), probe: mix)
        let pid = try XCTUnwrap(speaker.localParticipantID)
        try await Task.sleep(nanoseconds: 600_000_000)
        XCTAssertLessThan(listener.audioLevels()[pid] ?? -127, -60, "null microphone: silence")
        XCTAssertLessThan(mix.level, -60)
        try speaker.setAudioInput("tone:440")
        XCTAssertEqual(speaker.audioEndpoints.input, "tone:440")
        try await Task.sleep(nanoseconds: 800_000_000)
        XCTAssertGreaterThan(listener.audioLevels()[pid] ?? -127, -30, "the new microphone is heard at once")
        try speaker.setAudioInput("null")
        try await Task.sleep(nanoseconds: 800_000_000)
        XCTAssertLessThan(mix.level, -60, "back to silence")
        listener.playTestTone(seconds: 1)
        try await Task.sleep(nanoseconds: 300_000_000)
        XCTAssertGreaterThan(mix.level, -30, "the test tone plays locally")
        XCTAssertLessThan(speaker.audioLevels()[listener.localParticipantID ?? ""] ?? -127, -60, "and is not sent")
        try await Task.sleep(nanoseconds: 1_200_000_000)
        XCTAssertLessThan(mix.level, -60, "for one second")
        XCTAssertThrowsError(try speaker.setAudioInput("bogus:1"))
        await speaker.leave()
        await listener.leave()
    }
}

/// The level of what the listener plays (after the mixer).
final class MixProbe: MediaProbe, @unchecked Sendable {
    private let lock = NSLock()
    private var last: Float = -127
    var level: Float { lock.lock(); defer { lock.unlock() }; return last }
    func captured(_ frame: UnsafeBufferPointer<Int16>, sequence: UInt16, at: UInt64) {}
    func sent(sequence: UInt16, at: UInt64) {}
    func received(ssrc: UInt32, sequence: UInt16, at: UInt64) {}
    func played(_ frame: UnsafeBufferPointer<Int16>, at: UInt64) {
        let l = LevelMeter.rmsDBFS(frame)
        lock.lock(); last = l; lock.unlock()
    }
}
