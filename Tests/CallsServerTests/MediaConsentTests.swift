import CallRoomTestSupport
import CallsCore
import CallsSecurity
import CallsServer
import CallsTransport
import XCTest

/// The media bind and consent attacks of issue #15, against a real server on loopback: a bind
/// spoofed from a third party's address used to make the relay stream the room's media there;
/// now media flows only to an address that answered a challenge, and only while it answers.
final class MediaConsentTests: XCTestCase {
    var h: ServerHarness!
    override func setUpWithError() throws {
        h = try ServerHarness(configure: { $0.mediaConsentIntervalMs = 300; $0.mediaConsentTimeoutMs = 1200 })
    }
    override func tearDown() { h.stop(); h.removeData() }

    func join(_ uid: String) throws -> (SignalProbe, ServerMessage.Joined) {
        let probe = try SignalProbe(url: h.server.url)
        probe.send(.join(.init(callToken: try h.callToken(uid: uid, session: "consent", name: uid.capitalized))))
        return (probe, try XCTUnwrap(probe.joined(), "\(uid) joined"))
    }

    func rtp(_ j: ServerMessage.Joined, _ seq: UInt16) -> [UInt8] {
        RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: j.you.ssrc, audioLevel: .init(level: 20, voiceActivity: true),
                  payload: [UInt8](repeating: 0xAB, count: 60)).encoded()
    }

    /// Every datagram `s` receives within `ms`, split into media and control.
    func drain(_ s: UDPSocket, ms: Int32) -> (media: Int, control: [[UInt8]]) {
        var media = 0, control: [[UInt8]] = []
        let end = monotonicNanoseconds() + UInt64(ms) * 1_000_000
        while monotonicNanoseconds() < end, let d = s.receiveBytes(timeoutMs: 20) {
            if d.first == 0x43 { control.append(d) } else { media += 1 }
        }
        return (media, control)
    }

    func testASpoofedBindDoesNotStreamTheRoomToAThirdParty() throws {
        try XCTSkipUnless(SpoofedUDP.isAvailable, "raw sockets need root: the spoofing attack cannot be reproduced here")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let (_, ja) = try join("alice")
        let (_, jm) = try join("mallory")  // a participant of the room, with a valid bind token
        let sa = try UDPSocket(host: "127.0.0.1", port: 0)
        XCTAssertTrue(sa.bindMedia(ja, relay: relay))
        let victim = try UDPSocket(host: "127.0.0.1", port: 0)  // a third party that never asked for anything
        // Mallory binds with her own proof, the source forged to be the victim's address.
        let proof = MediaConsent(ssrc: jm.you.ssrc, token: Hex.decode(jm.bindToken) ?? []).bindDatagram
        try SpoofedUDP.send(proof, fromPort: victim.localAddress.port, toPort: UInt16(h.server.mediaPort))
        Thread.sleep(forTimeInterval: 0.1)
        for seq in 0..<50 { sa.send(rtp(ja, UInt16(seq)), to: relay) }
        let got = drain(victim, ms: 400)
        XCTAssertEqual(got.media, 0, "no media reaches an address that did not answer the challenge")
        XCTAssertEqual(got.control.map(\.count), [MediaBinding.challengeLength], "the victim saw one challenge, no bigger than the bind")
        XCTAssertEqual(h.server.relayCounters?.binds.load(ordering: .relaxed), 1, "only alice is bound")
        // Mallory, who can read the challenge only at her own address, cannot answer for the victim.
        let ms = try UDPSocket(host: "127.0.0.1", port: 0)
        let forged = MediaBinding.encodeResponse(.init(ssrc: jm.you.ssrc, nonce: [UInt8](repeating: 0, count: 16), mac: [UInt8](repeating: 0, count: 16)))
        try SpoofedUDP.send(forged, fromPort: victim.localAddress.port, toPort: UInt16(h.server.mediaPort))
        ms.send(forged, to: relay)
        XCTAssertTrue(eventually(2) { (h.server.relayCounters?.droppedBadConsent.load(ordering: .relaxed) ?? 0) >= 2 }, "both forged answers refused")
        XCTAssertEqual(drain(victim, ms: 200).media, 0)
    }

    func testABoundAddressThatStopsAnsweringStopsReceiving() throws {
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let (_, ja) = try join("alice")
        let (_, jb) = try join("bob")
        let (_, jc) = try join("carol")
        let sa = try UDPSocket(host: "127.0.0.1", port: 0), sb = try UDPSocket(host: "127.0.0.1", port: 0), sc = try UDPSocket(host: "127.0.0.1", port: 0)
        for (s, j) in [(sa, ja), (sb, jb), (sc, jc)] { XCTAssertTrue(s.bindMedia(j, relay: relay)) }
        let bob = MediaConsent(ssrc: jb.you.ssrc, token: Hex.decode(jb.bindToken) ?? [])
        let alice = MediaConsent(ssrc: ja.you.ssrc, token: Hex.decode(ja.bindToken) ?? [])
        // Alice talks for 2.5 s (eight consent intervals, two timeouts); bob answers every
        // challenge, carol (gone quiet: a crashed client whose address may be reused) answers none.
        var bobMedia = 0, carolMediaLate = 0, bobChallenges = 0, carolChallenges = 0
        let start = monotonicNanoseconds()
        var sent = 0
        paced(every: 0.02, for: 2.5) { tick in
            sa.send(rtp(ja, UInt16(truncatingIfNeeded: tick)), to: relay)
            sent += 1
            while let d = sb.receiveBytes(timeoutMs: 0) {
                if d.first == 0x43 {
                    if let answer = d.withUnsafeBytes({ bob.answer($0) }) { bobChallenges += 1; sb.send(answer, to: relay) }
                } else { bobMedia += 1 }
            }
            while let d = sc.receiveBytes(timeoutMs: 0) {
                if d.first == 0x43 { carolChallenges += 1 } else if monotonicNanoseconds() - start > 1_800_000_000 { carolMediaLate += 1 }
            }
            while let d = sa.receiveBytes(timeoutMs: 0) {
                if let answer = d.withUnsafeBytes({ alice.answer($0) }) { sa.send(answer, to: relay) }
            }
            return true
        }
        XCTAssertGreaterThan(bobChallenges, 3, "a bound address is challenged every interval")
        XCTAssertGreaterThan(bobMedia, sent * 9 / 10, "an answering address keeps receiving (\(bobMedia) of \(sent))")
        XCTAssertGreaterThan(carolChallenges, 1)
        XCTAssertEqual(carolMediaLate, 0, "no media after its consent lapsed")
        let counters = try XCTUnwrap(h.server.relayCounters)
        XCTAssertEqual(counters.consentExpired.load(ordering: .relaxed), 1, "carol was unbound, nobody else")
        XCTAssertTrue(h.server.metricsText().contains("callroom_relay_consent_expired_total"))
        // Carol comes back: a fresh bind and answer bind her again.
        XCTAssertTrue(sc.bindMedia(jc, relay: relay))
    }
}
