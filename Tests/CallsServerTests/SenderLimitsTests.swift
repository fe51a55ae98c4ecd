import CallRoomTestSupport
import CallsCore
@testable import CallsServer
import CallsTransport
import Foundation
import XCTest
@testable import CallsRelay

/// Per-sender media limits at the relay (#34): one member cannot make the relay flood the room.
final class SenderLimitsTests: XCTestCase {
    /// The buckets alone, on a virtual clock.
    func testTheBudgetAllowsABurstThenTheRateAndKeepsAudioAndVideoApart() {
        var limits = SenderLimits()
        limits.audioPacketsPerSecond = 50
        limits.audioBytesPerSecond = 10_000
        limits.videoPacketsPerSecond = 100
        limits.videoBytesPerSecond = 0
        let t0: UInt64 = 5_000_000_000
        var b = SenderBudget(limits, now: t0)
        var passed = 0
        for _ in 0..<200 where b.admit(.audio, bytes: 100, now: t0) { passed += 1 }
        XCTAssertEqual(passed, 50, "a second's worth of packets at once, then nothing")
        XCTAssertTrue(b.admit(.video, bytes: 100_000, now: t0), "video has its own budget (bytes unlimited)")
        XCTAssertFalse(b.admit(.audio, bytes: 100, now: t0 + 10_000_000), "10 ms refill half a packet")
        XCTAssertTrue(b.admit(.audio, bytes: 100, now: t0 + 20_000_000), "20 ms: one packet")
        // Bytes bind too: 10,000 a second; a 6,000-byte packet, then another within the second is refused.
        var c = SenderBudget(limits, now: t0)
        XCTAssertTrue(c.admit(.audio, bytes: 6_000, now: t0))
        XCTAssertFalse(c.admit(.audio, bytes: 6_000, now: t0 + 100_000_000))
        XCTAssertTrue(c.admit(.audio, bytes: 6_000, now: t0 + 300_000_000), "refilled meanwhile: the refused one took nothing")
        // A long silence refills at most one second's worth.
        var d = SenderBudget(limits, now: t0)
        for _ in 0..<50 { _ = d.admit(.audio, bytes: 10, now: t0) }
        var after = 0
        for _ in 0..<200 where d.admit(.audio, bytes: 10, now: t0 + 60_000_000_000) { after += 1 }
        XCTAssertEqual(after, 50)
        var unlimited = SenderBudget(.unlimited, now: t0)
        XCTAssertTrue((0..<10_000).allSatisfy { _ in unlimited.admit(.audio, bytes: 1500, now: t0) })
    }

    /// Media over signalling is held to the same budget (the tunnel path, one clock reading).
    func testTunnelledMediaHasTheSameBudget() {
        var limits = SenderLimits()
        limits.audioPacketsPerSecond = 40
        let shared = RelayShared(workers: 1, maxDelayNanoseconds: 0, senderLimits: limits)
        var a = RelayTable.Member(key: 1, room: 1, ssrc: 0xA, tunnel: 7)
        a.videoSSRC = 0xB
        shared.apply(RelayPatch(room: 1, members: [a, RelayTable.Member(key: 2, room: 1, ssrc: 0xC, tunnel: 8)]))
        var delivered = 0
        shared.tunnelSink.withLock { $0 = { _, _ in } }
        let packet = RTPPacket(sequenceNumber: 1, timestamp: 1, ssrc: 0xA, payload: [1, 2, 3]).encoded()
        for _ in 0..<1000 where shared.receiveTunnelled(packet, from: 7, now: 1_000_000_000) { delivered += 1 }
        XCTAssertEqual(shared.counters.droppedRateLimited.load(ordering: .relaxed), 960)
        XCTAssertEqual(shared.counters.tunnelledOut.load(ordering: .relaxed), 40, "only the budget reached the room")
        _ = delivered
    }

    /// The attack: a member sends 5,000 packets a second. Before: every one went to every member.
    /// Now the relay forwards its budget and drops the rest (counted); the room hears the
    /// others normally. `fastPath`: the same in the kernel.
    func flood(fastPath: Bool) throws {
        let object = RelayFastPathTests.object
        let h = try ServerHarness {
            if fastPath { $0.relayFastPath = .on; $0.relayFastPathObject = object }
            $0.senderLimits.audioPacketsPerSecond = 250
        }
        defer { h.stop(); h.removeData() }
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let flooder = try h.joinAndBind("mallory", session: "flood")
        let talker = try h.joinAndBind("tess", session: "flood")
        let listener = try h.joinAndBind("lee", session: "flood")
        h.settleRelay()  // the fast path's maps hold the bindings
        let start = Date()
        var sent = 0, spoken = 0
        var seq: UInt16 = 0
        paced(every: 0.005, for: 1.0) { _ in
            for _ in 0..<25 {
                seq &+= 1
                flooder.socket.send(RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq), ssrc: flooder.ssrc, payload: Array(repeating: 0xEE, count: 100)).encoded(), to: relay)
                sent += 1
            }
            if sent % 100 == 0 {
                spoken += 1
                talker.socket.send(RTPPacket(sequenceNumber: UInt16(spoken), timestamp: UInt32(spoken) * 960, ssrc: talker.ssrc,
                                             payload: [1, 2, 3]).encoded(), to: relay)
            }
            return true
        }
        var fromFlooder = 0, fromTalker = 0
        while let d = listener.socket.receiveBytes(timeoutMs: 300) {
            let ssrc = d.withUnsafeBytes { RTPPacket.ssrc(inDatagram: $0) }
            if ssrc == flooder.ssrc { fromFlooder += 1 } else if ssrc == talker.ssrc { fromTalker += 1 }
        }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(sent, 3000, "the flood was a flood")
        XCTAssertLessThanOrEqual(fromFlooder, 250 + Int(250 * elapsed) + 5, "cut to its budget (\(sent) sent)")
        XCTAssertGreaterThanOrEqual(fromFlooder, 250, "its budget still goes through")
        XCTAssertEqual(fromTalker, spoken, "the others are heard normally")
        let counters = try XCTUnwrap(h.server.relayCounters)
        eventually(2, poll: 0.02) { counters.droppedRateLimited.load(ordering: .relaxed) >= UInt64(sent - fromFlooder) }
        XCTAssertEqual(counters.droppedRateLimited.load(ordering: .relaxed), UInt64(sent - fromFlooder), "every one dropped is counted")
        if fastPath { XCTAssertGreaterThan(counters.fastPathForwarded.load(ordering: .relaxed), 0, "the kernel forwarded") }
    }

    func testAFloodingMemberIsCutToItsBudgetOnTheSocketPath() throws { try flood(fastPath: false) }

    func testAFloodingMemberIsCutToItsBudgetInTheKernel() throws {
        try XCTSkipUnless(getuid() == 0, "the kernel fast path needs root")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: RelayFastPathTests.object), "run scripts/build-bpf.sh first")
        if let reason = RelayFastPathTests.unsupported() { throw XCTSkip(reason) }
        try flood(fastPath: true)
    }
}
