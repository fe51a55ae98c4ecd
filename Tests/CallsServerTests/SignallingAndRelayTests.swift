import CallRoomTestSupport
import CallsCore
import CallsSecurity
@testable import CallsServer
import CallsTransport
import XCTest

final class SignallingAndRelayTests: XCTestCase {
    var h: ServerHarness!

    override func setUpWithError() throws { h = try ServerHarness() }
    override func tearDown() { h.stop(); h.removeData() }

    func join(_ uid: String, session: String = "room", muted: Bool = false) throws -> (SignalProbe, ServerMessage.Joined) {
        let probe = try SignalProbe(url: h.server.url)
        probe.send(.join(.init(callToken: try h.callToken(uid: uid, session: session, name: uid.capitalized), audioMuted: muted)))
        let j = try XCTUnwrap(probe.joined(), "\(uid) joined")
        return (probe, j)
    }

    func testRosterJoinMuteAndLeaveAreBroadcast() throws {
        let (a, ja) = try join("alice")
        XCTAssertEqual(ja.sessionId, "room")
        XCTAssertEqual(ja.you.uid, "alice")
        XCTAssertEqual(ja.you.name, "Alice")
        XCTAssertEqual(ja.you.role, .moderator, "first to join moderates")
        XCTAssertEqual(ja.participants.map(\.uid), ["alice"])
        XCTAssertEqual(ja.mediaPort, h.server.mediaPort)
        XCTAssertEqual(Hex.decode(ja.bindToken)?.count, 16)

        let (b, jb) = try join("bob", muted: true)
        XCTAssertEqual(jb.participants.map(\.uid), ["alice", "bob"])
        XCTAssertEqual(jb.you.role, .participant)
        XCTAssertTrue(jb.you.isAudioMuted)
        XCTAssertNotEqual(ja.you.ssrc, jb.you.ssrc)
        XCTAssertNotNil(a.wait { if case .participantJoined(let p) = $0 { return p.uid == "bob" }; return false })

        a.send(.setAudioMuted(true))
        for probe in [a, b] {
            XCTAssertNotNil(probe.wait {
                if case .participantUpdated(let p, .audioMuted) = $0 { return p.uid == "alice" && p.isAudioMuted }
                return false
            })
        }
        b.send(.leave)
        XCTAssertNotNil(b.wait { if case .left = $0 { return true }; return false })
        XCTAssertTrue(b.waitClosed())
        XCTAssertNotNil(a.wait { if case .participantLeft(let p, .left) = $0 { return p.uid == "bob" }; return false })

        a.send(.ping(9))
        XCTAssertNotNil(a.wait { $0 == .pong(9) })
        a.send(.leave)
        // The call is recorded with both participants' join and leave times.
        var call: [String: Any] = [:]
        eventually(3, poll: 0.05) {
            call = h.request("GET", "/v3/calls/room", headers: h.adminHeaders).data
            return call["status"] as? String == "ended"
        }
        XCTAssertEqual(call["status"] as? String, "ended")
        let ps = call["participants"] as? [[String: Any]] ?? []
        XCTAssertEqual(ps.compactMap { $0["uid"] as? String }, ["alice", "bob"])
        for p in ps {
            let joined = p["joinedAt"] as? Int64 ?? 0, left = p["leftAt"] as? Int64 ?? 0
            XCTAssertGreaterThan(joined, 0)
            XCTAssertGreaterThanOrEqual(left, joined)
        }
    }

    func testBadTokensAndMessagesGetErrors() throws {
        let p = try SignalProbe(url: h.server.url)
        p.send(.setAudioMuted(true))
        XCTAssertEqual(p.error(), "SIGNAL_NOT_JOINED")
        p.sendRaw(#"{"type":"dance"}"#)
        XCTAssertNotNil(p.wait { if case .error(.unknownType, _) = $0 { return true }; return false })
        p.sendRaw("{{{")
        XCTAssertNotNil(p.wait { if case .error(.badMessage, _) = $0 { return true }; return false })
        p.send(.join(.init(callToken: "not.a.token")))
        XCTAssertNotNil(p.wait { if case .error(.tokenInvalid, _) = $0 { return true }; return false })
        XCTAssertTrue(p.waitClosed(), "a bad token closes the connection")

        let old = try SignalProbe(url: h.server.url)
        old.send(.join(.init(v: 99, callToken: try h.callToken(uid: "x", session: "s"))))
        XCTAssertEqual(old.error(), "SIGNAL_UNSUPPORTED_VERSION")

        // Still serving other clients.
        _ = try join("carol")
    }

    func testRelayForwardsOnlyFromBoundParticipantsToTheirRoom() throws {
        let (_, ja) = try join("alice")
        let (_, jb) = try join("bob")
        let (_, jc) = try join("carl", session: "other-room")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let sa = try UDPSocket(host: "127.0.0.1", port: 0)
        let sb = try UDPSocket(host: "127.0.0.1", port: 0)
        let sc = try UDPSocket(host: "127.0.0.1", port: 0)
        for (s, j) in [(sa, ja), (sb, jb), (sc, jc)] {
            XCTAssertTrue(s.bindMedia(j, relay: relay), "bind acknowledged")
        }
        let packet = RTPPacket(sequenceNumber: 1, timestamp: 960, ssrc: ja.you.ssrc,
                               audioLevel: .init(level: 20, voiceActivity: true), payload: [1, 2, 3]).encoded()
        sa.send(packet, to: relay)
        XCTAssertEqual(sb.receiveBytes(), packet, "forwarded unchanged to the other participant")
        XCTAssertNil(sc.receiveBytes(timeoutMs: 200), "never to another room")
        XCTAssertNil(sa.receiveBytes(timeoutMs: 100), "never echoed to the sender")

        // Spoofed SSRC, unbound sender, bad bind token, garbage: all dropped and counted.
        let counters = try XCTUnwrap(h.server.relayCounters)
        sa.send(RTPPacket(sequenceNumber: 2, timestamp: 1, ssrc: jb.you.ssrc, payload: [0]).encoded(), to: relay)
        let stranger = try UDPSocket(host: "127.0.0.1", port: 0)
        stranger.send(packet, to: relay)
        stranger.send(MediaConsent(ssrc: ja.you.ssrc, token: [UInt8](repeating: 0, count: 16)).bindDatagram, to: relay)
        stranger.send([0x80, 1, 2], to: relay)
        XCTAssertNil(sb.receiveBytes(timeoutMs: 200))
        XCTAssertNil(stranger.receiveBytes(timeoutMs: 100), "no challenge (nor ack) for a bad bind")
        XCTAssertEqual(counters.droppedSSRCMismatch.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.droppedUnbound.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.droppedBadBind.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.droppedMalformed.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.forwarded.load(ordering: .relaxed), 1)
    }

    func testALeftParticipantIsNoLongerForwardedTo() throws {
        let (_, ja) = try join("alice")
        let (b, jb) = try join("bob")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let sa = try UDPSocket(host: "127.0.0.1", port: 0)
        let sb = try UDPSocket(host: "127.0.0.1", port: 0)
        for (s, j) in [(sa, ja), (sb, jb)] {
            XCTAssertTrue(s.bindMedia(j, relay: relay))
        }
        b.send(.leave)
        XCTAssertTrue(b.waitClosed())  // the relay's patch precedes `left`
        sa.send(RTPPacket(sequenceNumber: 1, timestamp: 1, ssrc: ja.you.ssrc, payload: [5]).encoded(), to: relay)
        XCTAssertNil(sb.receiveBytes(timeoutMs: 200))
    }

    /// The attack: a client a moderator muted keeps sending (it ignores `participantUpdated`),
    /// and everyone still hears it. The relay now drops what it sends until it unmutes itself.
    func testAModeratorsMuteIsEnforcedByTheRelay() throws {
        let (a, ja) = try join("alice")  // first in: moderator
        let (b, jb) = try join("bob")
        XCTAssertEqual(ja.you.role, .moderator)
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let sa = try UDPSocket(host: "127.0.0.1", port: 0)
        let sb = try UDPSocket(host: "127.0.0.1", port: 0)
        for (s, j) in [(sa, ja), (sb, jb)] {
            XCTAssertTrue(s.bindMedia(j, relay: relay))
        }
        func packet(_ n: UInt16) -> [UInt8] { RTPPacket(sequenceNumber: n, timestamp: UInt32(n) * 960, ssrc: jb.you.ssrc, payload: [9]).encoded() }
        sb.send(packet(1), to: relay)
        XCTAssertEqual(sa.receiveBytes(), packet(1), "heard before the mute")
        a.send(.muteParticipant(pid: jb.you.pid))
        XCTAssertNotNil(b.wait { if case .participantUpdated(let p, change: .audioMuted) = $0 { return p.pid == jb.you.pid }; return false })
        h.settleRelay()  // the patch is posted; the workers apply it before their next batch
        sb.send(packet(2), to: relay)
        sb.send(packet(3), to: relay)
        XCTAssertNil(sa.receiveBytes(timeoutMs: 300), "a muted client that keeps sending is not heard")
        XCTAssertEqual(h.server.relayCounters?.droppedMuted.load(ordering: .relaxed), 2)
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_relay_packets_dropped_total{reason="muted"} 2"#))
        // It still hears the room.
        sa.send(RTPPacket(sequenceNumber: 1, timestamp: 960, ssrc: ja.you.ssrc, payload: [1]).encoded(), to: relay)
        XCTAssertNotNil(sb.receiveBytes(), "muted, not deafened")
        // Unmuting itself (everyone sees it) lifts the mute at the relay.
        b.send(.setAudioMuted(false))
        XCTAssertNotNil(a.wait { if case .participantUpdated(let p, change: .audioUnmuted) = $0 { return p.pid == jb.you.pid }; return false })
        h.settleRelay()
        sb.send(packet(4), to: relay)
        XCTAssertEqual(sa.receiveBytes(), packet(4))
    }
}
