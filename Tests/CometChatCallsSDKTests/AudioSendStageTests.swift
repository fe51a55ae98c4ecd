import CallsAudio
import CallsCore
import CallsSecurity
@testable import CometChatCallsSDK
import XCTest

/// The audio send path's stages in-process, against a fake transport (a list of packets): no
/// server, no socket, no sleep. What a receiver must be able to rely on is checked on the bytes.
final class AudioSendStageTests: XCTestCase {
    let frameSamples = 960

    /// `frames` frames of a 440 Hz tone through the stage (and SRTP, as the engine does),
    /// `distance` frames repeated; the packets as the transport got them.
    func run(frames: Int, distance: (Int) -> Int = { _ in 0 }, restartAt: Int? = nil,
             skip: Set<Int> = [], stage: AudioSendStage) throws -> [[UInt8]] {
        let tone = ToneInput(frequency: 440, frameSamples: frameSamples)
        let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frameSamples)
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 8)
        defer { pcm.deallocate(); packet.deallocate() }
        var sent: [[UInt8]] = []
        for i in 0..<frames {
            try tone.read(pcm)
            stage.tune(expectedLossPercent: 5, distance: distance(i))
            stage.advance()
            if skip.contains(i) { continue }  // muted: the clock moves, nothing goes
            if i == restartAt { stage.restart() }
            guard let made = stage.packetize(UnsafeBufferPointer(pcm), level: .init(level: 20, voiceActivity: true), ssrc: 0xABCD,
                                             distance: distance(i), into: packet) else { continue }
            sent.append(Array(packet[0..<made.length]))
            stage.sent()
        }
        return sent
    }

    func stage(sequence: UInt16 = 65_530, timestamp: UInt32 = 1000) throws -> AudioSendStage {
        AudioSendStage(encoder: try OpusEncoder(frameMs: 20, bitrate: 32_000), baseBitrate: 32_000, frameSamples: frameSamples,
                       sequence: sequence, timestamp: timestamp)
    }

    func testEachFrameIsOneOpusPacketWithTheLevelInOrderAcrossTheWrap() throws {
        let packets = try run(frames: 12, stage: try stage())
        XCTAssertEqual(packets.count, 12)
        let parsed = try packets.map { try RTPPacket(parsing: $0) }
        XCTAssertEqual(parsed.map(\.sequenceNumber), (0..<12).map { UInt16(truncatingIfNeeded: 65_530 + $0) }, "consecutive, wrapping")
        XCTAssertEqual(parsed.map(\.timestamp), (1...12).map { UInt32(1000 + 960 * $0) }, "960 a frame")
        XCTAssertTrue(parsed.allSatisfy { $0.payloadType == RTPPacket.opusPayloadType && $0.ssrc == 0xABCD && !$0.marker })
        XCTAssertTrue(parsed.allSatisfy { $0.audioLevel == .init(level: 20, voiceActivity: true) })
        let decoder = try OpusDecoder()
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frameSamples)
        defer { out.deallocate() }
        for p in parsed { XCTAssertEqual(p.payload.withUnsafeBufferPointer { decoder.decode($0, into: out) }, frameSamples) }
    }

    func testAMutedStretchKeepsTheClockAndTheSequenceGoesOn() throws {
        let parsed = try run(frames: 6, skip: [2, 3], stage: try stage(sequence: 10)).map { try RTPPacket(parsing: $0) }
        XCTAssertEqual(parsed.map(\.sequenceNumber), [10, 11, 12, 13], "no gap in sequence: nothing was lost")
        XCTAssertEqual(parsed.map(\.timestamp), [1960, 2920, 5800, 6760], "the timestamp jumps over the silence")
    }

    func testRedundancyRepeatsThePreviousFramesAndStopsAtAGapOrARestart() throws {
        // Plain for 3 frames, then two repeated: the 4th carries frames 2 and 3 before its own.
        let packets = try run(frames: 8, distance: { $0 >= 3 ? 2 : 0 }, restartAt: 6, stage: try stage())
        let parsed = try packets.map { try RTPPacket(parsing: $0) }
        XCTAssertEqual(parsed.map(\.payloadType), [111, 111, 111, 63, 63, 63, 111, 63],
                       "RED from the 4th; after a restart the history is empty (one plain packet), then RED again")
        let red = parsed[3]
        let layout = try XCTUnwrap(red.payload.withUnsafeBytes { RedundantAudio.Layout(parsing: $0) })
        XCTAssertEqual(layout.count, 2)
        XCTAssertEqual(layout.primaryPayloadType, RTPPacket.opusPayloadType)
        XCTAssertEqual(layout.sequenceNumber(ofBlock: 0, inPacket: red.sequenceNumber), parsed[1].sequenceNumber)
        XCTAssertEqual(layout[0].timestampOffset, red.timestamp &- parsed[1].timestamp)
        XCTAssertEqual(Array(red.payload[layout[1].range]), parsed[2].payload, "the block is the earlier packet's Opus, byte for byte")
        XCTAssertEqual(Array(red.payload[layout.primary]).count > 0, true)
    }

    func testThePacketProtectsAndOpensWithTheSendersKey() throws {
        let key = SRTPKey(epoch: 3, material: Crypto.randomBytes(28))
        let sender = try SRTPSender(ssrc: 0xABCD, key: key)
        let receiver = try SRTPReceiver()
        try receiver.setKey(key, for: 0xABCD)
        for rtp in try run(frames: 3, stage: try stage()) {
            var b = rtp + [UInt8](repeating: 0, count: 17)
            let n = try b.withUnsafeMutableBytes { raw throws(SRTPError) in try sender.protect(raw, length: rtp.count) }
            XCTAssertEqual(n, rtp.count + 17)
            XCTAssertEqual(b[n - 1], 3, "the MKI is the epoch, last")
            let opened = try b.withUnsafeMutableBytes { raw throws(SRTPError) in try receiver.unprotect(raw, length: n) }
            XCTAssertEqual(Array(b[0..<opened]), rtp)
        }
    }

    func testTheBindingWatchBindsUntilAcknowledgedThenKeepsAliveAndReportsABlockedPathOnce() {
        var w = BindingWatch(frameMs: 20, blockedAfterMs: 2500)
        let start: UInt64 = 1_000_000_000
        var binds = 0, blocked = 0
        // 3 s unbound: a bind every 10 frames (200 ms), blocked said once after 2.5 s.
        for f in 1...150 {
            let due = w.frame(bound: false, bindingSince: start, now: start + UInt64(f) * 20_000_000)
            binds += due.bind ? 1 : 0
            blocked += due.blocked ? 1 : 0
            if due.blocked { XCTAssertGreaterThan(f * 20, 2500) ; XCTAssertLessThanOrEqual(f * 20, 2520) }
        }
        XCTAssertEqual(binds, 15)
        XCTAssertEqual(blocked, 1)
        // Bound: every 5 s (250 frames), and never blocked.
        binds = 0
        for f in 151...(150 + 500) {
            let due = w.frame(bound: true, bindingSince: start, now: start + UInt64(f) * 20_000_000)
            binds += due.bind ? 1 : 0
            XCTAssertFalse(due.blocked)
        }
        XCTAssertEqual(binds, 2)
        // A new binding (a rejoin's relay) is judged on its own.
        let again = start + 20_000_000_000
        var reported = false
        for f in 1...200 where w.frame(bound: false, bindingSince: again, now: again + UInt64(f) * 20_000_000).blocked { reported = true }
        XCTAssertTrue(reported)
    }
}
