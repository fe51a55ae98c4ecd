import CallRoomTestSupport
import CallsCore
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// SRTP end to end through a real server: what the relay forwards without a key, what a
/// receiver refuses, and a key rotation when a member leaves.
final class MediaEncryptionTests: XCTestCase {
    func ssrc(of c: CallsClient, seenBy other: CallsClient) throws -> UInt32 {
        let pid = try XCTUnwrap(c.localParticipantID)
        return try XCTUnwrap(other.participants.first { $0.pid == pid }?.ssrc)
    }

    /// The attack: RTP forged from a participant's own address (so the relay, which checks the
    /// source and the SSRC, forwards it). Before SRTP the listener decoded whatever came; now
    /// every forged packet fails authentication and the real stream plays on.
    func testRTPSpoofedFromABoundAddressIsRefusedByEveryReceiver() async throws {
        try XCTSkipUnless(SpoofedUDP.isAvailable, "raw sockets need root: the spoofing attack cannot be reproduced here")
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let listener = try await t.joinedClient("lis", session: "spoof", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build())
        let speaker = try await t.joinedClient("spk", session: "spoof", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build())
        await eventually(5) { (listener.mediaStatistics?.packetsReceived ?? 0) > 20 }
        let victimSSRC = try ssrc(of: speaker, seenBy: listener)
        let port = try XCTUnwrap(speaker.mediaLocalPort)
        let before = try XCTUnwrap(listener.mediaStatistics)
        XCTAssertEqual(before.srtpRejected, 0, "the genuine stream verifies")
        XCTAssertGreaterThan(before.packetsReceived, 20)
        let forwardedBefore = t.server.relayCounters?.forwarded.load(ordering: .relaxed) ?? 0
        for i in 0..<50 {
            var packet = RTPPacket(sequenceNumber: UInt16(40_000 + i), timestamp: UInt32(i) * 960, ssrc: victimSSRC,
                                   audioLevel: .init(level: 0, voiceActivity: true), payload: [UInt8](repeating: 0xFC, count: 80)).encoded()
            packet += [UInt8](repeating: 0, count: 17)  // the size of a real MKI and tag
            try SpoofedUDP.send(packet, fromPort: port, toPort: UInt16(t.server.mediaPort))
        }
        await eventually(5) {
            (listener.mediaStatistics?.srtpRejected ?? 0) >= 50 && (listener.mediaStatistics?.packetsReceived ?? 0) - before.packetsReceived > 20
        }
        let after = try XCTUnwrap(listener.mediaStatistics)
        XCTAssertGreaterThan((t.server.relayCounters?.forwarded.load(ordering: .relaxed) ?? 0) - forwardedBefore, 50,
                             "the relay forwards them: it cannot tell (it holds no key)")
        XCTAssertEqual(after.srtpRejected, 50, "every forged packet is refused")
        XCTAssertGreaterThan(after.packetsReceived - before.packetsReceived, 20, "the real stream keeps playing")
        await speaker.leave()
        await listener.leave()
    }

    func testKeysRotateWhenAMemberLeavesAndTheCallCarriesOn() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let speaker = try await t.joinedClient("spk", session: "rotate", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build())
        let stayer = try await t.joinedClient("stay", session: "rotate", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build())
        let leaver = try await t.joinedClient("gone", session: "rotate", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build())
        await eventually(5) {
            guard let s = try? self.ssrc(of: speaker, seenBy: stayer) else { return false }
            return stayer.mediaKeyEpochs(of: s) == [0] && leaver.mediaKeyEpochs(of: s) == [0] && (stayer.mediaStatistics?.packetsReceived ?? 0) > 10
        }
        let s = try ssrc(of: speaker, seenBy: stayer)
        XCTAssertEqual(stayer.mediaKeyEpochs(of: s), [0])
        XCTAssertEqual(leaver.mediaKeyEpochs(of: s), [0])
        XCTAssertEqual(speaker.mediaKeyEpochs(of: s), [0])
        await leaver.leave()
        // The speaker switches 250 ms after the new key arrives.
        await eventually(5) { stayer.mediaKeyEpochs(of: s) == [0, 1] && speaker.mediaKeyEpochs(of: s) == [1] }
        XCTAssertEqual(stayer.mediaKeyEpochs(of: s), [0, 1], "the new epoch, the old one kept for packets in flight")
        XCTAssertEqual(speaker.mediaKeyEpochs(of: s), [1], "the speaker switched after the others had the key")
        let before = try XCTUnwrap(stayer.mediaStatistics)
        await eventually(5) { (stayer.mediaStatistics?.packetsReceived ?? 0) - before.packetsReceived > 40 }
        let after = try XCTUnwrap(stayer.mediaStatistics)
        XCTAssertEqual(after.srtpRejected, 0, "nothing was lost to the rotation")
        XCTAssertGreaterThan(after.packetsReceived - before.packetsReceived, 40, "50 packets a second go on under the new key")
        await speaker.leave()
        await stayer.leave()
    }
}

/// Media over the signalling connection, in one process (so ThreadSanitizer sees the capture
/// thread sending on the WebSocket, the WebSocket threads handing frames to the engine, and the
/// server's web thread forwarding through the relay): the server advertises a media address
/// nothing listens on, so no bind is ever answered and both clients fall back.
final class MediaOverSignallingTests: XCTestCase {
    func testBothClientsFallBackAndHearEachOther() async throws {
        let t = try TestServer.forSDK { $0.mediaPublicAddress = "127.0.0.2" }  // the relay is bound to 127.0.0.1 only
        defer { t.stop() }
        let events = EventRecorder<CallEvent>()
        let listener = try await t.joinedClient("lis", session: "tunnel", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), onEvent: { events.add($0) })
        let speaker = try await t.joinedClient("spk", session: "tunnel", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("none").build())
        await eventually(8) {
            events.all.contains { if case .mediaTransportChanged(.signalling) = $0 { return true }; return false }
                && (listener.mediaStatistics?.packetsReceived ?? 0) > 0
        }
        XCTAssertTrue(events.all.contains { if case .mediaTransportChanged(.signalling) = $0 { return true }; return false },
                      "\(events.all.map(\.callback))")
        XCTAssertTrue(listener.audioNotices.contains { $0.contains("signalling connection") }, "\(listener.audioNotices)")
        let before = try XCTUnwrap(listener.mediaStatistics)
        let relay = try XCTUnwrap(t.server.relayCounters)
        await eventually(8) {
            (listener.mediaStatistics?.packetsReceived ?? 0) - before.packetsReceived > 40
                && relay.tunnelled.load(ordering: .relaxed) > 100 && relay.tunnelledOut.load(ordering: .relaxed) > 100
        }
        let after = try XCTUnwrap(listener.mediaStatistics)
        XCTAssertFalse(after.bound, "never bound by UDP")
        XCTAssertGreaterThan(after.packetsReceived - before.packetsReceived, 40, "50 packets a second over the WebSocket")
        XCTAssertEqual(after.srtpRejected, 0)
        let counters = try XCTUnwrap(t.server.relayCounters)
        XCTAssertGreaterThan(counters.tunnelled.load(ordering: .relaxed), 100)
        XCTAssertGreaterThan(counters.tunnelledOut.load(ordering: .relaxed), 100)
        await speaker.leave()
        await listener.leave()
    }
}
