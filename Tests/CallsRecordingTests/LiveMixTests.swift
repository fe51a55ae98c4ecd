import CallRoomTestSupport
import CallsAudio
@testable import CallsRecording
import Foundation
import XCTest

/// The stream's live mix on a virtual clock: packets are placed by their RTP clock whatever
/// order and batching they arrive in, speakers are summed, a packet later than the mix delay is
/// dropped rather than shifting the timeline.
final class LiveMixTests: XCTestCase {
    func tonePackets(_ hz: Double, frames: Int, encoder: OpusEncoder) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var pcm = [Int16](repeating: 0, count: 960), packet = [UInt8](repeating: 0, count: 1500)
        for f in 0..<frames {
            for i in 0..<960 { pcm[i] = Int16(9000 * sin(2 * .pi * hz * Double(f * 960 + i) / 48_000)) }
            let n = try pcm.withUnsafeBufferPointer { p in try packet.withUnsafeMutableBufferPointer { try encoder.encode(p, into: $0) } }
            out.append(Array(packet[0..<n]))
        }
        return out
    }

    func testPacketsArePlacedByTheirClockAndSpeakersSummed() throws {
        let a = try tonePackets(440, frames: 100, encoder: OpusEncoder(frameMs: 20, bitrate: 32_000))
        let b = try tonePackets(1000, frames: 100, encoder: OpusEncoder(frameMs: 20, bitrate: 32_000))
        let mix = LiveMix(delayMs: 200)
        var out: [Int16] = []
        // A's packets come in batches of three, each batch reversed; B's one by one, 10 ms late.
        var t: Int64 = 1000
        for i in stride(from: 0, to: 100, by: 3) {
            for k in (i..<min(i + 3, 100)).reversed() {
                a[k].withUnsafeBufferPointer { mix.packet(ssrc: 1, timestamp: UInt32(5000 + k * 960), payload: $0, atMs: t + 40) }
            }
            for k in i..<min(i + 3, 100) {
                b[k].withUnsafeBufferPointer { mix.packet(ssrc: 2, timestamp: UInt32(7_000_000 + k * 960), payload: $0, atMs: t + Int64(k - i) * 20 + 10) }
            }
            t += 60
            mix.render(untilMs: t) { out.append(contentsOf: $0) }
        }
        mix.render(untilMs: t + 400) { out.append(contentsOf: $0) }
        XCTAssertEqual(mix.late, 0)
        XCTAssertGreaterThan(out.count, 48_000 * 18 / 10, "about the 2 s that were said")
        // Past the codec's start, every window holds both tones (no gaps from the reordering).
        let windows = SignalAnalysis.windows(Array(out.dropFirst(9600)), size: 4800).dropLast(2)
        XCTAssertFalse(windows.isEmpty)
        for (i, w) in windows.enumerated() {
            XCTAssertGreaterThan(SignalAnalysis.toneDominanceDB(w, frequency: 440, others: [700]), 15, "440 Hz in window \(i)")
            XCTAssertGreaterThan(SignalAnalysis.toneDominanceDB(w, frequency: 1000, others: [700]), 15, "1000 Hz in window \(i)")
        }
    }

    func testAPacketLaterThanTheDelayIsDroppedNotShifted() throws {
        let a = try tonePackets(440, frames: 20, encoder: OpusEncoder(frameMs: 20, bitrate: 32_000))
        let mix = LiveMix(delayMs: 100)
        var out: [Int16] = []
        for k in 0..<10 {
            a[k].withUnsafeBufferPointer { mix.packet(ssrc: 1, timestamp: UInt32(k * 960), payload: $0, atMs: Int64(k) * 20) }
        }
        mix.render(untilMs: 400) { out.append(contentsOf: $0) }
        let rendered = out.count
        // Frame 2 again, 300 ms after its time: its place is gone.
        a[2].withUnsafeBufferPointer { mix.packet(ssrc: 1, timestamp: UInt32(2 * 960), payload: $0, atMs: 400) }
        XCTAssertEqual(mix.late, 1)
        mix.render(untilMs: 400) { out.append(contentsOf: $0) }
        XCTAssertEqual(out.count, rendered, "nothing re-rendered")
        XCTAssertEqual(rendered % 960, 0)
    }

    func testAFrameLandsWhereItsTimestampSaysNotWhenItArrived() throws {
        let enc = try OpusEncoder(frameMs: 20, bitrate: 32_000)
        let tone = try tonePackets(440, frames: 40, encoder: enc)
        let quiet = try tonePackets(0, frames: 40, encoder: try OpusEncoder(frameMs: 20, bitrate: 32_000))
        let mix = LiveMix(delayMs: 200)
        var out: [Int16] = []
        // Only frames 30…32 are loud; frames come in reversed batches of five with 0–40 ms of jitter.
        var t: Int64 = 0
        var jitter = SeededJitter(seed: 7)
        for i in stride(from: 0, to: 40, by: 5) {
            for k in (i..<i + 5).reversed() {
                let p = (30...32).contains(k) ? tone[k] : quiet[k]
                p.withUnsafeBufferPointer { mix.packet(ssrc: 9, timestamp: UInt32(k * 960), payload: $0, atMs: t + jitter.next(40)) }
            }
            t += 100
            mix.render(untilMs: t) { out.append(contentsOf: $0) }
        }
        mix.render(untilMs: t + 300) { out.append(contentsOf: $0) }
        // The first packet handled was frame 4 (its batch reversed): frame k starts at delay + (k − 4) frames.
        let loud = out.indices.first { abs(Int(out[$0])) > 3000 } ?? -1
        let expected = 200 * 48 + (30 - 4) * 960
        XCTAssertEqual(Double(loud), Double(expected), accuracy: 960 + 48 * 40, "the loud frame at \(loud), its timestamp says \(expected)")
    }
}

/// Deterministic jitter for the tests (a linear congruential generator).
struct SeededJitter {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ maxMs: Int64) -> Int64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int64((state >> 33) % UInt64(maxMs + 1))
    }
}
