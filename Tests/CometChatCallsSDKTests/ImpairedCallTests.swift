import CallRoomTestSupport
import CallsAudio
import CallsCore
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// A call through 10 % loss and 0…30 ms of delay variation still delivers a continuous tone:
/// redundant copies, FEC and concealment fill the gaps, playback never stalls.
final class ImpairedCallTests: XCTestCase {
    func testLossyNetworkStillDeliversAContinuousTone() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let wav = t.dir + "/heard.wav"
        let events = EventRecorder<CallEvent>()
        let listener = try await t.joinedClient("lis", session: "lossy", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("file:\(wav)").setJitterTargetFrames(3)
            .setNetworkImpairment(NetworkImpairment(lossPercent: 10, jitterMs: 30, seed: 7)).build(), onEvent: { events.add($0) })
        let speaker = try await t.joinedClient("spk", session: "lossy", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build())
        try await Task.sleep(nanoseconds: 4_500_000_000)
        let report = try XCTUnwrap(listener.mediaReport)
        // Both ends see the bad link: the listener about the speaker's audio, the speaker from reports.
        let spkPID = try XCTUnwrap(speaker.localParticipantID)
        XCTAssertEqual(listener.connectionQuality()[spkPID], .poor, "10 % loss is poor")
        XCTAssertTrue(events.all.contains { if case .connectionQualityChanged(let p, .poor) = $0 { return p.pid == spkPID }; return false },
                      "the change is an event (onConnectionQualityChanged): \(events.all.map(\.callback))")
        let stats = try XCTUnwrap(listener.receiveStatistics()[spkPID], "receive statistics for the speaker")
        XCTAssertGreaterThan(stats.packetsReceived, 100)
        XCTAssertGreaterThan(stats.packetsLost + stats.late, 5, "the impairment shows in the statistics")
        XCTAssertGreaterThan(stats.jitterMs, 1, "30 ms of delay variation shows as jitter")
        XCTAssertGreaterThan(stats.bytesReceived, 1000)
        // (Measured every 2 s: a ping's round trip, and the receivers' reports back to the speaker.)
        await eventually(5, poll: 0.1) { listener.serverRoundTripMs != nil && speaker.connectionQuality()[spkPID] != nil }
        XCTAssertNotNil(listener.serverRoundTripMs, "the round trip to the server is measured")
        XCTAssertNotNil(speaker.connectionQuality()[spkPID], "the speaker learns its uplink quality")
        // The listener's receiver reports reached the speaker: its FEC is tuned for the loss.
        let tuned = try XCTUnwrap(speaker.fecExpectedLossPercent)
        XCTAssertGreaterThanOrEqual(tuned, 6, "FEC tuned from receiver reports (10 % loss): \(tuned) %")
        XCTAssertLessThanOrEqual(tuned, 20)
        await speaker.leave()
        await listener.leave()

        XCTAssertGreaterThan(report.impairedDrops, 8, "the impairment dropped packets")
        XCTAssertGreaterThan(report.repaired + report.recovered + report.concealed, report.impairedDrops / 2, "gaps were filled")
        let samples = try XCTUnwrap(readSamples(wav))
        let windows = stride(from: 0, to: samples.count - 2400, by: 2400).map { samples[$0..<($0 + 2400)] }
        let firstTone = try XCTUnwrap(windows.firstIndex { rms($0) > -30 })
        let lastTone = try XCTUnwrap(windows.lastIndex { rms($0) > -30 })
        let span = windows[firstTone...lastTone]
        XCTAssertGreaterThan(span.count, 50, "about 3 s of tone")
        let dropouts = span.filter { rms($0) < -40 }.count
        XCTAssertEqual(dropouts, 0, "no 50 ms window of silence while the tone plays")
    }

    func rms(_ s: ArraySlice<Int16>) -> Double { WAVHelpers.rms(s) }
    func readSamples(_ path: String) -> [Int16]? { WAVHelpers.readSamples(path) }
}

/// Level and WAV reading for these tests.
enum WAVHelpers {
    static func rms(_ s: ArraySlice<Int16>) -> Double {
        let sum = s.reduce(0.0) { $0 + Double($1) * Double($1) }
        let r = (sum / Double(max(1, s.count))).squareRoot() / 32768
        return r > 0 ? 20 * log10(r) : -200
    }

    static func readSamples(_ path: String) -> [Int16]? {
        guard let d = FileManager.default.contents(atPath: path), d.count > 44 else { return nil }
        let b = [UInt8](d)
        var out: [Int16] = []
        var i = 44
        while i + 1 < b.count { out.append(Int16(bitPattern: UInt16(b[i]) | UInt16(b[i + 1]) << 8)); i += 2 }
        return out
    }
}

/// Short playback periods with playout phase alignment keep a tone continuous.
final class ShortPeriodCallTests: XCTestCase {
    func testFivePeriodPlaybackStaysContinuous() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let wav = t.dir + "/heard5.wav"
        let listener = try await t.joinedClient("lis", session: "p5", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("file:\(wav)").setAudioPeriodMs(5).setJitterTargetFrames(1).build())
        let speaker = try await t.joinedClient("spk", session: "p5", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build())
        try await Task.sleep(nanoseconds: 3_000_000_000)
        await speaker.leave()
        await listener.leave()
        let helper = WAVHelpers.self
        let samples = try XCTUnwrap(helper.readSamples(wav))
        let windows = stride(from: 0, to: samples.count - 2400, by: 2400).map { samples[$0..<($0 + 2400)] }
        let first = try XCTUnwrap(windows.firstIndex { helper.rms($0) > -30 })
        let last = try XCTUnwrap(windows.lastIndex { helper.rms($0) > -30 })
        XCTAssertGreaterThan(last - first, 40)
        XCTAssertEqual(windows[first...last].filter { helper.rms($0) < -40 }.count, 0, "no dropouts while the boundary aligns")
    }
}

/// Playout moves its frame boundary toward packet arrival, in the quiet between words, without
/// making a packet late.
final class PlayoutPhaseCallTests: XCTestCase {
    func testTheListenerMovesPlayoutEarlierInTheQuietAndNoPacketGoesLate() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        // 100 ms beeps every 500 ms (quiet frames between), written with the engine's own WAV writer.
        let beeps = t.dir + "/beeps.wav", heard = t.dir + "/heard-phase.wav"
        let writer = try FileOutput(path: beeps, frameSamples: 960, paced: false)
        var frame = [Int16](repeating: 0, count: 960)
        for f in 0..<250 {
            for i in 0..<960 {
                let n = f * 960 + i
                frame[i] = f % 25 < 5 ? Int16(8000 * sin(2 * Double.pi * 440 * Double(n) / 48_000)) : 0
            }
            try frame.withUnsafeBufferPointer { try writer.write($0) }
        }
        writer.close()
        // A start depth of two frames: every packet waits more than a frame at first, whatever
        // the phase, so the boundary must move (a quarter frame, 5 ms, at most per 1.5 s). The
        // path delays each packet by 0–3 ms: were the moves to leave packets less than the
        // margin their window showed, the later ones of the next window would miss their frame.
        let listener = try await t.joinedClient("lis", session: "phase", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("file:\(heard)").setJitterTargetFrames(2)
            .setNetworkImpairment(NetworkImpairment(lossPercent: 0, jitterMs: 3, seed: 7)).build())
        let speaker = try await t.joinedClient("spk", session: "phase", settings: SessionSettingsBuilder()
            .setAudioInput("file:\(beeps)").setAudioOutput("none").build())
        // Frames that missed their packet though it came as early as ever (playout's misses, not
        // a stall's: `delayed`), so far — before the first move, at the start (the first packets
        // can come bunched, and playout starts on them).
        func misses(_ r: MediaReport) -> Int { r.concealed + r.late - r.delayed }
        let first = await eventuallyValue(20, poll: 0.01) { listener.mediaReport.flatMap { $0.playoutAdvances >= 1 ? $0 : nil } }
        let before = try XCTUnwrap(first, "playout moved: \(String(describing: listener.mediaReport))")
        // Until the moves stop: no move for 3.5 s (two windows of evidence said stay), the
        // packets waiting the margin. From a wait over a frame, 5 ms a move and 1.5 s of evidence
        // each: ≈ 10 s. (On a busy machine at most 15 s: each frame concealed in a stall deepens
        // the queue by a frame, which the moves then take back.)
        var lastMove = (count: before.playoutAdvances, at: monotonicNanoseconds())
        await eventually(15, poll: 0.1) {
            guard let r = listener.mediaReport else { return false }
            if r.playoutAdvances != lastMove.count { lastMove = (r.playoutAdvances, monotonicNanoseconds()) }
            return monotonicNanoseconds() - lastMove.at > 3_500_000_000
        }
        let report = try XCTUnwrap(listener.mediaReport)
        await speaker.leave()
        await listener.leave()
        XCTAssertGreaterThanOrEqual(report.playoutAdvancedMs, 10, "playout moved earlier: \(report)")
        XCTAssertLessThanOrEqual(report.playoutAdvancedMs, report.playoutAdvances * 5, "never more than a quarter frame at once")
        // A packet that came as early as ever and missed its frame once the moves had begun
        // would be their doing; one held up on its way (a thread of this busy process stalled:
        // the speaker's, the relay's) is not — without the moves it may have made its frame, but
        // so it may with any margin smaller than the stall.
        XCTAssertLessThanOrEqual(misses(report), misses(before), "no packet made late by the moves: \(before) then \(report)")
        XCTAssertGreaterThan(report.played, 100)
    }
}
