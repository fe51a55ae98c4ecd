import CallsCore
import CallsSecurity
import CallsTransport
@testable import CallsWebRTC
import CallRoomTestSupport
import Foundation
import Testing

/// A browser's leg end to end in process: the "browser" is a DTLS client and an SRTP session
/// keyed by its own handshake (libsrtp and OpenSSL on both sides); the room side is CallRoom's
/// native `SRTPSender`/`SRTPReceiver` with signalled keys.
@Suite("A browser's leg: DTLS keys, its RTP in CallRoom's form to the room, the room's to it")
struct WebRTCPeerTests {
    static let ownSSRC: UInt32 = 0x1111_0001, ownVideo: UInt32 = 0x1111_0002
    static let otherSSRC: UInt32 = 0x2222_0001, otherVideo: UInt32 = 0x2222_0002

    static func key(_ ssrc: UInt32, video: UInt32, fill: UInt8, epoch: UInt8 = 0) -> WireMediaKey {
        WireMediaKey(ssrc: ssrc, epoch: epoch, key: Base64URL.encode([UInt8](repeating: fill, count: 28)), videoSsrc: video)
    }

    struct Browser {
        let dtls: DTLSEndpoint
        var srtp: PeerSRTPSession?
    }

    /// A peer and a browser with the handshake done through `receive`.
    static func connected() throws -> (WebRTCPeer, Browser) {
        let server = try SelfSignedCertificate.generate(commonName: "callroomd", dnsNames: [], ipAddresses: [])
        let browserID = try SelfSignedCertificate.generate(commonName: "browser", dnsNames: [], ipAddresses: [])
        let peer = try WebRTCPeer(connection: 7, localUfrag: "u", localPassword: "p", identity: server, remoteFingerprint: browserID.fingerprint,
                                  ownKey: key(ownSSRC, video: ownVideo, fill: 1), negotiated: .init(opus: 109, vp8: 120, levelID: 3))
        var browser = Browser(dtls: try DTLSEndpoint(role: .client, identity: browserID, remoteFingerprint: server.fingerprint))
        var toServer = [try browser.dtls.start()]
        var connected = false
        for _ in 0..<6 where !connected {
            var toBrowser: [[UInt8]] = []
            for d in toServer {
                for e in peer.receive(d) {
                    switch e {
                    case .reply(let datagrams): toBrowser += datagrams
                    case .connected: connected = true
                    case .failed(let why): Issue.record("handshake failed: \(why)")
                    default: break
                    }
                }
            }
            toServer = try toBrowser.map { try browser.dtls.receive($0) }.filter { !$0.isEmpty }
        }
        #expect(connected && browser.dtls.isConnected)
        browser.srtp = try PeerSRTPSession(keys: try browser.dtls.srtpKeys())
        peer.nominate(SocketAddress(host: "192.0.2.9", port: 5000)!)
        peer.setKeys([key(otherSSRC, video: otherVideo, fill: 2)])
        peer.configure(.init(opus: 109, vp8: 120, levelID: 3), forwarding: [otherSSRC, otherVideo])
        return (peer, browser)
    }

    /// A Chrome-shaped audio packet: its own SSRC, payload type 109, the level under id 3 and the mid under id 4.
    static func browserAudio(level: UInt8, payload: [UInt8]) -> [UInt8] {
        [0x90, 109, 0x12, 0x34, 0, 0, 0x03, 0xC0, 0xAB, 0xCD, 0xEF, 0x01,
         0xBE, 0xDE, 0x00, 0x02, 0x30, level, 0x40, UInt8(ascii: "0"), 0, 0, 0, 0] + payload
    }

    @Test func aBrowsersAudioReachesTheRoomInCallRoomsFormUnderTheParticipantsKey() throws {
        let (peer, browser) = try Self.connected()
        var packet = Self.browserAudio(level: 0x80 | 23, payload: Array("opus frame".utf8))
        let length = packet.count
        packet += [UInt8](repeating: 0, count: 32)
        let n = try packet.withUnsafeMutableBytes { try browser.srtp!.protect($0, length: length) }
        let events = peer.receive(Array(packet[0..<n]))
        guard case .toRoom(let native)? = events.first else { Issue.record("\(events)"); return }
        // A native receiver with the participant's signalled key reads it.
        let receiver = try SRTPReceiver()
        try receiver.setKey(SRTPKey(Self.key(Self.ownSSRC, video: Self.ownVideo, fill: 1))!, for: Self.ownSSRC)
        var plain = native
        let m = try plain.withUnsafeMutableBytes { try receiver.unprotect($0, length: native.count) }
        let rtp = Array(plain[0..<m])
        #expect(Array(rtp[0..<2]) == [0x90, 111], "X=1, no marker, payload type 111")
        #expect(Array(rtp[2..<8]) == [0x12, 0x34, 0, 0, 0x03, 0xC0], "sequence and timestamp kept")
        #expect(Array(rtp[8..<12]) == [0x11, 0x11, 0x00, 0x01], "the participant's SSRC")
        #expect(Array(rtp[12..<20]) == [0xBE, 0xDE, 0, 1, 0x10, 0x80 | 23, 0, 0], "the level under id 1, exactly as drawn")
        #expect(Array(rtp[20...]) == Array("opus frame".utf8))
    }

    @Test func theRoomsAudioReachesTheBrowserAtItsPayloadTypeAndLevelID() throws {
        let (peer, browser) = try Self.connected()
        let sender = try SRTPSender(ssrc: Self.otherSSRC, key: SRTPKey(Self.key(Self.otherSSRC, video: Self.otherVideo, fill: 2))!)
        var native: [UInt8] = [0x90, 111, 0, 7, 0, 0, 0x07, 0x80, 0x22, 0x22, 0x00, 0x01, 0xBE, 0xDE, 0, 1, 0x10, 0x85, 0, 0] + Array("hello".utf8)
        let length = native.count
        native += [UInt8](repeating: 0, count: 32)
        let n = try native.withUnsafeMutableBytes { try sender.protect($0, length: length) }
        guard case .send(var out, let to) = native.withUnsafeBytes({ peer.fromRoom(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) else {
            Issue.record("not forwarded"); return
        }
        #expect(to == SocketAddress(host: "192.0.2.9", port: 5000))
        let outLength = out.count
        let m = try out.withUnsafeMutableBytes { try browser.srtp!.unprotect($0, length: outLength) }
        let rtp = Array(out[0..<m])
        #expect(rtp[1] == 109 && Array(rtp[8..<12]) == [0x22, 0x22, 0x00, 0x01])
        #expect(rtp[16] == 0x30 && rtp[17] == 0x85, "the level under the browser's id 3")
        #expect(Array(rtp[20...]) == Array("hello".utf8))
        // The same packet again is a replay; a sender the browser has no section for is not sent.
        #expect(native.withUnsafeBytes({ peer.fromRoom(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) == .dropped(.badSRTP))
        peer.configure(.init(opus: 109, vp8: 120, levelID: 3), forwarding: [])
        var next: [UInt8] = [0x90, 111, 0, 8, 0, 0, 0x0B, 0x40, 0x22, 0x22, 0x00, 0x01, 0xBE, 0xDE, 0, 1, 0x10, 0x85, 0, 0, 1, 2] + [UInt8](repeating: 0, count: 32)
        let n2 = try next.withUnsafeMutableBytes { try sender.protect($0, length: 22) }
        #expect(next.withUnsafeBytes({ peer.fromRoom(UnsafeRawBufferPointer(rebasing: $0[0..<n2])) }) == .dropped(.notForwarded))
    }

    /// When its address withdraws consent (RFC 7675: the gateway's checks went unanswered), the
    /// room's media are not sent anywhere until the browser's next nomination.
    @Test func nothingIsSentOnceTheAddressWithdrawsItsConsent() throws {
        let (peer, _) = try Self.connected()
        let sender = try SRTPSender(ssrc: Self.otherSSRC, key: SRTPKey(Self.key(Self.otherSSRC, video: Self.otherVideo, fill: 2))!)
        func fromRoom(_ sequence: UInt8) throws -> WebRTCPeer.Forward {
            var native: [UInt8] = [0x90, 111, 0, sequence, 0, 0, 0x07, 0x80, 0x22, 0x22, 0x00, 0x01, 0xBE, 0xDE, 0, 1, 0x10, 0x85, 0, 0] + Array("hello".utf8)
            let length = native.count
            native += [UInt8](repeating: 0, count: 32)
            let n = try native.withUnsafeMutableBytes { try sender.protect($0, length: length) }
            return native.withUnsafeBytes { peer.fromRoom(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        let address = SocketAddress(host: "192.0.2.9", port: 5000)!, other = SocketAddress(host: "192.0.2.9", port: 5001)!
        #expect(!peer.withdraw(from: other), "not where its media go: nothing changes")
        guard case .send(_, let to) = try fromRoom(1) else { Issue.record("not sent"); return }
        #expect(to == address)
        #expect(peer.withdraw(from: address))
        #expect(try fromRoom(2) == .dropped(.noConsent))
        #expect(peer.address == nil)
        peer.nominate(address)
        guard case .send = try fromRoom(3) else { Issue.record("not sent after the next nomination"); return }
    }

    @Test func tamperedOrEarlyMediaIsDroppedAndKeyframeRequestsSurface() throws {
        let server = try SelfSignedCertificate.generate(commonName: "callroomd", dnsNames: [], ipAddresses: [])
        let fresh = try WebRTCPeer(connection: 1, localUfrag: "u", localPassword: "p", identity: server, remoteFingerprint: server.fingerprint,
                                   ownKey: Self.key(1, video: 2, fill: 1), negotiated: .init(opus: 111, vp8: 96, levelID: 1))
        #expect(fresh.receive(Self.browserAudio(level: 1, payload: [1])) == [.dropped(.beforeHandshake)])
        let (peer, browser) = try Self.connected()
        var packet = Self.browserAudio(level: 1, payload: [1, 2, 3])
        let length = packet.count
        packet += [UInt8](repeating: 0, count: 32)
        let n = try packet.withUnsafeMutableBytes { try browser.srtp!.protect($0, length: length) }
        packet[n - 1] ^= 1
        #expect(peer.receive(Array(packet[0..<n])) == [.dropped(.badSRTP)])
        // A PLI for the other participant's video comes out as a keyframe request for it.
        var pli = RTCPFeedback.keyframe(from: 0xABCD_EF01, media: Self.otherVideo).bytes
        let pliLength = pli.count
        pli += [UInt8](repeating: 0, count: 32)
        let p = try pli.withUnsafeMutableBytes { try browser.srtp!.protectRTCP($0, length: pliLength) }
        #expect(peer.receive(Array(pli[0..<p])) == [.keyframe(ssrc: Self.otherVideo)])
    }

    /// CallRoom's redundant audio to a browser that did not take RED: the packet's own frame.
    @Test func theRoomsRedundantAudioReachesABrowserWithoutREDAsItsPrimaryFrame() throws {
        let (peer, browser) = try Self.connected()
        let sender = try SRTPSender(ssrc: Self.otherSSRC, key: SRTPKey(Self.key(Self.otherSSRC, video: Self.otherVideo, fill: 2))!)
        // One redundant block (3 bytes, 960 samples back) and the primary (4 bytes).
        let red: [UInt8] = [0x80 | 111, 0x0F, 0x00, 0x03, 111, 9, 9, 9, 1, 2, 3, 4]
        var native: [UInt8] = [0x90, 63, 0, 9, 0, 0, 0x07, 0x80, 0x22, 0x22, 0x00, 0x01, 0xBE, 0xDE, 0, 1, 0x10, 0x85, 0, 0] + red
        let length = native.count
        native += [UInt8](repeating: 0, count: 32)
        let n = try native.withUnsafeMutableBytes { try sender.protect($0, length: length) }
        guard case .send(var out, _) = native.withUnsafeBytes({ peer.fromRoom(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) else {
            Issue.record("not forwarded"); return
        }
        let outLength = out.count
        let m = try out.withUnsafeMutableBytes { try browser.srtp!.unprotect($0, length: outLength) }
        #expect(out[1] == 109 && Array(out[20..<m]) == [1, 2, 3, 4], "Opus at the browser's type, the primary frame alone")
        // Headers that run past the payload: nothing.
        let cut: [UInt8] = [0x80, 63, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80 | 111, 0x0F]
        let header = cut.withUnsafeBytes { RTPRewrite.read($0, levelID: nil) }!
        #expect(cut.withUnsafeBytes { RTPRewrite.redPrimary($0, header) } == nil)
    }

    /// The room asks for a keyframe of the browser's video: a PLI for the SSRC the browser sends
    /// video from (none before its first video packet).
    @Test func aKeyframeRequestForTheBrowsersVideoIsAPLI() throws {
        let (peer, browser) = try Self.connected()
        #expect(peer.keyframeRequest() == nil, "no video from the browser yet")
        var video: [UInt8] = [0x80, 0x80 | 120, 0, 1, 0, 0, 0, 9, 0xB0, 0xB0, 0xB0, 0x01, 0x90, 0x80, 0x80, 0x01, 0x10, 0x02] + [UInt8](repeating: 0, count: 32)
        let n = try video.withUnsafeMutableBytes { try browser.srtp!.protect($0, length: 18) }
        guard case .toRoom? = peer.receive(Array(video[0..<n])).first else { Issue.record("the browser's video did not reach the room"); return }
        guard var (pli, _) = peer.keyframeRequest() else { Issue.record("no PLI"); return }
        let length = pli.count
        let m = try pli.withUnsafeMutableBytes { try browser.srtp!.unprotectRTCP($0, length: length) }
        #expect(pli.withUnsafeBytes { RTCPFeedback.parse(UnsafeRawBufferPointer(rebasing: $0[0..<m])) } == [.keyframe(from: Self.ownVideo, media: 0xB0B0_B001)])
    }

    @Test func aFlightIsCutIntoDatagramsAtRecordBoundaries() {
        func record(_ n: Int) -> [UInt8] { [22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 8) + [UInt8(n >> 8), UInt8(n & 0xFF)] + [UInt8](repeating: 7, count: n) }
        let flight = record(600) + record(500) + record(300) + record(100)
        let datagrams = WebRTCPeer.datagrams(of: flight)
        #expect(datagrams.map(\.count) == [613 + 513, 313 + 113])
        #expect(datagrams.joined().elementsEqual(flight))
    }

    /// The server's first flight is lost and the browser says nothing more: the leg resends it when
    /// its timer runs out (100 ms — before a browser's own 1 s), and the handshake completes.
    @Test func aLostServerFlightIsResentWhenItsTimerRunsOut() throws {
        let server = try SelfSignedCertificate.generate(commonName: "callroomd", dnsNames: [], ipAddresses: [])
        let browserID = try SelfSignedCertificate.generate(commonName: "browser", dnsNames: [], ipAddresses: [])
        let peer = try WebRTCPeer(connection: 7, localUfrag: "u", localPassword: "p", identity: server, remoteFingerprint: browserID.fingerprint,
                                  ownKey: Self.key(Self.ownSSRC, video: Self.ownVideo, fill: 1), negotiated: .init(opus: 109, vp8: 120, levelID: 3))
        let browser = try DTLSEndpoint(role: .client, identity: browserID, remoteFingerprint: server.fingerprint)
        #expect(peer.retransmitHandshake() == nil, "no address yet, nothing to resend")
        let address = SocketAddress(host: "192.0.2.9", port: 5000)!
        peer.nominate(address)
        let started = Date()
        var lost = 0
        for e in peer.receive(try browser.start()) { if case .reply(let d) = e { lost += d.count } }
        #expect(lost > 0, "the server's flight (lost on the way)")
        var again: (datagrams: [[UInt8]], to: SocketAddress)?
        #expect(eventually(3, poll: 0.01) { again = peer.retransmitHandshake(); return again != nil }, "resent when the timer ran out")
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.09 && waited < 0.9, "after about 100 ms, before a browser's 1 s: \(waited) s")
        #expect(again?.to == address)
        var toServer = try (again?.datagrams ?? []).map { try browser.receive($0) }.filter { !$0.isEmpty }
        var connected = false
        for _ in 0..<4 where !connected {
            var toBrowser: [[UInt8]] = []
            for d in toServer {
                for e in peer.receive(d) {
                    if case .reply(let datagrams) = e { toBrowser += datagrams }
                    if case .connected = e { connected = true }
                }
            }
            toServer = try toBrowser.map { try browser.receive($0) }.filter { !$0.isEmpty }
        }
        #expect(connected && browser.isConnected)
        #expect(peer.retransmitHandshake() == nil, "nothing to resend once connected")
    }
}
