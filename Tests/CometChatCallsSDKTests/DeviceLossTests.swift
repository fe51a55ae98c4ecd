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
        let sink = try UDPSocket(host: "127.0.0.1", port: 0)
        try engine.start(relay: sink.localAddress, ssrc: 1, bindToken: [UInt8](repeating: 0, count: 16),
                         keys: [WireMediaKey(ssrc: 1, epoch: 0, key: Base64URL.encode([UInt8](repeating: 7, count: 28)))])
        defer { engine.stop() }
        let deadline = Date().addingTimeInterval(5)
        while notices.withLock({ $0.count }) < 2 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let seen = notices.withLock { $0 }
        XCTAssertEqual(seen.count, 2, "\(seen)")
        XCTAssertTrue(seen.first?.contains("capture device alsa:usb-headset lost") == true, "\(seen)")
        XCTAssertTrue(seen.last?.contains("is back") == true, "\(seen)")
        XCTAssertEqual(engine.deviceFailureCount, 1)
        XCTAssertGreaterThanOrEqual(attempts.load(ordering: .relaxed), 2)
        // The call never stopped sending: frames kept flowing through the outage.
        let sent = engine.statistics.packetsSent
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertGreaterThan(engine.statistics.packetsSent, sent + 5)
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
    func testPlaybackWritesOneDevicePeriodAtATime() throws {
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
        XCTAssertGreaterThan(sizes.count, 40, "about 60 writes of 5 ms in 0.3 s (got \(sizes.count))")
        XCTAssertTrue(sizes.allSatisfy { $0 == 240 }, "5 ms chunks of a 20 ms frame")
    }
}

final class PlayoutPhaseTests: XCTestCase {
    func testAdvancesOnlyWhenEveryPacketWaitedMoreThanAPeriod() {
        var p = PlayoutPhase(periodNanoseconds: 5_000_000)
        // 24 frames are not enough evidence; the 25th decides.
        for _ in 0..<24 { XCTAssertFalse(p.shouldAdvance(waited: 12_000_000)) }
        XCTAssertTrue(p.shouldAdvance(waited: 9_000_000), "all waited > 6 ms: move a period earlier")
        // One packet that barely made it keeps the boundary where it is.
        for _ in 0..<24 { XCTAssertFalse(p.shouldAdvance(waited: 12_000_000)) }
        XCTAssertFalse(p.shouldAdvance(waited: 2_000_000))
        // No packet played (silence) resets the evidence.
        for _ in 0..<20 { _ = p.shouldAdvance(waited: 12_000_000) }
        XCTAssertFalse(p.shouldAdvance(waited: nil))
        for _ in 0..<24 { XCTAssertFalse(p.shouldAdvance(waited: 12_000_000)) }
        XCTAssertTrue(p.shouldAdvance(waited: 12_000_000))
    }
}
