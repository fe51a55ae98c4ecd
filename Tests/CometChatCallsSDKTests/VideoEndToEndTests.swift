import CallRoomTestSupport
import CallsCore
import CallsServer
import CallsVideo
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Real VP8 between clients through a real server: the test pattern arrives and decodes with
/// its colours and clock; the relay forwards video only to those who show it (counted); a
/// paused camera stops at the relay; a receiver that loses packets gets a keyframe and draws
/// again; switching cameras switches the picture.
final class VideoEndToEndTests: XCTestCase {
    var t: TestServer!

    override func setUp() async throws { t = try TestServer.forSDK() }
    override func tearDown() async throws { t.stop() }

    func settings(_ source: String = "pattern", impair: NetworkImpairment? = nil) -> SessionSettingsBuilder.SessionSettings {
        let b = SessionSettingsBuilder().setSessionType(.video).setAudioInput("null").setAudioOutput("none")
            .setVideoSource(source).setVideoFormat(width: 320, height: 180, fps: 15, bitrateKbps: 300).enableVideoStamps(true)
        b.setNetworkImpairment(impair)
        return b.build()
    }

    func waitUntil(_ what: String, seconds: Double = 8, _ ok: () -> Bool) async throws {
        let held = await eventually(seconds) { ok() }
        XCTAssertTrue(held, what)
    }

    func testThePatternArrivesDecodedWithItsColoursAndClock() async throws {
        let alice = try await t.joinedClient("alice", session: "v1", settings: settings())
        let bob = try await t.joinedClient("bob", session: "v1", settings: settings("none"))
        let alicePID = try XCTUnwrap(alice.localParticipantID)
        try await waitUntil("bob decodes alice's video") { (bob.videoReport?.received[alicePID]?.framesDecoded ?? 0) >= 20 }
        let f = try XCTUnwrap(bob.videoFrame(participantID: alicePID))
        XCTAssertEqual(f.width, 320)
        XCTAssertEqual(f.height, 180)
        for (i, c) in TestPatternSource.bars.enumerated() {
            let m = f.meanYUV(x: i * 320 / 7 + 8, y: 10, width: 24, height: 30)
            let want = YUV.from(r: c.r, g: c.g, b: c.b)
            XCTAssertEqual(m.y, Double(want.y), accuracy: 14, "bar \(i) luma")
            XCTAssertEqual(m.u, Double(want.u), accuracy: 14, "bar \(i) U")
            XCTAssertEqual(m.v, Double(want.v), accuracy: 14, "bar \(i) V")
        }
        // The stamped capture time reads back; glass to glass on one machine is well under a second.
        let stamp = try XCTUnwrap(FrameStamp.read(f))
        let latency = Int64(UInt32(truncatingIfNeeded: monotonicNanoseconds() / 1_000_000) &- stamp)
        XCTAssertTrue((0..<1000).contains(latency), "latency \(latency) ms")
        let r = try XCTUnwrap(bob.videoReport?.received[alicePID])
        XCTAssertEqual(r.decodeErrors, 0)
        XCTAssertLessThan(try XCTUnwrap(r.stampLatencyMs), 500)
        // Bob sends none; alice's preview is her own frame.
        XCTAssertNil(bob.videoSourceName)
        XCTAssertNotNil(alice.videoFrame(participantID: alicePID))
        await bob.leave()
        await alice.leave()
    }

    func testTheRelayForwardsVideoOnlyToSubscribers() async throws {
        let counters = try XCTUnwrap(t.server.relayCounters)
        let alice = try await t.joinedClient("alice", session: "v2", settings: settings())
        let bob = try await t.joinedClient("bob", session: "v2", settings: settings("none"))
        let carol = try await t.joinedClient("carol", session: "v2", settings: settings("none"))
        let alicePID = try XCTUnwrap(alice.localParticipantID)
        carol.setVideoSubscriptions([])  // carol's screen shows no one's video
        try await waitUntil("bob draws alice") { (bob.videoReport?.received[alicePID]?.framesDecoded ?? 0) >= 10 }
        let before = (counters.videoForwarded.load(ordering: .relaxed), counters.videoWithheld.load(ordering: .relaxed),
                      carol.videoReport?.received[alicePID]?.packets ?? 0)
        // A second and a half of alice's video (15 fps: 20 frames and more), counted at the relay.
        await eventually(5) { counters.videoForwarded.load(ordering: .relaxed) - before.0 >= 40 }
        let forwarded = counters.videoForwarded.load(ordering: .relaxed) - before.0
        let withheld = counters.videoWithheld.load(ordering: .relaxed) - before.1
        // One copy of each of alice's packets to bob, one withheld from carol.
        XCTAssertGreaterThan(forwarded, 15)
        XCTAssertEqual(Double(withheld), Double(forwarded), accuracy: Double(forwarded) * 0.2 + 3)
        XCTAssertEqual(carol.videoReport?.received[alicePID]?.packets ?? 0, before.2, "carol got no video packets")
        XCTAssertNil(carol.videoFrame(participantID: alicePID))
        // Carol subscribes: a keyframe comes at once and she draws.
        let keyframes = alice.videoReport?.keyframesSent ?? 0
        carol.setVideoSubscriptions([alicePID])
        try await waitUntil("carol draws alice") { (carol.videoReport?.received[alicePID]?.framesDecoded ?? 0) >= 3 }
        XCTAssertGreaterThan(alice.videoReport?.keyframesSent ?? 0, keyframes, "the new subscriber got a keyframe")
        XCTAssertEqual(carol.videoReport?.received[alicePID]?.framesDropped, 0, "it started on a keyframe")
        // Alice pauses: the relay forwards nothing more.
        alice.setVideoPaused(true)
        // Once the last frames in flight are through, the count stops (steady for half a second).
        var seen = counters.videoForwarded.load(ordering: .relaxed)
        await eventually(5, poll: 0.5) {
            let now = counters.videoForwarded.load(ordering: .relaxed)
            defer { seen = now }
            return now == seen
        }
        let pausedAt = counters.videoForwarded.load(ordering: .relaxed)
        let still = await holds(for: 1) { counters.videoForwarded.load(ordering: .relaxed) == pausedAt }
        XCTAssertTrue(still, "nothing forwarded while paused")
        XCTAssertNil(alice.videoFrame(participantID: alicePID), "no preview while paused")
        alice.setVideoPaused(false)
        let resumedFrames = bob.videoReport?.received[alicePID]?.framesDecoded ?? 0
        try await waitUntil("bob draws alice again") { (bob.videoReport?.received[alicePID]?.framesDecoded ?? 0) > resumedFrames + 5 }
        for c in [carol, bob, alice] { await c.leave() }
    }

    func testLossAsksForAKeyframeAndThePictureRecovers() async throws {
        let alice = try await t.joinedClient("alice", session: "v3", settings: settings())
        // Bob loses 12 % of what he receives (over the 10 % at which senders back off): frames break, he asks for keyframes, and keeps drawing.
        let bob = try await t.joinedClient("bob", session: "v3", settings: settings("none", impair: NetworkImpairment(lossPercent: 12, jitterMs: 0, seed: 7)))
        let alicePID = try XCTUnwrap(alice.localParticipantID)
        try await waitUntil("frames dropped after loss", seconds: 10) { (bob.videoReport?.received[alicePID]?.framesDropped ?? 0) > 0 }
        let r1 = try XCTUnwrap(bob.videoReport?.received[alicePID])
        XCTAssertGreaterThan(r1.keyframesRequested, 0)
        try await waitUntil("keyframes recover the picture", seconds: 10) {
            (bob.videoReport?.received[alicePID]?.framesDecoded ?? 0) > r1.framesDecoded + 10
        }
        XCTAssertGreaterThan(alice.videoReport?.keyframesSent ?? 0, 1, "alice sent keyframes on request")
        let f = try XCTUnwrap(bob.videoFrame(participantID: alicePID))
        XCTAssertNotNil(FrameStamp.read(f), "the recovered picture is whole")
        XCTAssertEqual(bob.videoReport?.received[alicePID]?.decodeErrors, 0)
        // Bob's reports carry the loss: alice's sender backs off.
        try await waitUntil("alice adapts to bob's loss", seconds: 8) { (alice.videoReport?.bitrateKbps ?? 300) < 300 }
        await bob.leave()
        await alice.leave()
    }

    func testSwitchingCamerasSwitchesThePicture() async throws {
        let alice = try await t.joinedClient("alice", session: "v4", settings: settings())
        let bob = try await t.joinedClient("bob", session: "v4", settings: settings("none"))
        let alicePID = try XCTUnwrap(alice.localParticipantID)
        func firstBarLuma() -> Double? { bob.videoFrame(participantID: alicePID)?.meanLuma(x: 8, y: 10, width: 24, height: 30) }
        try await waitUntil("white bar first (front)") { (firstBarLuma() ?? 0) > 200 }
        alice.setCameraFacing(.REAR)
        try await waitUntil("blue bar first (rear)") { (firstBarLuma() ?? 255) < 60 }
        await bob.leave()
        await alice.leave()
    }

    func testABadVideoSourceFailsTheJoinClearly() async throws {
        do {
            _ = try await t.joinedClient("alice", session: "v5", settings: settings("file:/nonexistent.y4m"))
            XCTFail("joined with a missing video file")
        } catch let e as CometChatCallException {
            XCTAssertEqual(e.errorCode, "VIDEO_ERROR")
            XCTAssertTrue(e.errorDescription.contains("/nonexistent.y4m"), e.errorDescription)
        }
    }
}
