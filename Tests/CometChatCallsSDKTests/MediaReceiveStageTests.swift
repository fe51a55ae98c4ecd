import CallsCore
import CallsSecurity
import CallsVideo
@testable import CometChatCallsSDK
import XCTest

/// The receive path's stage in-process, fed by a fake transport (protected packets made here):
/// what is handed on, what is refused and why, the relay's control datagrams, and the simulated
/// impairment on made-up time — no socket, no server, no sleep.
final class MediaReceiveStageTests: XCTestCase {
    let own: UInt32 = 0x1111, alice: UInt32 = 0xA11CE, stranger: UInt32 = 0x5757
    let key = SRTPKey(epoch: 0, material: [UInt8](repeating: 7, count: 28))

    struct Delivered: Equatable { var ssrc: UInt32; var seq: UInt16; var payloadType: UInt8; var arrival: UInt64 }

    func stage(impairment: NetworkImpairment? = nil) throws -> MediaReceiveStage {
        let srtp = try SRTPReceiver()
        try srtp.setKey(key, for: alice)
        try srtp.setKey(key, for: own)
        return MediaReceiveStage(srtp: srtp, impairment: impairment)
    }

    /// An SRTP packet from `ssrc` as a transport would hand it over.
    func packet(_ ssrc: UInt32, _ seq: UInt16, video: Bool = false, key k: SRTPKey? = nil) throws -> [UInt8] {
        let plain = RTPPacket(payloadType: video ? VP8Payload.payloadType : RTPPacket.opusPayloadType, sequenceNumber: seq,
                              timestamp: UInt32(seq) * 960, ssrc: ssrc, payload: [1, 2, 3, 4]).encoded()
        var buffer = plain + [UInt8](repeating: 0, count: 64)
        let sender = try SRTPSender(ssrc: ssrc, key: k ?? key)
        let n = try buffer.withUnsafeMutableBytes { try sender.protect($0, length: plain.count) }
        return Array(buffer[0..<n])
    }

    func feed(_ stage: inout MediaReceiveStage, _ bytes: [UInt8], at arrival: UInt64, impaired: Bool = true,
              into out: inout [Delivered]) -> MediaReceiveStage.Outcome {
        var b = bytes
        var got: [Delivered] = []
        let outcome = b.withUnsafeMutableBytes { raw in
            stage.receive(raw, length: bytes.count, ownSSRC: own, arrival: arrival, impaired: impaired) { h, _, at in
                got.append(Delivered(ssrc: h.ssrc, seq: h.sequenceNumber, payloadType: h.payloadType, arrival: at))
            }
        }
        out += got
        return outcome
    }

    func testVerifiedPacketsAreHandedOnWithTheirArrivalAndTheRestRefusedByName() throws {
        var s = try stage()
        var out: [Delivered] = []
        XCTAssertEqual(feed(&s, try packet(alice, 1), at: 100, into: &out), .delivered)
        XCTAssertEqual(feed(&s, try packet(alice, 2, video: true), at: 120, into: &out), .delivered)
        XCTAssertEqual(out, [Delivered(ssrc: alice, seq: 1, payloadType: RTPPacket.opusPayloadType, arrival: 100),
                             Delivered(ssrc: alice, seq: 2, payloadType: VP8Payload.payloadType, arrival: 120)])
        var tampered = try packet(alice, 3)
        tampered[14] ^= 0x01
        XCTAssertEqual(feed(&s, tampered, at: 140, into: &out), .rejected, "a flipped bit fails the tag")
        XCTAssertEqual(feed(&s, try packet(alice, 1), at: 160, into: &out), .rejected, "a replay")
        XCTAssertEqual(feed(&s, try packet(stranger, 1), at: 180, into: &out), .rejected, "no key for this sender")
        let otherKey = SRTPKey(epoch: 0, material: [UInt8](repeating: 9, count: 28))
        XCTAssertEqual(feed(&s, try packet(alice, 4, key: otherKey), at: 200, into: &out), .rejected, "someone else's key")
        XCTAssertEqual(feed(&s, try packet(own, 1), at: 220, into: &out), .ignored, "our own, looped back")
        XCTAssertEqual(out.count, 2, "nothing refused was handed on")
        XCTAssertFalse(MediaReceiveStage.Outcome.rejected.received)
        XCTAssertFalse(MediaReceiveStage.Outcome.ignored.received)
    }

    func testTheRelaysAcknowledgementAndChallengeAreTold() {
        let consent = MediaConsent(ssrc: own, token: [UInt8](repeating: 3, count: 16))
        func control(_ d: [UInt8], _ c: MediaConsent?) -> MediaReceiveStage.Control {
            d.withUnsafeBytes { MediaReceiveStage.control($0, ownSSRC: own, consent: c) }
        }
        XCTAssertEqual(control(MediaBinding.encodeAck(ssrc: own), consent), .acknowledged)
        XCTAssertEqual(control(MediaBinding.encodeAck(ssrc: alice), consent), .ignored, "someone else's binding")
        let nonce = (0..<16).map { UInt8($0) }
        let challenge = MediaBinding.encodeChallenge(.init(ssrc: own, nonce: nonce))
        let expected = MediaBinding.encodeResponse(.init(ssrc: own, nonce: nonce, mac: consent.mac(nonce: nonce)))
        XCTAssertEqual(control(challenge, consent), .answer(expected))
        XCTAssertEqual(control(challenge, nil), .ignored, "no bind token yet: nothing to answer with")
        XCTAssertEqual(control(MediaBinding.encodeChallenge(.init(ssrc: alice, nonce: nonce)), consent), .ignored, "not ours to answer")
    }

    func testTheImpairmentHoldsPacketsForTheirDelayAndReleasesThemOnTime() throws {
        let impairment = NetworkImpairment(lossPercent: 0, jitterMs: 40, seed: 7)
        var s = try stage(impairment: impairment)
        var out: [Delivered] = []
        let ms: UInt64 = 1_000_000
        for i in 0..<20 {
            XCTAssertEqual(feed(&s, try packet(alice, UInt16(i)), at: UInt64(i) * 20 * ms, into: &out), .held)
        }
        XCTAssertTrue(out.isEmpty, "everything waits for its release time")
        var released: [Delivered] = []
        var now: UInt64 = 0
        while let next = s.nextRelease {
            XCTAssertGreaterThanOrEqual(next, now, "released in time order")
            now = next
            s.release(now: now) { h, _, at in released.append(Delivered(ssrc: h.ssrc, seq: h.sequenceNumber, payloadType: h.payloadType, arrival: at)) }
        }
        XCTAssertEqual(Set(released.map(\.seq)), Set(0..<20), "each packet once")
        for d in released {
            let sent = UInt64(d.seq) * 20 * ms
            XCTAssertTrue((sent...(sent + 40 * ms)).contains(d.arrival), "packet \(d.seq) arrives 0–40 ms late (at \(d.arrival))")
        }
        XCTAssertNotEqual(released.map(\.seq), Array(0..<20), "a 40 ms jitter on 20 ms packets reorders")

        // The same seed holds the same packets for the same times.
        var again = try stage(impairment: impairment)
        var ignored: [Delivered] = []
        for i in 0..<20 { _ = feed(&again, try packet(alice, UInt16(i)), at: UInt64(i) * 20 * ms, into: &ignored) }
        var replay: [Delivered] = []
        again.release(now: .max) { h, _, at in replay.append(Delivered(ssrc: h.ssrc, seq: h.sequenceNumber, payloadType: h.payloadType, arrival: at)) }
        XCTAssertEqual(replay, released)
    }

    func testImpairedLossDropsAndTheTunnelIsNotImpaired() throws {
        var s = try stage(impairment: NetworkImpairment(lossPercent: 100, jitterMs: 0))
        var out: [Delivered] = []
        for i in 0..<10 { XCTAssertEqual(feed(&s, try packet(alice, UInt16(i)), at: 0, into: &out), .impairedDrop) }
        XCTAssertTrue(MediaReceiveStage.Outcome.impairedDrop.received, "it arrived: the loss is simulated after")
        XCTAssertEqual(feed(&s, try packet(alice, 10), at: 5, impaired: false, into: &out), .delivered, "what the tunnel carries is never impaired")
        XCTAssertEqual(out.map(\.seq), [10])
        XCTAssertNil(s.nextRelease)
    }
}
