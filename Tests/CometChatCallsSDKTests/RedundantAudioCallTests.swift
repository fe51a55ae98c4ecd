import CallRoomTestSupport
import CallsCore
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Redundant audio (RFC 2198) end to end through a real callroomd: a listener's loss reports
/// switch the speaker's redundancy on; the listener plays lost frames from later packets'
/// copies; the server's recorder, which hears the same redundant packets, writes a complete
/// plain-Opus track; a speaker with redundancy off keeps sending plain Opus.
final class RedundantAudioCallTests: XCTestCase {
    func testLossReportsSwitchRedundancyOnAndLostFramesArePlayedFromCopies() async throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/opusdec"), "needs opus-tools (scripts/install-deps.sh)")
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let modEvents = EventRecorder<CallEvent>()
        let speaker = try await t.joinedClient("spk", session: "red", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build(), onEvent: { modEvents.add($0) })
        let listener = try await t.joinedClient("lis", session: "red", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null")
            .setNetworkImpairment(NetworkImpairment(lossPercent: 10, jitterMs: 0, seed: 3)).build())
        speaker.setSessionFeature(.recording, enabled: true)
        try await waitFor("recording", modEvents) { $0 == .recordingStarted }
        // One frame is repeated from the start (5 % assumed); the first report (after half a second
        // of audio, then every 2 s) raises it to what 10 % asks for; then copies repair the losses.
        XCTAssertGreaterThanOrEqual(speaker.mediaReport?.redundancyFrames ?? 0, 1, "from the first packet")
        await eventually(8, poll: 0.1) { (speaker.mediaReport?.redundancyFrames ?? 0) >= 2 }
        let frames = speaker.mediaReport?.redundancyFrames ?? 0
        XCTAssertGreaterThanOrEqual(frames, 2, "10 % loss reported: two (or more) previous frames repeated")
        XCTAssertEqual(speaker.fecExpectedLossPercent.map { $0 >= 6 }, true, "the loss reached the speaker")
        let before = try XCTUnwrap(listener.mediaReport)
        try await Task.sleep(nanoseconds: 3_000_000_000)
        let after = try XCTUnwrap(listener.mediaReport)
        let drops = after.impairedDrops - before.impairedDrops
        // (The impairment drops every kind of packet; `lost` counts the audio frames whose own
        // packet never came.)
        let lost = after.lost - before.lost
        let repaired = after.repaired - before.repaired
        let concealedOrFEC = (after.concealed + after.recovered) - (before.concealed + before.recovered)
        XCTAssertGreaterThan(drops, 8, "the impairment dropped packets")
        XCTAssertGreaterThan(lost, 4, "audio frames lost on the way")
        XCTAssertGreaterThanOrEqual(repaired, lost * 8 / 10, "nearly every lost frame played from a copy: \(repaired) of \(lost)")
        XCTAssertLessThanOrEqual(concealedOrFEC, max(1, lost / 5), "little left for FEC or concealment")
        let sent = try XCTUnwrap(speaker.mediaReport)
        XCTAssertGreaterThan(Double(sent.payloadBytesSent) / Double(max(1, sent.packetsSent)), 100, "packets carry copies (a plain one is about 80 bytes)")

        // The recorder took the same redundant packets apart: the speaker's track is plain, whole Opus.
        speaker.setSessionFeature(.recording, enabled: false)
        try await waitFor("stopped", modEvents) { $0 == .recordingStopped }
        let admin = ["apikey": t.server.keys.apiKey]
        var files: [[String: Any]] = []
        files = await eventuallyValue(5, poll: 0.1) { () -> [[String: Any]]? in
            let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/red", headers: admin).data
            // (The Ogg Opus files: the mix and one per participant; their video, if any, is in WebMs beside them.)
            guard let r = (call["recordings"] as? [[String: Any]])?.first, r["endTime"] is NSNumber,
                  case let f = (r["files"] as? [[String: Any]] ?? []).filter({ $0["video"] as? Bool != true }), f.count == 3 else { return nil }
            return f
        } ?? []
        let track = try XCTUnwrap(files.first { $0["uid"] as? String == "spk" }?["url"] as? String, "\(files)")
        let dir = TemporaryDirectory("callroom-red")
        defer { dir.remove() }
        let path = dir.file("spk.opus")
        try BlockingHTTP.request("GET", track, headers: admin).body.write(to: URL(fileURLWithPath: path))
        let dec = try ManagedProcess("/usr/bin/opusdec", ["--quiet", "--rate", "48000", path, path + ".wav"])
        XCTAssertEqual(dec.wait(timeout: 20), 0, dec.errorOutput)
        let windows = SignalAnalysis.windows(try XCTUnwrap(SignalAnalysis.readWAV(path + ".wav")).samples, size: 4800)
        let tone = windows.filter { SignalAnalysis.toneDominanceDB($0, frequency: 440, others: [660]) > 20 }.count
        XCTAssertGreaterThan(windows.count, 30, "over 3 s recorded (the 3 s measured above, and more)")
        XCTAssertGreaterThanOrEqual(tone, windows.count - 2, "the track is the tone throughout: \(tone) of \(windows.count)")
        await listener.leave()
        await speaker.leave()
    }

    /// Losses in bursts: the listener reports the longest run it lost in a row, and the speaker
    /// repeats enough frames to cover runs longer than four (at half its bitrate).
    func testRunsLostInARowRaiseTheRedundancyBeyondWhatTheRateAsks() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let speaker = try await t.joinedClient("spk", session: "bursts", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build())
        let listener = try await t.joinedClient("lis", session: "bursts", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null")
            .setNetworkImpairment(NetworkImpairment(lossPercent: 20, jitterMs: 0, seed: 7, burstLength: 3)).build())
        await eventually(10, poll: 0.1) { (speaker.mediaReport?.redundancyFrames ?? 0) >= 5 }
        let frames = speaker.mediaReport?.redundancyFrames ?? 0
        XCTAssertGreaterThanOrEqual(frames, 5, "runs of five and more reported: five or six previous frames repeated")
        let before = try XCTUnwrap(listener.mediaReport)
        try await Task.sleep(nanoseconds: 3_000_000_000)
        let after = try XCTUnwrap(listener.mediaReport)
        let lost = after.lost - before.lost, repaired = after.repaired - before.repaired
        XCTAssertGreaterThan(lost, 10, "frames lost on the way")
        XCTAssertGreaterThanOrEqual(repaired, lost * 2 / 3, "most of them played from copies, runs included: \(repaired) of \(lost)")
        await listener.leave()
        await speaker.leave()
    }

    func testASpeakerWithRedundancyOffSendsPlainOpusWithFEC() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let speaker = try await t.joinedClient("spk", session: "plain", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").enableAudioRedundancy(false).build())
        let listener = try await t.joinedClient("lis", session: "plain", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null")
            .setNetworkImpairment(NetworkImpairment(lossPercent: 10, jitterMs: 0, seed: 3)).build())
        await eventually(8) { (speaker.fecExpectedLossPercent ?? 0) >= 6 }
        XCTAssertEqual(speaker.fecExpectedLossPercent.map { $0 >= 6 }, true, "the reports came")
        let none = await holds(for: 1) { speaker.mediaReport?.redundancyFrames == 0 }
        XCTAssertTrue(none, "a receiver without RED: nothing repeated")
        XCTAssertEqual(speaker.mediaReport?.redundancyFrames, 0)
        let r = try XCTUnwrap(listener.mediaReport)
        XCTAssertEqual(r.repaired, 0, "nothing to repair from")
        XCTAssertGreaterThan(r.recovered, 0, "in-band FEC instead")
        await listener.leave()
        await speaker.leave()
    }
}
