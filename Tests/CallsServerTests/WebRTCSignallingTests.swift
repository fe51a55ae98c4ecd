@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import CallsRelay
import CallsSecurity
import Foundation
import XCTest

/// The signalling side of a browser's leg over real WebSockets: an offer is answered (ICE-lite,
/// the gateway's port, the room's other senders on the browser's receiving sections) or refused
/// saying why; the leg goes when its participant leaves.
final class WebRTCSignallingTests: XCTestCase {
    /// A browser-shaped offer: audio and video it sends, one audio and one video section to receive on.
    static let offer = [
        "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1 2 3",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111 63", "c=IN IP4 0.0.0.0", "a=mid:0", "a=sendonly", "a=rtcp-mux",
        "a=ice-ufrag:brUf", "a=ice-pwd:browserIcePasswordOf24ch", "a=setup:actpass",
        "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
        "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "a=rtpmap:111 opus/48000/2", "a=rtpmap:63 red/48000/2", "a=ssrc:11 cname:b",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:1", "a=sendonly", "a=rtcp-mux",
        "a=ice-ufrag:brUf", "a=ice-pwd:browserIcePasswordOf24ch", "a=setup:actpass",
        "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
        "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack pli", "a=ssrc:12 cname:b",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:2", "a=recvonly", "a=rtcp-mux",
        "a=ice-ufrag:brUf", "a=ice-pwd:browserIcePasswordOf24ch", "a=setup:actpass",
        "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
        "a=rtpmap:111 opus/48000/2",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:3", "a=recvonly", "a=rtcp-mux",
        "a=ice-ufrag:brUf", "a=ice-pwd:browserIcePasswordOf24ch", "a=setup:actpass",
        "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
        "a=rtpmap:96 VP8/90000",
    ].joined(separator: "\r\n") + "\r\n"

    func testAnOfferIsAnsweredWithTheRoomsSenderAndTheLegGoesWithItsParticipant() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let native = try SignalProbe(url: h.server.url)
        native.send(.join(.init(callToken: try h.callToken(uid: "term", session: "rtc"))))
        let term = try XCTUnwrap(native.joined()).you
        let web = try SignalProbe(url: h.server.url)
        web.send(.join(.init(callToken: try h.callToken(uid: "web", session: "rtc"), sessionType: .video)))
        XCTAssertNotNil(web.joined())
        web.send(.webrtcOffer(sdp: Self.offer))
        guard case .webrtcAnswer(let sdp)? = web.wait(timeout: 5, { if case .webrtcAnswer = $0 { return true }; if case .error = $0 { return true }; return false }) else {
            return XCTFail("no answer: \(web.all.suffix(3))")
        }
        XCTAssertTrue(sdp.contains("a=ice-lite\r\n") && sdp.contains("a=setup:passive\r\n"), sdp)
        let port = try XCTUnwrap(h.server.metricsText().split(separator: "\n").first { $0.hasPrefix("callroom_webrtc_legs ") })
        XCTAssertEqual(port, "callroom_webrtc_legs 1")
        XCTAssertTrue(sdp.contains("a=ssrc:\(term.ssrc) msid:\(term.pid) audio-\(term.ssrc)"), "the terminal's audio on the receiving section: \(sdp)")
        XCTAssertTrue(sdp.contains("a=ssrc:\(term.videoSsrc ?? 0) msid:\(term.pid) video-\(term.videoSsrc ?? 0)"), sdp)
        XCTAssertTrue(sdp.contains("m=audio") && sdp.contains(" 111 63\r\n") && sdp.contains("a=fmtp:63 111/111"), "RED taken over Opus at 111")
        // Offers are rationed: one right after another is refused (the page waits for each answer).
        web.send(.webrtcOffer(sdp: Self.offer))
        XCTAssertNotNil(web.wait(timeout: 5) { if case .error(.webrtcOfferRefused, let m) = $0 { return m.contains("Too many offers") }; return false })
        // Bad offers (each from a participant of its own): refused saying why, the connection stays.
        for (n, (bad, why)) in [("hello", "not a session description"), (Self.offer.replacingOccurrences(of: "a=group:BUNDLE 0 1 2 3\r\n", with: ""), "not bundled"),
                                (Self.offer.replacingOccurrences(of: "m=audio 9 UDP/TLS/RTP/SAVPF 111 63", with: "m=audio 9 UDP/TLS/RTP/SAVPF ;63"), "m= line")].enumerated() {
            let other = try SignalProbe(url: h.server.url)
            other.send(.join(.init(callToken: try h.callToken(uid: "bad\(n)", session: "rtc"))))
            XCTAssertNotNil(other.joined())
            other.send(.webrtcOffer(sdp: bad))
            let refused = other.wait(timeout: 5) { if case .error(.webrtcOfferRefused, let m) = $0 { return m.contains(why) }; return false }
            XCTAssertNotNil(refused, "\(why): \(other.all.suffix(2))")
            XCTAssertFalse(other.isClosed)
        }
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_refused_total{cause="webrtc_offer"} 4"#), "refusals counted")
        XCTAssertFalse(web.isClosed)
        web.send(.leave)
        XCTAssertTrue(web.waitClosed())
        XCTAssertTrue(eventually(3) { h.server.metricsText().contains("callroom_webrtc_legs 0") })
    }

    func testAServerWithoutTheGatewayRefusesOffers() throws {
        let h = try ServerHarness { $0.webrtcPort = nil }
        defer { h.stop(); h.removeData() }
        let web = try SignalProbe(url: h.server.url)
        web.send(.join(.init(callToken: try h.callToken(uid: "web", session: "off"))))
        XCTAssertNotNil(web.joined())
        web.send(.webrtcOffer(sdp: Self.offer))
        XCTAssertNotNil(web.wait(timeout: 5) { if case .error(.webrtcOfferRefused, let m) = $0 { return m.contains("no WebRTC gateway") }; return false })
        XCTAssertFalse(h.server.metricsText().contains("callroom_webrtc_legs"))
    }

    /// A renegotiation keeps the browser's leg (same ICE credentials on our side); a new peer
    /// connection on the same page — a new certificate or new ICE credentials — gets a new leg.
    func testANewPeerConnectionOnTheSamePageGetsANewLeg() throws {
        let relay = try MediaRelay(host: "127.0.0.1", port: 0)
        defer { relay.close() }
        let gateway = try WebRTCGateway(host: "127.0.0.1", port: 0, candidateAddress: "127.0.0.1", relay: relay, log: ServerLog(level: .error)) { _, _ in }
        defer { gateway.stop() }
        let key = WireMediaKey(ssrc: 7, epoch: 0, key: Base64URL.encode([UInt8](repeating: 1, count: 28)), videoSsrc: 8)
        func answer(_ sdp: String) throws -> String {
            let r = WebRTCOfferRequest(connection: ConnectionID(node: "n", local: 1), tunnel: RoomCore.webrtcTunnel(1), session: "s", pid: "p", ownKey: key, senders: [], sdp: sdp)
            guard case .webrtcAnswer(let text) = gateway.answer(r) else { throw TestFailure("no answer") }
            return try XCTUnwrap(text.split(separator: "\r\n").first { $0.hasPrefix("a=ice-ufrag:") }.map(String.init))
        }
        let first = try answer(Self.offer)
        XCTAssertEqual(try answer(Self.offer), first, "a renegotiation keeps the leg")
        XCTAssertNotEqual(try answer(Self.offer.replacingOccurrences(of: "a=ice-ufrag:brUf", with: "a=ice-ufrag:brU2")), first, "an ICE restart: a new leg")
        let second = try answer(Self.offer.replacingOccurrences(of: "sha-256 AA:BB", with: "sha-256 AB:BB"))
        XCTAssertNotEqual(second, first, "a new certificate: a new leg")
        XCTAssertEqual(gateway.legCount, 1, "the old legs are gone")
    }

    /// In a cluster a room's node answers browsers whose WebSockets are on other nodes, and node
    /// ids are per node: two connections may both be "5". Legs are the participants' (their tunnel
    /// ids), and a connection is found whole — one node's connection 5 never reaches the other's leg.
    func testConnectionsOfTwoNodesWithTheSameLocalIdHaveTheirOwnLegs() throws {
        let relay = try MediaRelay(host: "127.0.0.1", port: 0)
        defer { relay.close() }
        let gateway = try WebRTCGateway(host: "127.0.0.1", port: 0, candidateAddress: "127.0.0.1", relay: relay, log: ServerLog(level: .error)) { _, _ in }
        defer { gateway.stop() }
        func answer(node: String, member: UInt64) throws -> String {
            let key = WireMediaKey(ssrc: UInt32(member), epoch: 0, key: Base64URL.encode([UInt8](repeating: UInt8(member), count: 28)), videoSsrc: UInt32(member) + 100)
            let r = WebRTCOfferRequest(connection: ConnectionID(node: node, local: 5), tunnel: RoomCore.webrtcTunnel(member), session: "s", pid: "p\(member)",
                                       ownKey: key, senders: [], sdp: Self.offer)
            let reply = gateway.answer(r)
            guard case .webrtcAnswer(let text) = reply else { throw TestFailure("no answer: \(reply)") }
            return try XCTUnwrap(text.split(separator: "\r\n").first { $0.hasPrefix("a=ice-ufrag:") }.map(String.init))
        }
        let onA = try answer(node: "node-a", member: 1), onB = try answer(node: "node-b", member: 2)
        XCTAssertNotEqual(onA, onB)
        XCTAssertEqual(gateway.legCount, 2, "one leg each")
        gateway.observe(.left(reason: .left, by: nil), to: ConnectionID(node: "node-b", local: 5))
        XCTAssertEqual(gateway.legCount, 1, "node B's connection 5 took its own leg only")
        XCTAssertEqual(try answer(node: "node-a", member: 1), onA, "node A's leg is still there (a renegotiation keeps it)")
        gateway.remove(ConnectionID(node: "node-c", local: 5))
        XCTAssertEqual(gateway.legCount, 1, "a connection without a leg removes nothing")
        XCTAssertEqual(RoomCore.webrtcTunnel(1) & (1 << 63), 1 << 63, "browser tunnels are apart from WebSocket ids")
        // A resumed participant renegotiates on its new connection: the leg follows it, and the
        // old connection's close takes nothing.
        let key = WireMediaKey(ssrc: 1, epoch: 0, key: Base64URL.encode([UInt8](repeating: 1, count: 28)), videoSsrc: 101)
        let resumed = WebRTCOfferRequest(connection: ConnectionID(node: "node-a", local: 9), tunnel: RoomCore.webrtcTunnel(1), session: "s", pid: "p1",
                                         ownKey: key, senders: [], sdp: Self.offer)
        guard case .webrtcAnswer = gateway.answer(resumed) else { return XCTFail("no answer on the new connection") }
        gateway.remove(ConnectionID(node: "node-a", local: 5))
        XCTAssertEqual(gateway.legCount, 1, "the old connection's close left the leg alone")
        gateway.remove(ConnectionID(node: "node-a", local: 9))
        XCTAssertEqual(gateway.legCount, 0, "the new connection's close took it")
    }
}
