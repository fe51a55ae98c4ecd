import CallRoomTestSupport
import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
@testable import CometChatCallsSDK
import Foundation
import Synchronization
import XCTest

/// A capture device that fails mid-call, as an unplugged USB headset makes ALSA fail. (A real
/// unplug cannot happen on this machine; this stand-in throws the same error ALSA reports.)
final class UnpluggedInput: AudioInput, @unchecked Sendable {
    let name = "alsa:usb-headset"
    private let tone = ToneInput(frequency: 440, frameSamples: 960)
    private var frames = 0
    func read(_ frame: UnsafeMutableBufferPointer<Int16>) throws(AudioError) {
        frames += 1
        if frames > 10 { throw .deviceFailed(name: "usb-headset", reason: "No such device") }
        try tone.read(frame)
    }
    func close() { tone.close() }
}

final class DeviceLossTests: XCTestCase {
    func testLostCaptureDeviceFallsBackAndComesBack() throws {
        let notices = Mutex<[String]>([])
        let attempts = Atomic<Int>(0)
        var o = MediaEngine.Options()
        o.retrySeconds = 0.2
        o.reopenInput = {
            // Still unplugged on the first retry, back on the second.
            if attempts.wrappingAdd(1, ordering: .relaxed).oldValue == 0 { throw AudioError.deviceUnavailable(name: "usb-headset", reason: "No such device") }
            return ToneInput(frequency: 440, frameSamples: 960)
        }
        o.onNotice = { n in notices.withLock { $0.append(n) } }
        let engine = try MediaEngine(input: UnpluggedInput(), output: nil, options: o)
        let relay = try FakeRelay(ackAfter: 0)  // (audio goes out once a relay has bound us)
        defer { relay.stop() }
        try engine.start(relay: relay.socket.localAddress, ssrc: 1, bindToken: [UInt8](repeating: 0, count: 16),
                         keys: [WireMediaKey(ssrc: 1, epoch: 0, key: Base64URL.encode([UInt8](repeating: 7, count: 28)))])
        defer { engine.stop() }
        eventually(5, poll: 0.05) { notices.withLock({ $0.count }) >= 2 }
        let seen = notices.withLock { $0 }
        XCTAssertEqual(seen.count, 2, "\(seen)")
        XCTAssertTrue(seen.first?.contains("capture device alsa:usb-headset lost") == true, "\(seen)")
        XCTAssertTrue(seen.last?.contains("is back") == true, "\(seen)")
        XCTAssertEqual(engine.deviceFailureCount, 1)
        XCTAssertGreaterThanOrEqual(attempts.load(ordering: .relaxed), 2)
        // The call never stopped sending: frames kept flowing through the outage.
        let sent = engine.statistics.packetsSent
        XCTAssertTrue(eventually(3) { engine.statistics.packetsSent > sent + 5 }, "frames kept flowing")
    }
}

/// Records the size of every write (a stand-in device: it paces like one).
final class ChunkRecorder: AudioOutput, @unchecked Sendable {
    let name = "chunks"
    private var pacer = Pacer(periodNanoseconds: 5_000_000)
    let sizes = Mutex<[Int]>([])
    func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {
        sizes.withLock { $0.append(frame.count) }
        pacer.wait(samples: frame.count)
    }
    func close() {}
}

final class PlaybackPeriodTests: XCTestCase {
    /// Short periods do not mean more wake-ups: a frame is mixed when the device's queue is down
    /// to one period and written whole (the period is the device's, `ALSADevice`).
    func testPlaybackWritesWholeFramesOncePerFrameWhateverThePeriod() throws {
        let out = ChunkRecorder()
        var o = MediaEngine.Options()
        o.playbackPeriodMs = 5
        let engine = try MediaEngine(input: NullInput(frameSamples: 960), output: out, options: o)
        let sink = try UDPSocket(host: "127.0.0.1", port: 0)
        try engine.start(relay: sink.localAddress, ssrc: 1, bindToken: [UInt8](repeating: 0, count: 16),
                         keys: [WireMediaKey(ssrc: 1, epoch: 0, key: Base64URL.encode([UInt8](repeating: 7, count: 28)))])
        Thread.sleep(forTimeInterval: 0.3)
        engine.stop()
        let sizes = out.sizes.withLock { $0 }
        XCTAssertTrue((10...17).contains(sizes.count), "about 15 writes of a frame in 0.3 s (got \(sizes.count))")
        XCTAssertTrue(sizes.allSatisfy { $0 == 960 }, "whole 20 ms frames: \(Set(sizes))")
    }
}

final class PlayoutPhaseTests: XCTestCase {
    func testMovesTheBoundaryByWhatEveryPacketWaitedBeyondTheMargin() {
        // 20 ms frames: at most 5 ms a decision, 4 ms kept by every packet.
        var p = PlayoutPhase(maxStepNanoseconds: 5_000_000)
        // 74 frames are not enough evidence; the 75th decides, on the shortest wait of them all.
        for _ in 0..<74 { XCTAssertEqual(p.advance(waited: 12_000_000), 0) }
        XCTAssertEqual(p.advance(waited: 6_700_000), 2_000_000, "the shortest waited 6.7 ms: 2.7 beyond the margin, whole ms: 2")
        for _ in 0..<74 { XCTAssertEqual(p.advance(waited: 12_000_000), 0) }
        XCTAssertEqual(p.advance(waited: 11_000_000), 5_000_000, "7 ms beyond the margin: the step's cap, 5")
        for _ in 0..<74 { XCTAssertEqual(p.advance(waited: 12_000_000), 0) }
        XCTAssertEqual(p.advance(waited: 4_900_000), 0, "under a millisecond beyond the margin: stay")
        let quiet = [Int16](repeating: 100, count: 960), click = [Int16](repeating: 0, count: 959) + [2000]
        XCTAssertTrue(quiet.withUnsafeBufferPointer { PlayoutPhase.isQuiet($0) })
        XCTAssertFalse(click.withUnsafeBufferPointer { PlayoutPhase.isQuiet($0) }, "one loud sample is not silence")
        // One packet that barely made it keeps the boundary where it is.
        for _ in 0..<74 { XCTAssertEqual(p.advance(waited: 12_000_000), 0) }
        XCTAssertEqual(p.advance(waited: 2_000_000), 0)
        // No packet played (silence) restarts the evidence.
        for _ in 0..<60 { _ = p.advance(waited: 12_000_000) }
        XCTAssertEqual(p.advance(waited: nil), 0)
        for _ in 0..<74 { XCTAssertEqual(p.advance(waited: 12_000_000), 0) }
        XCTAssertEqual(p.advance(waited: 12_000_000), 5_000_000)
    }
}

/// A device that cannot keep up with 5 ms periods: from 1.2 s after opening, every write is an
/// under-run (as ALSA reports them: a count). It records its write sizes like `ChunkRecorder`.
final class UnderrunningOutput: AudioOutput, UnderrunCounting, @unchecked Sendable {
    let name: String
    let periodSamples: Int
    private var pacer = Pacer(periodNanoseconds: 5_000_000)
    private let opened = monotonicNanoseconds()
    private let count = Atomic<Int>(0)
    let sizes = Mutex<[Int]>([])
    init(name: String, periodMs: Int) { self.name = name; periodSamples = AudioFormat.samples(ms: periodMs) }
    var xruns: Int { count.load(ordering: .relaxed) }
    func write(_ frame: UnsafeBufferPointer<Int16>) throws(AudioError) {
        sizes.withLock { $0.append(frame.count) }
        if periodSamples < 480, monotonicNanoseconds() - opened > 1_200_000_000 { count.add(1, ordering: .relaxed) }
        pacer.wait(samples: frame.count)
    }
    func close() {}
}

final class AutomaticPlaybackPeriodTests: XCTestCase {
    /// The default period: 5 ms; a device that under-runs at 5 ms is reopened at 10 ms, says so,
    /// and is then written whole frames as before (the period is the device's queue, not the write).
    func testTheEngineBacksOffFromAPeriodTheDeviceCannotKeep() throws {
        let notices = Mutex<[String]>([])
        let reopened = Mutex<[UnderrunningOutput]>([])
        var o = MediaEngine.Options()
        XCTAssertNil(o.playbackPeriodMs, "automatic by default")
        o.reopenOutput = { ms in
            let out = UnderrunningOutput(name: "alsa:slow", periodMs: ms)
            reopened.withLock { $0.append(out) }
            return out
        }
        o.onNotice = { n in notices.withLock { $0.append(n) } }
        let first = UnderrunningOutput(name: "alsa:slow", periodMs: 5)
        let engine = try MediaEngine(input: NullInput(frameSamples: 960), output: first, options: o)
        let sink = try UDPSocket(host: "127.0.0.1", port: 0)
        try engine.start(relay: sink.localAddress, ssrc: 1, bindToken: [UInt8](repeating: 0, count: 16),
                         keys: [WireMediaKey(ssrc: 1, epoch: 0, key: Base64URL.encode([UInt8](repeating: 7, count: 28)))])
        defer { engine.stop() }
        XCTAssertTrue(eventually(2) { first.sizes.withLock { $0.count } >= 5 }, "playing")
        XCTAssertEqual(engine.playbackPeriodMs.load(ordering: .relaxed), 5, "it starts at the smallest period")
        XCTAssertTrue(first.sizes.withLock { $0 }.allSatisfy { $0 == 960 }, "whole frames, whatever the period")
        eventually(6, poll: 0.05) { !reopened.withLock({ $0.isEmpty }) }
        let second = try XCTUnwrap(reopened.withLock { $0.first }, "reopened after repeated under-runs")
        XCTAssertEqual(second.periodSamples, 480, "at 10 ms")
        XCTAssertEqual(engine.playbackPeriodMs.load(ordering: .relaxed), 10)
        XCTAssertTrue(notices.withLock { $0 }.contains { $0.contains("playback period raised to 10 ms") }, "\(notices.withLock { $0 })")
        XCTAssertTrue(eventually(2) { second.sizes.withLock { $0.count } > 10 }, "playing on the reopened device")
        let sizes = second.sizes.withLock { $0 }
        XCTAssertTrue(sizes.allSatisfy { $0 == 960 }, "whole frames to the reopened device: \(Set(sizes))")
        XCTAssertEqual(reopened.withLock { $0.count }, 1, "it keeps up at 10 ms: no further move")
    }
}
