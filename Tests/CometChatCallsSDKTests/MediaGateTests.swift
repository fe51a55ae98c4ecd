import CallRoomTestSupport
import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
@testable import CometChatCallsSDK
import Foundation
import Synchronization
import XCTest

/// Audio goes out only once the relay has acknowledged our bind. Before that the relay drops
/// what it cannot place, so on a real network the first round trip of every sender was lost
/// and the listeners' decoders started on a stream already under way (SILK plays such a start
/// at about half its level for ~130 ms: the first words of someone who talks as they join).
/// Real UDP sockets on loopback stand in for the relays; the delays stand in for round trips.
final class MediaGateTests: XCTestCase {
    func key(_ ssrc: UInt32) -> WireMediaKey { WireMediaKey(ssrc: ssrc, epoch: 0, key: Base64URL.encode([UInt8](repeating: 7, count: 28))) }
    func token(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 16) }

    func engine() throws -> MediaEngine {
        try MediaEngine(input: ToneInput(frequency: 440, frameSamples: 960), output: nil, options: MediaEngine.Options())
    }

    func wait(until condition: () -> Bool, seconds: Double = 3) {
        eventually(seconds) { condition() }
    }

    func testNothingIsSentBeforeTheRelayAcknowledgesAndEverythingAfter() throws {
        let relay = try FakeRelay(ackAfter: 0.25)
        defer { relay.stop() }
        let e = try engine()
        try e.start(relay: relay.socket.localAddress, ssrc: 1, bindToken: token(1), keys: [key(1)])
        defer { e.stop() }
        // The relay acknowledges after 0.25 s: until then binds go out, audio does not.
        XCTAssertTrue(holds(for: 0.2) { e.statistics.packetsSent == 0 }, "no audio before the acknowledgement")
        XCTAssertGreaterThanOrEqual(relay.binds.load(ordering: .relaxed), 1, "the bind went out at once")
        wait(until: { e.statistics.bound })
        wait(until: { relay.mediaAfterAck.load(ordering: .relaxed) >= 15 })
        XCTAssertEqual(relay.mediaBeforeAck.load(ordering: .relaxed), 0, "nothing the relay would have dropped")
        let after = relay.mediaAfterAck.load(ordering: .relaxed)
        XCTAssertGreaterThanOrEqual(after, 15, "frames flow once acknowledged")
        XCTAssertTrue(eventually(1) { e.statistics.packetsSent <= relay.mediaAfterAck.load(ordering: .relaxed) + 1 },
                      "every frame sent reached the relay after its acknowledgement")
    }

    func testAMoveToAnotherRelayWaitsForItsAcknowledgementButARebindDoesNot() throws {
        let first = try FakeRelay(ackAfter: 0), second = try FakeRelay(ackAfter: 0.3)
        defer { first.stop(); second.stop() }
        let e = try engine()
        try e.start(relay: first.socket.localAddress, ssrc: 1, bindToken: token(1), keys: [key(1)])
        defer { e.stop() }
        wait(until: { first.mediaAfterAck.load(ordering: .relaxed) >= 5 })

        // A rebind (signalling resumed) while the relay does not answer: the old binding still
        // forwards, so audio keeps going.
        first.acking.store(false, ordering: .releasing)
        e.rebind(token: token(9))
        let before = first.mediaAfterAck.load(ordering: .relaxed)
        XCTAssertTrue(eventually(2) { first.mediaAfterAck.load(ordering: .relaxed) - before >= 10 }, "audio kept flowing through a rebind")
        XCTAssertFalse(e.statistics.bound)

        // A rejoin on another relay: nothing until that relay acknowledges, then audio again.
        try e.retarget(relay: second.socket.localAddress, ssrc: 2, bindToken: token(2), keys: [key(2)])
        let sentAtMove = e.statistics.packetsSent
        // (A frame already on its way when the move began may still be counted: one, no more.)
        XCTAssertTrue(holds(for: 0.2) { e.statistics.packetsSent <= sentAtMove + 1 }, "silent while the new relay has not acknowledged")
        wait(until: { second.mediaAfterAck.load(ordering: .relaxed) >= 10 })
        XCTAssertEqual(second.mediaBeforeAck.load(ordering: .relaxed), 0)
        XCTAssertGreaterThanOrEqual(second.mediaAfterAck.load(ordering: .relaxed), 10)
    }

    func testTheSignallingTunnelCarriesAudioWithoutAnyAcknowledgement() throws {
        let silent = try FakeRelay(ackAfter: nil)
        defer { silent.stop() }
        let e = try engine()
        let tunnelled = Atomic<Int>(0)
        try e.start(relay: silent.socket.localAddress, ssrc: 1, bindToken: token(1), keys: [key(1)])
        defer { e.stop() }
        XCTAssertTrue(holds(for: 0.2) { e.statistics.packetsSent == 0 }, "a relay that never answers gets no audio")
        e.setTunnel { _ in tunnelled.add(1, ordering: .relaxed) }
        wait(until: { tunnelled.load(ordering: .relaxed) >= 10 })
        XCTAssertGreaterThanOrEqual(tunnelled.load(ordering: .relaxed), 10, "UDP blocked: audio goes over signalling")
        XCTAssertEqual(silent.mediaBeforeAck.load(ordering: .relaxed), 0)
    }

    /// The transport is one seam: the tunnel takes every packet while it is set (a move to
    /// another relay meanwhile included), and clearing it sends to the relay of now — over UDP,
    /// once that relay acknowledges.
    func testTheTunnelTakesOverAndHandsBackToTheCurrentRelay() throws {
        let first = try FakeRelay(ackAfter: 0), second = try FakeRelay(ackAfter: 0)
        defer { first.stop(); second.stop() }
        let e = try engine()
        try e.start(relay: first.socket.localAddress, ssrc: 1, bindToken: token(1), keys: [key(1)])
        defer { e.stop() }
        wait(until: { first.mediaAfterAck.load(ordering: .relaxed) >= 5 })
        let tunnelled = Atomic<Int>(0)
        e.setTunnel { _ in tunnelled.add(1, ordering: .relaxed) }
        XCTAssertTrue(e.isTunnelled)
        wait(until: { tunnelled.load(ordering: .relaxed) >= 5 })
        let atFirst = first.mediaAfterAck.load(ordering: .relaxed)
        try e.retarget(relay: second.socket.localAddress, ssrc: 2, bindToken: token(2), keys: [key(2)])
        let before = tunnelled.load(ordering: .relaxed)
        wait(until: { tunnelled.load(ordering: .relaxed) >= before + 5 })
        XCTAssertLessThanOrEqual(first.mediaAfterAck.load(ordering: .relaxed), atFirst + 1, "nothing more over UDP while tunnelled")
        XCTAssertEqual(second.mediaAfterAck.load(ordering: .relaxed) + second.mediaBeforeAck.load(ordering: .relaxed), 0,
                       "a move while tunnelled stays in the tunnel")
        e.setTunnel(nil)
        XCTAssertFalse(e.isTunnelled)
        wait(until: { second.mediaAfterAck.load(ordering: .relaxed) >= 5 })
        XCTAssertEqual(second.mediaBeforeAck.load(ordering: .relaxed), 0, "back on UDP, to the relay of now, after its acknowledgement")
        let settled = tunnelled.load(ordering: .relaxed)
        XCTAssertTrue(holds(for: 0.2) { tunnelled.load(ordering: .relaxed) == settled }, "the tunnel gets nothing more")
    }
}

