import CallRoomTestSupport
import CallsCore
import CallsSecurity
import CallsServer
import CallsTransport
import XCTest

/// Room state held and broadcast by the server: flags, moderation, several devices, chat,
/// idle timeout, reconnection and the dominant speaker.
final class RoomFeaturesTests: XCTestCase {
    var h: ServerHarness!
    override func setUpWithError() throws { h = try ServerHarness.quick(grace: 1) }
    override func tearDown() { h.stop(); h.removeData() }

    func join(_ uid: String, session: String = "room", idle: Int? = nil) throws -> (SignalProbe, ServerMessage.Joined) {
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: try h.callToken(uid: uid, session: session), sessionId: session, idleTimeoutSeconds: idle)))
        return (p, try XCTUnwrap(p.joined(), "\(uid) joined"))
    }

    func updated(_ p: SignalProbe, _ pid: String, _ change: String, timeout: TimeInterval = 3) -> WireParticipant? {
        if case .participantUpdated(let w, _)? = p.wait(timeout: timeout, {
            if case .participantUpdated(let w, let c) = $0 { return w.pid == pid && c.rawValue == change }
            return false
        }) { return w }
        return nil
    }

    func errorCode(_ p: SignalProbe, _ code: String) -> Bool {
        p.wait { if case .error(let c, _) = $0 { return c.rawValue == code }; return false } != nil
    }

    func testStateFlagsAreHeldAndBroadcast() throws {
        let (a, ja) = try join("ann")
        let (b, _) = try join("bea")
        a.send(.setVideoPaused(true))
        XCTAssertEqual(updated(b, ja.you.pid, "videoPaused")?.isVideoPaused, true)
        a.send(.setHandRaised(true))
        let raised = try XCTUnwrap(updated(b, ja.you.pid, "handRaised"))
        XCTAssertNotNil(raised.raisedHandTimestamp)
        a.send(.setPresenting(true))
        XCTAssertEqual(updated(b, ja.you.pid, "presentingStarted")?.isPresenting, true)
        a.send(.setRecording(true))
        XCTAssertEqual(updated(a, ja.you.pid, "recordingStarted")?.isRecording, true, "the sender hears its own change")
        a.send(.setHandRaised(false))
        XCTAssertNil(updated(b, ja.you.pid, "handLowered")?.raisedHandTimestamp)
        // A late joiner sees the current state in the roster.
        let (_, jc) = try join("cy")
        let annNow = try XCTUnwrap(jc.participants.first { $0.pid == ja.you.pid })
        XCTAssertTrue(annNow.isVideoPaused)
        XCTAssertTrue(annNow.isPresenting)
        XCTAssertTrue(annNow.isRecording)
        XCTAssertNil(annNow.raisedHandTimestamp)
    }

    func testModeration() throws {
        let (mod, jm) = try join("mo")
        let (p, jp) = try join("pat")
        let (q, jq) = try join("quin")
        XCTAssertEqual(jm.you.role, .moderator)
        p.send(.muteParticipant(pid: jq.you.pid))
        XCTAssertTrue(errorCode(p, "ERR_NOT_MODERATOR"))
        mod.send(.muteParticipant(pid: "nobody"))
        XCTAssertTrue(errorCode(mod, "ERR_PARTICIPANT_NOT_FOUND"))
        mod.send(.muteParticipant(pid: jq.you.pid))
        XCTAssertEqual(updated(q, jq.you.pid, "audioMuted")?.isAudioMuted, true, "the muted participant is told")
        XCTAssertNotNil(updated(p, jq.you.pid, "audioMuted"))
        mod.send(.pauseParticipantVideo(pid: jq.you.pid))
        XCTAssertNotNil(updated(q, jq.you.pid, "videoPaused"))
        mod.send(.pin(pid: jp.you.pid))
        XCTAssertEqual(updated(q, jp.you.pid, "pinned")?.isPinned, true)
        mod.send(.pin(pid: jq.you.pid))
        XCTAssertNotNil(updated(q, jp.you.pid, "unpinned"), "one pin at a time")
        XCTAssertNotNil(updated(q, jq.you.pid, "pinned"))
        mod.send(.removeParticipant(pid: jq.you.pid))
        XCTAssertNotNil(q.wait { if case .left(.removed, let by) = $0 { return by == "mo" }; return false }, "told who removed them")
        XCTAssertTrue(q.waitClosed())
        XCTAssertNotNil(p.wait { if case .participantLeft(let w, .removed) = $0 { return w.pid == jq.you.pid }; return false })
        // The moderator leaves: the next to have joined takes over.
        mod.send(.leave)
        XCTAssertEqual(updated(p, jp.you.pid, "roleChanged")?.role, .moderator)
    }

    func testOneUserOnSeveralDevices() throws {
        let (_, j1) = try join("dev")
        let (_, j2) = try join("dev")
        XCTAssertNotEqual(j1.you.pid, j2.you.pid)
        XCTAssertNotEqual(j1.you.ssrc, j2.you.ssrc)
        XCTAssertEqual(j2.participants.map(\.uid), ["dev", "dev"])
    }

    func testTokenForAnotherSessionIsRefused() throws {
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: try h.callToken(uid: "eve", session: "a"), sessionId: "b")))
        XCTAssertTrue(errorCode(p, "AUTH_ERR_TOKEN_SESSION_MISMATCH"))
        XCTAssertTrue(p.waitClosed())
    }

    func testChatIsBroadcastLimitedAndKept() throws {
        let (a, ja) = try join("al")
        let (b, _) = try join("bo")
        a.send(.chat(text: "  hello room  "))
        guard case .chat(let m)? = b.wait({ if case .chat = $0 { return true }; return false }) else { return XCTFail("no chat") }
        XCTAssertEqual(m.text, "hello room")
        XCTAssertEqual(m.pid, ja.you.pid)
        XCTAssertEqual(m.uid, "al")
        XCTAssertGreaterThan(m.id, 0)
        a.send(.chat(text: String(repeating: "x", count: 2001)))
        XCTAssertTrue(errorCode(a, "ERR_MESSAGE_TOO_LONG"))
        a.send(.chat(text: "   "))
        XCTAssertTrue(errorCode(a, "SIGNAL_BAD_MESSAGE"))
        for i in 0..<8 { a.send(.chat(text: "spam \(i)")) }
        XCTAssertTrue(errorCode(a, "ERR_RATE_LIMITED"))
        // The refusals are immediate; the five kept messages reach b once on disk.
        let chats = { b.all.filter { if case .chat = $0 { return true }; return false }.count }
        let deadline = Date().addingTimeInterval(5)
        while chats() < 5 && Date() < deadline { _ = b.wait(timeout: 0.05) { _ in false } }
        XCTAssertEqual(chats(), 5, "a burst of 5, then refused")
        let listed = h.request("GET", "/v3/calls/room/messages", headers: h.adminHeaders)
        XCTAssertEqual((listed.json["data"] as? [[String: Any]])?.first?["text"] as? String, "hello room")
        XCTAssertEqual(((listed.json["meta"] as? [String: Any])?["pagination"] as? [String: Any])?["total"] as? Int, 5)
    }

    func testReconnectionWithinGraceKeepsTheParticipant() throws {
        let (a, ja) = try join("ria")
        let (b, _) = try join("rob")
        // Resumed over a new connection, whether or not the server has noticed the drop yet
        // (the grace period itself is tested on a virtual clock: RoomClockTests, RoomCoreTests).
        a.client.abort()
        let a2 = try SignalProbe(url: h.server.url)
        a2.send(.resume(token: try XCTUnwrap(ja.resumeToken)))
        guard case .resumed(let r)? = a2.wait({ if case .resumed = $0 { return true }; return false }) else { return XCTFail("not resumed") }
        XCTAssertEqual(r.you.pid, ja.you.pid, "the same participant")
        XCTAssertEqual(r.you.ssrc, ja.you.ssrc)
        XCTAssertNotEqual(r.bindToken, ja.bindToken, "a fresh media binding")
        XCTAssertNotEqual(r.resumeToken, ja.resumeToken)
        XCTAssertEqual(r.participants.count, 2)
        XCTAssertFalse(b.all.contains { if case .participantLeft = $0 { return true }; return false }, "no leave/join churn")
        a2.send(.ping(1))
        XCTAssertNotNil(a2.wait { $0 == .pong(1) })
        // The old token is spent.
        let stale = try SignalProbe(url: h.server.url)
        stale.send(.resume(token: try XCTUnwrap(ja.resumeToken)))
        XCTAssertTrue(errorCode(stale, "ERR_RESUME_EXPIRED"))
        // Dropped again and not back in time: an ordinary leave.
        a2.client.abort()
        XCTAssertNotNil(b.wait(timeout: 4) { if case .participantLeft(let w, .disconnected) = $0 { return w.pid == ja.you.pid }; return false })
    }

    func testDominantSpeakerFollowsTheLoudestSender() throws {
        let (a, ja) = try join("loud")
        let (b, jb) = try join("soft")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let sa = try UDPSocket(host: "127.0.0.1", port: 0), sb = try UDPSocket(host: "127.0.0.1", port: 0)
        for (s, j) in [(sa, ja), (sb, jb)] {
            XCTAssertTrue(s.bindMedia(j, relay: relay))
        }
        func talk(loud: (UDPSocket, UInt32), quiet: (UDPSocket, UInt32), seconds: Double) {
            paced(every: 0.02, for: seconds) { tick in
                let seq = UInt16(truncatingIfNeeded: tick + 1)
                loud.0.send(RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: loud.1,
                                      audioLevel: .init(level: 12, voiceActivity: true), payload: [1]).encoded(), to: relay)
                quiet.0.send(RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: quiet.1,
                                       audioLevel: .init(level: 110, voiceActivity: false), payload: [1]).encoded(), to: relay)
                return true
            }
        }
        talk(loud: (sa, ja.you.ssrc), quiet: (sb, jb.you.ssrc), seconds: 1.2)
        XCTAssertNotNil(b.wait { $0 == .dominantSpeaker(pid: ja.you.pid) })
        XCTAssertNotNil(a.wait { $0 == .dominantSpeaker(pid: ja.you.pid) })
        talk(loud: (sb, jb.you.ssrc), quiet: (sa, ja.you.ssrc), seconds: 1.2)
        XCTAssertNotNil(a.wait { $0 == .dominantSpeaker(pid: jb.you.pid) })
        let changes = a.all.filter { if case .dominantSpeaker = $0 { return true }; return false }.count
        XCTAssertEqual(changes, 2, "hysteresis: one change per turn, no flapping")
        // (A muted participant is never announced: RoomCoreTests, with the tracker's input.)
    }

    /// A join the store cannot record is refused (ERR_STORAGE) and nobody hears of it: the
    /// promise is that an acknowledged join is on disk.
    func testAJoinTheStoreCannotRecordIsRefused() throws {
        let (a, _) = try join("ann", session: "disk")
        // Another connection breaks the table joins are written to.
        let db = try h.storeDatabase()
        try db.execute("DROP TABLE call_participants")
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: try h.callToken(uid: "bea", session: "disk"), sessionId: "disk")))
        XCTAssertTrue(errorCode(p, "ERR_STORAGE"), "the join is refused")
        XCTAssertNil(p.joined(timeout: 0.5))
        XCTAssertTrue(p.waitClosed())
        XCTAssertNil(a.wait(timeout: 0.5) { if case .participantJoined = $0 { return true }; return false }, "nobody hears of it")
        // Leaving still works (the failed write is logged, the participant goes).
        a.send(.leave)
        XCTAssertNotNil(a.wait { if case .left = $0 { return true }; return false })
    }

    func testSignallingFloodIsRateLimitedAndTheConnectionSurvives() throws {
        let (a, _) = try join("fast")
        for i in 0..<400 { a.send(.ping(i)) }
        XCTAssertTrue(errorCode(a, "ERR_RATE_LIMITED"))
        // The bucket refills (50 a second): pings are answered again, on the same connection.
        var answered = false
        for k in 0..<40 where !answered {
            a.send(.ping(10_000 + k))
            answered = a.wait(timeout: 0.05) { $0 == .pong(10_000 + k) } != nil
        }
        XCTAssertTrue(answered)
    }

    func testBindFloodIsRateLimited() throws {
        let (_, j) = try join("binder")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let s = try UDPSocket(host: "127.0.0.1", port: 0)
        let bind = MediaConsent(ssrc: j.you.ssrc, token: Hex.decode(j.bindToken) ?? []).bindDatagram
        for _ in 0..<200 { s.send(bind, to: relay) }
        var challenges = 0
        var buf = [UInt8](repeating: 0, count: 64)
        while s.waitReadable(timeoutMs: 300), buf.withUnsafeMutableBytes({ s.receive(into: $0) }) != nil { challenges += 1 }
        XCTAssertLessThanOrEqual(challenges, 30, "challenges are bounded (got \(challenges))")
        XCTAssertGreaterThan(challenges, 0)
        XCTAssertGreaterThan(h.server.relayCounters?.droppedBindRateLimited.load(ordering: .relaxed) ?? 0, 100)
    }
}

final class CallTokenRoleAndExpiryTests: XCTestCase {
    func testOperatorTokensCarryRolesAndTheConfiguredLifetime() throws {
        // Claims count whole seconds, so a 1 s lifetime can end a millisecond after minting:
        // 2 s leaves every token here at least a second to be used.
        let h = try ServerHarness(configure: { $0.callTokenTTLSeconds = 2 })
        defer { h.stop(); h.removeData() }
        _ = h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"boss"}"#)
        let app = ["appId": h.server.keys.appId]
        let opHeaders = h.adminHeaders.merging(app) { $1 }
        let r = h.request("POST", "/v3.0/call_tokens", headers: opHeaders, body: #"{"sessionId":"rt","uid":"boss","role":"moderator"}"#)
        let modToken = try XCTUnwrap(r.data["token"] as? String)
        XCTAssertEqual(h.request("POST", "/v3.0/call_tokens", headers: opHeaders, body: #"{"sessionId":"rt","uid":"boss","role":"king"}"#).errorCode,
                       "ERR_BAD_REQUEST")
        XCTAssertEqual(h.request("POST", "/v3.0/call_tokens", headers: opHeaders, body: #"{"sessionId":"rt"}"#).errorCode, "ERR_BAD_REQUEST")
        let login = h.request("POST", "/v3/sdk/login", headers: app, body: #"{"uid":"pleb","authKey":"\#(h.server.keys.authKey)"}"#)
        let auth = try XCTUnwrap(login.data["authToken"] as? String)
        XCTAssertEqual(h.request("POST", "/v3.0/call_tokens", headers: app.merging(["authToken": auth]) { $1 },
                                 body: #"{"sessionId":"rt","role":"moderator"}"#).errorCode, "ERR_ROLE_NOT_ALLOWED")

        // The first to join is a participant; the operator's token makes the later joiner a moderator.
        let first = try SignalProbe(url: h.server.url)
        first.send(.join(.init(callToken: try h.callToken(uid: "pleb", session: "rt"))))
        XCTAssertEqual(first.joined()?.you.role, .moderator, "first in with no moderator present")
        let boss = try SignalProbe(url: h.server.url)
        boss.send(.join(.init(callToken: modToken)))
        XCTAssertEqual(boss.joined()?.you.role, .moderator)

        // Tokens carry the configured lifetime; the rooms refuse one past it on their clock
        // (RoomClockTests.testAnExpiredTokenIsRefusedOnTheRegistrysClock, no waiting).
        let late = try h.callToken(uid: "pleb", session: "rt")
        let signer = CallTokenSigner(secret: Hex.decode(h.server.keys.tokenSecret) ?? [])
        let claims = try signer.verify(late, now: epochMilliseconds() / 1000)
        XCTAssertEqual(claims.exp - claims.iat, 2)
        XCTAssertThrowsError(try signer.verify(late, now: claims.exp + 1))
    }
}
