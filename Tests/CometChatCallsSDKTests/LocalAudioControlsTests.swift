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
        /// The listener's meter for the speaker once it satisfies `ok` (or after 5 s).
        func level(until ok: (Float) -> Bool) async -> Float {
            await eventually(5) { ok(listener.audioLevels()[pid] ?? -127) }
            return listener.audioLevels()[pid] ?? -127
        }
        let normal = await level { $0 > -30 }
        XCTAssertGreaterThan(normal, -30, "heard with processing on")

        speaker.setPushToTalk(true)
        XCTAssertFalse(speaker.isTransmitting)
        let silentLevel = await level { $0 < -60 }
        XCTAssertLessThan(silentLevel, -60, "push-to-talk: nothing sent while not talking")
        speaker.setTalking(true)
        XCTAssertTrue(speaker.isTransmitting)
        let talkingLevel = await level { $0 > -30 }
        XCTAssertGreaterThan(talkingLevel, -30, "sent while talking")

        // The mix's level once it is steady (two readings 200 ms apart within half a dB).
        var last = mix.level
        await eventually(5, poll: 0.2) {
            let now = mix.level
            defer { last = now }
            return now > -30 && abs(now - last) < 0.5
        }
        /// The mix's level as the median of its frames over half a second: one frame alone can
        /// be a concealed one on a busy machine (a run beside another shard read 9 dB, not 12).
        func mixLevel() async -> Float {
            var readings: [Float] = []
            await eventually(2, poll: 0.02) { readings.append(mix.level); return readings.count >= 25 }
            return readings.sorted()[readings.count / 2]
        }
        let full = await mixLevel()
        listener.setVolume(0.25, for: "spk")
        var quieter = full
        await eventually(5) { () async -> Bool in
            quieter = await mixLevel()
            return abs(quieter - (full - 12)) < 2
        }
        XCTAssertEqual(quieter, full - 12, accuracy: 2, "volume 0.25 plays 12 dB quieter")
        XCTAssertGreaterThan(listener.audioLevels()[pid] ?? -127, -30, "the tile meter still shows what they send")
        listener.setVolume(0, for: pid)
        await eventually(5) { mix.level < -90 }
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
        await eventually(5) { listener.mediaStatistics.map { $0.packetsReceived > 10 } ?? false }
        XCTAssertLessThan(listener.audioLevels()[pid] ?? -127, -60, "null microphone: silence")
        XCTAssertLessThan(mix.level, -60)
        try speaker.setAudioInput("tone:440")
        XCTAssertEqual(speaker.audioEndpoints.input, "tone:440")
        await eventually(5) { (listener.audioLevels()[pid] ?? -127) > -30 }
        XCTAssertGreaterThan(listener.audioLevels()[pid] ?? -127, -30, "the new microphone is heard at once")
        try speaker.setAudioInput("null")
        await eventually(5) { mix.level < -60 }
        XCTAssertLessThan(mix.level, -60, "back to silence")
        listener.playTestTone(seconds: 1)
        let toneStarted = Date()
        await eventually(5) { mix.level > -30 }
        XCTAssertGreaterThan(mix.level, -30, "the test tone plays locally")
        XCTAssertLessThan(speaker.audioLevels()[listener.localParticipantID ?? ""] ?? -127, -60, "and is not sent")
        await eventually(5) { mix.level < -60 }
        XCTAssertLessThan(mix.level, -60, "the tone ends")
        XCTAssertGreaterThan(Date().timeIntervalSince(toneStarted), 0.8, "after about a second")
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
