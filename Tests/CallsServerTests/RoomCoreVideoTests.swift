import CallRoomTestSupport
@testable import CallsServer
import CallsCore
import XCTest
@testable import CallsRelay

/// Video in the room core (no sockets): subscriptions become the relay's per-sender subscriber
/// sets, a new subscriber and a receiver's request reach the sender as keyframe requests, a
/// paused camera is paused at the relay, video reports go to the sender they are about.
extension RoomCoreTests {
    func lastPatch(_ effects: [RoomEffect]) -> RelayPatch? {
        effects.compactMap { if case .relay(let p) = $0 { return p }; return nil }.last
    }

    func testVideoSubscriptionsAreTheRelaysSubscriberSetsAndAskForKeyframes() throws {
        let ja = try joined("ann", a), jb = try joined("bea", b), jc = try joined("cy", c)
        let effects = message(.subscribeVideo(pids: [ja.you.pid, jc.you.pid, "nobody"]), b)
        let patch = try XCTUnwrap(lastPatch(effects))
        let byKey = Dictionary(uniqueKeysWithValues: patch.members.map { ($0.videoSSRC, $0) })
        let keyB = try XCTUnwrap(patch.members.first { $0.ssrc == jb.you.ssrc }?.key)
        XCTAssertEqual(byKey[try XCTUnwrap(ja.you.videoSsrc)]?.videoSubscribers, [keyB])
        XCTAssertEqual(byKey[try XCTUnwrap(jc.you.videoSsrc)]?.videoSubscribers, [keyB])
        XCTAssertEqual(byKey[try XCTUnwrap(jb.you.videoSsrc)]?.videoSubscribers, [], "not to herself")
        XCTAssertEqual(sent(effects, to: a), [.keyframeRequest(fromPid: jb.you.pid)])
        XCTAssertEqual(sent(effects, to: c), [.keyframeRequest(fromPid: jb.you.pid)])
        // The same set again changes nothing; dropping ann asks no one for anything.
        XCTAssertTrue(message(.subscribeVideo(pids: [jc.you.pid, ja.you.pid]), b).isEmpty)
        let fewer = message(.subscribeVideo(pids: [jc.you.pid]), b)
        XCTAssertEqual(lastPatch(fewer)?.members.first { $0.ssrc == ja.you.ssrc }?.videoSubscribers, [])
        XCTAssertTrue(sent(fewer, to: a).isEmpty && sent(fewer, to: c).isEmpty)
        // Too many names: refused.
        guard case .error(.badMessage, _)? = sent(message(.subscribeVideo(pids: Array(repeating: "x", count: 4)), b), to: b).first else {
            return XCTFail("more names than the room holds are refused")
        }
    }

    func testVideoKeyframeRequestsReachOnlyTheSendersYouShow() throws {
        let ja = try joined("ann", a), jb = try joined("bea", b)
        XCTAssertTrue(message(.requestKeyframe(pid: ja.you.pid), b).isEmpty, "bea does not show ann")
        _ = message(.subscribeVideo(pids: [ja.you.pid]), b)
        XCTAssertEqual(sent(message(.requestKeyframe(pid: ja.you.pid), b), to: a), [.keyframeRequest(fromPid: jb.you.pid)])
    }

    func testVideoPausedAtTheRelay_IsPausedAtTheRelay() throws {
        let ja = try joined("ann", a)
        try joined("bea", b)
        let paused = message(.setVideoPaused(true), a)
        XCTAssertEqual(lastPatch(paused)?.members.first { $0.ssrc == ja.you.ssrc }?.videoPaused, true)
        XCTAssertEqual(lastPatch(message(.setVideoPaused(false), a))?.members.first { $0.ssrc == ja.you.ssrc }?.videoPaused, false)
    }

    func testVideoReportsGoToTheirSender() throws {
        let ja = try joined("ann", a), jb = try joined("bea", b)
        let effects = message(.receiverReport([LossReport(ssrc: try XCTUnwrap(ja.you.videoSsrc), lossPercent: 12.5, framesPerSecond: 14),
                                               LossReport(ssrc: ja.you.ssrc, lossPercent: 1)]), b)
        XCTAssertEqual(sent(effects, to: a), [.videoReport(fromPid: jb.you.pid, lossPercent: 12.5, framesPerSecond: 14),
                                               .lossReport(fromPid: jb.you.pid, lossPercent: 1, redundancy: false)])
    }
}

/// Terminal screen share in the room core: only a presenter's frames pass, to everyone else;
/// a late joiner gets the frames since the last full one; stopping presenting drops them.
extension RoomCoreTests {
    func shareFrame(_ seq: Int, full: Bool, _ text: String) -> ScreenShareFrame {
        ScreenShareFrame(seq: seq, full: full, columns: 20, rows: 2, cursor: nil, styles: [.plain], runs: [.init(x: 0, y: 0, text: text, style: 0)])
    }

    func testScreenShareFramesReachTheRoomAndLateJoiners() throws {
        let ja = try joined("ann", a)
        try joined("bea", b)
        guard case .error(.badMessage, _)? = sent(message(.screenShare(shareFrame(1, full: true, "x")), a), to: a).first else {
            return XCTFail("not presenting: refused")
        }
        _ = message(.setPresenting(true), a)
        let f1 = shareFrame(1, full: true, "make test"), f2 = shareFrame(2, full: false, "make"), f3 = shareFrame(3, full: false, "ok")
        for f in [f1, f2, f3] {
            let e = message(.screenShare(f), a)
            XCTAssertEqual(sent(e, to: b), [.screenShare(pid: ja.you.pid, frame: f)])
            XCTAssertTrue(sent(e, to: a).isEmpty, "not back to the presenter")
        }
        // A late joiner sees the share at once: the full frame and the diffs after it.
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("cy"), sessionId: "room")), c)).first)
        let toC = sent(ok(r, name: "Cy"), to: c)
        XCTAssertEqual(toC.filter { if case .screenShare = $0 { return true }; return false },
                       [f1, f2, f3].map { .screenShare(pid: ja.you.pid, frame: $0) })
        // A frame out of bounds is refused; stopping presenting forgets the share.
        let bad = ScreenShareFrame(seq: 4, full: false, columns: 20, rows: 2, cursor: nil, styles: [.plain], runs: [.init(x: 0, y: 5, text: "x", style: 0)])
        guard case .error(.badMessage, _)? = sent(message(.screenShare(bad), a), to: a).first else { return XCTFail("out of bounds: refused") }
        _ = message(.setPresenting(false), a)
        XCTAssertNil(core.rooms["room"]?.shares[ja.you.pid])
    }
}

extension RoomCoreTests {
    /// The attack (#34): 300 kept diffs of 60 KB each were 18 MB per presenter. The kept frames
    /// are bounded in bytes: past 1 MiB they are dropped (late joiners wait for a full frame),
    /// and stopping presenting frees them.
    func testKeptScreenShareFramesAreBoundedInBytes() throws {
        let ja = try joined("ann", a)
        try joined("bea", b)
        _ = message(.setPresenting(true), a)
        let row = String(repeating: "é", count: 300)
        func big(_ seq: Int, full: Bool) -> ScreenShareFrame {
            ScreenShareFrame(seq: seq, full: full, columns: 300, rows: 90, cursor: nil, styles: [.plain],
                             runs: (0..<90).map { .init(x: 0, y: $0, text: row, style: 0) })
        }
        XCTAssertGreaterThan(big(1, full: true).approximateBytes, 50_000)
        var peak = 0
        for seq in 1...40 {
            let e = message(.screenShare(big(seq, full: seq == 1)), a)
            XCTAssertEqual(sent(e, to: b).count, 1, "every frame still reaches the room")
            peak = max(peak, core.rooms["room"]?.shareBytes[ja.you.pid] ?? 0)
        }
        XCTAssertLessThanOrEqual(peak, RoomCore.maxKeptShareBytes)
        XCTAssertNil(core.rooms["room"]?.shares[ja.you.pid], "over the bound: nothing kept until the next full frame")
        _ = message(.screenShare(big(41, full: true)), a)
        XCTAssertEqual(core.rooms["room"]?.shares[ja.you.pid]?.count, 1, "a full frame starts again")
        _ = message(.setPresenting(false), a)
        XCTAssertNil(core.rooms["room"]?.shares[ja.you.pid])
        XCTAssertNil(core.rooms["room"]?.shareBytes[ja.you.pid])
    }
}
