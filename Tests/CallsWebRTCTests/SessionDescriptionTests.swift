import CallsCore
@testable import CallsWebRTC
import Foundation
import Testing

@Suite("Session descriptions: browsers' offers read with sofia-sip, answers written and read back")
struct SessionDescriptionTests {
    let transport = SDPAnswer.Transport(iceUfrag: "crUf", icePwd: "callroomIcePasswordOf22c", fingerprint:
                                            "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
                                        address: "127.0.0.1", port: 40000, audioSSRC: 1111, videoSSRC: 2222, cname: "callroom")

    @Test func chromiumsOfferIsRead() throws {
        let offer = try SessionDescription.parse(SDPOffers.chromium)
        #expect(offer.bundle == ["0", "1", "2"])
        #expect(offer.media.map(\.kind) == [.audio, .video, .application])
        #expect(offer.media.map(\.mid) == ["0", "1", "2"])
        #expect(offer.media[2].direction == .sendrecv, "no direction attribute: sendrecv (RFC 8866 §6.7)")
        let audio = offer.media[0], video = offer.media[1]
        #expect(audio.proto == "UDP/TLS/RTP/SAVPF")
        #expect(audio.iceUfrag == "4ZcD" && audio.icePwd == "2/1muCWoOi3uLifh0NuRHlMJ")
        #expect(audio.fingerprint?.algorithm == "sha-256")
        #expect(audio.setup == "actpass")
        #expect(audio.rtcpMux)
        #expect(audio.direction == .sendrecv)
        let opus = try #require(audio.codecs.first { $0.name == "opus" })
        #expect(opus.payloadType == 111 && opus.clockRate == 48000 && opus.channels == 2)
        #expect(opus.parameters == "minptime=10;useinbandfec=1")
        #expect(opus.feedback == ["transport-cc"])
        #expect(audio.codecs.contains { $0.name == "red" && $0.parameters == "111/111" })
        #expect(audio.extensions[1] == "urn:ietf:params:rtp-hdrext:ssrc-audio-level")
        #expect(audio.ssrcs == [3221717890])
        let vp8 = try #require(video.codecs.first { $0.name == "VP8" })
        #expect(vp8.payloadType == 96)
        #expect(vp8.feedback == ["goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"])
        #expect(video.ssrcs == [1876233011, 2839442094])
    }

    @Test func firefoxsSessionLevelTransportReachesEachSection() throws {
        let offer = try SessionDescription.parse(SDPOffers.firefoxAudio)
        let audio = try #require(offer.media.first)
        #expect(audio.fingerprint?.value.hasPrefix("1C:2B") == true, "the session's fingerprint")
        #expect(audio.iceUfrag == "0f1e2d3c")
        #expect(audio.extensions[2] == "urn:ietf:params:rtp-hdrext:csrc-audio-level", "an extmap with a direction")
        #expect(audio.codecs.first { $0.payloadType == 109 }?.parameters == "maxplaybackrate=48000;stereo=1;useinbandfec=1")
    }

    @Test func chromiumIsAnsweredWithOpusAndVP8OnOneBundleAndTheDataChannelRefused() throws {
        let offer = try SessionDescription.parse(SDPOffers.chromium)
        let answer = try SDPAnswer(offer: offer, transport: transport, sessionID: 42)
        let a = answer.description
        #expect(a.iceLite)
        #expect(a.bundle == ["0", "1"])
        #expect(a.media.map(\.kind) == [.audio, .video, .application])
        #expect(a.media.map(\.mid) == ["0", "1", "2"], "every section answered, in the offer's order, mids kept")
        #expect(a.media[2].isRejected)
        #expect(answer.payloadTypes == ["0": 111, "1": 96], "the browser's payload types")
        let audio = a.media[0], video = a.media[1]
        #expect(audio.codecs.map(\.name) == ["opus", "red"] && audio.codecs[0].channels == 2)
        #expect(audio.codecs[0].parameters == "minptime=10;useinbandfec=1")
        #expect(answer.redPayloadTypes == ["0": 63] && audio.codecs[1].parameters == "111/111", "RED over Opus at 111, as offered")
        #expect(audio.extensions == [1: "urn:ietf:params:rtp-hdrext:ssrc-audio-level", 4: "urn:ietf:params:rtp-hdrext:sdes:mid"],
                "the level and the mid, at the browser's ids; nothing we would not send")
        #expect(video.codecs.map(\.name) == ["VP8"])
        #expect(video.codecs[0].feedback == ["nack", "nack pli", "ccm fir", "goog-remb"], "no transport-cc: not implemented")
        for m in [audio, video] {
            #expect(m.port == 40000 && m.setup == "passive" && m.rtcpMux && m.direction == .sendrecv)
            #expect(m.iceUfrag == "crUf" && m.fingerprint?.value == transport.fingerprint)
        }
        #expect(audio.ssrcs == [1111] && video.ssrcs == [2222])
        #expect(answer.text.contains("a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"))
        #expect(!answer.text.contains("\n\n") && answer.text.hasSuffix("\r\n"))
    }

    /// Firefox's max-bundle offer: its bundle-only sections (port 0) are live and answered on
    /// the one transport (before, they were taken for refused and Firefox sent no video).
    @Test func firefoxsBundleOnlySectionsAreAnsweredNotRefused() throws {
        let offer = try SessionDescription.parse(SDPOffers.firefoxMaxBundle)
        #expect(offer.media.map(\.bundleOnly) == [false, true, true, true])
        #expect(offer.media.allSatisfy { !$0.isRejected })
        let answer = try SDPAnswer(offer: offer, transport: transport, sessionID: 7)
        let a = answer.description
        #expect(a.bundle == ["0", "1", "2", "3"])
        #expect(a.media.allSatisfy { $0.port == 40000 && !$0.isRejected })
        #expect(answer.payloadTypes == ["0": 109, "1": 120, "2": 109, "3": 120], "Firefox's payload types")
        #expect(a.media.map(\.direction) == [.recvonly, .recvonly, .sendonly, .sendonly])
        #expect(answer.redPayloadTypes.isEmpty)
        // Its session id stays under 2^63, whatever id it is given (Firefox refuses a larger one).
        let big = try SDPAnswer(offer: offer, transport: transport, sessionID: .max)
        #expect(big.text.contains("o=- \(Int64.max) 2 IN IP4 "))
        // A section that is port 0 without bundle-only stays refused.
        let stopped = try SessionDescription.parse(SDPOffers.firefoxMaxBundle.replacingOccurrences(of: "a=bundle-only\r\na=recvonly\r\na=ice-pwd:f7f13390906194273d34192d8df2115c\r\na=ice-ufrag:93a0e347\r\na=mid:3",
                                                                                                      with: "a=recvonly\r\na=ice-pwd:f7f13390906194273d34192d8df2115c\r\na=ice-ufrag:93a0e347\r\na=mid:3"))
        #expect(stopped.media.map(\.isRejected) == [false, false, false, true])
    }

    /// Firefox's Opus is at 109: RED's blocks would need rewriting, so RED is not taken there.
    @Test func redIsTakenOnlyOverOpusAt111() throws {
        let offer = try SessionDescription.parse(SDPOffers.firefoxAudio.replacingOccurrences(of: "m=audio 9 UDP/TLS/RTP/SAVPF 109 9 0 8 101",
                                                                                           with: "m=audio 9 UDP/TLS/RTP/SAVPF 109 63 9 0 8 101")
                                                 .replacingOccurrences(of: "a=rtpmap:109 opus/48000/2\r\n", with: "a=rtpmap:109 opus/48000/2\r\na=rtpmap:63 red/48000/2\r\n"))
        #expect(offer.media[0].codecs.contains { $0.name == "red" })
        let answer = try SDPAnswer(offer: offer, transport: transport, sessionID: 1)
        #expect(answer.redPayloadTypes.isEmpty && !answer.text.contains("red/"))
    }

    @Test func aSectionWeDoNotSendOnIsRecvOnlyAndASendOnlyOfferIsReceived() throws {
        var t = transport
        t.videoSSRC = nil
        let answer = try SDPAnswer(offer: try SessionDescription.parse(SDPOffers.chromium), transport: t, sessionID: 1)
        #expect(answer.description.media[1].direction == .recvonly)
        #expect(answer.description.media[1].ssrcs.isEmpty)
        let sendOnly = SDPOffers.firefoxAudio.replacingOccurrences(of: "a=sendrecv\r\na=extmap:1", with: "a=sendonly\r\na=extmap:1")
        let a2 = try SDPAnswer(offer: try SessionDescription.parse(sendOnly), transport: transport, sessionID: 2)
        #expect(a2.description.media[0].direction == .recvonly)
        #expect(a2.description.media[0].ssrcs.isEmpty, "we say nothing of a stream we do not send")
    }

    @Test func offersWeCannotServeAreRefusedSayingWhy() throws {
        #expect(throws: SDPError.notBundled) {
            try SDPAnswer(offer: try SessionDescription.parse(SDPOffers.chromium.replacingOccurrences(of: "a=group:BUNDLE 0 1 2\r\n", with: "")),
                          transport: transport, sessionID: 1)
        }
        let noOpus = SDPOffers.firefoxAudio.replacingOccurrences(of: "a=rtpmap:109 opus/48000/2\r\n", with: "a=rtpmap:109 ISAC/16000\r\n")
        #expect(throws: SDPError.noCommonCodec) {
            try SDPAnswer(offer: try SessionDescription.parse(noOpus), transport: transport, sessionID: 1)
        }
        let noKeys = SDPOffers.firefoxAudio.replacingOccurrences(of: "a=fingerprint:", with: "a=x-fingerprint:")
        #expect(throws: SDPError.missingTransport(mid: "0")) {
            try SDPAnswer(offer: try SessionDescription.parse(noKeys), transport: transport, sessionID: 1)
        }
        #expect(throws: SDPError.tooLarge(bytes: SDPError.maxBytes + 1)) {
            try SessionDescription.parse(String(repeating: "a", count: SDPError.maxBytes + 1))
        }
        do {
            _ = try SessionDescription.parse("hello, I am not SDP")
            Issue.record("parsed")
        } catch {
            guard case .malformed(let why) = error else { Issue.record("\(error)"); return }
            #expect(!why.isEmpty)
        }
    }

    /// sofia-sip 1.12.11 never returns from these (its format loop stops advancing): each must be
    /// refused by the precheck before the parser sees it.
    @Test func mediaLinesTheParserWouldLoopOnAreRefusedFirst() {
        let audio = "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126\r\n"
        let bad = ["m=audio 9 A\u{e9}B 1\r\n", "m=audio 9 UDP/TLS/RTP/SAVPF ;11\r\n", "m=audio 9 UDP/TLS/RT=/SAVPF 111\r\n",
                   "m=audio 9 UDP/TLS/RTP/SAVPF 111 (63\r\n", "m=audio 9 UDP/TLS/RTP/SAVPF 111  63\r\n", "m=audio 9/x UDP 1\r\n",
                   " \tm=audio 9 X/Y \"1\r\n", "m=audio 9 UDP/TLS/RTP/SAVPF\r\n"]
        #expect(SDPOffers.chromium.contains(audio))
        for line in bad {
            do {
                _ = try SessionDescription.parse(SDPOffers.chromium.replacingOccurrences(of: audio, with: line))
                Issue.record("parsed \(line.debugDescription)")
            } catch {
                guard case .malformed(let why) = error else { Issue.record("\(error)"); continue }
                #expect(why.hasPrefix("line "), "\(why)")
            }
        }
        #expect(throws: SDPError.self) { try SessionDescription.parse("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=\u{0}\r\n") }
    }

    /// 3,000 offers mangled by a seeded generator (bytes replaced, inserted, deleted, lines
    /// swapped) all come back, parsed or refused; none traps or hangs.
    @Test func mangledOffersAlwaysComeBack() {
        var rng = SplitMix64(seed: 0x5D9)  // (seeded: the same mangling every run)
        let pool = Array(" ;:/=\"(),<>?@[\\]{}\t\r\n\u{0}~*".utf8) + [0xC3, 0xA9, 0xFF, 0x80]
        var parsed = 0, refused = 0
        for i in 0..<3000 {
            var bytes = Array((i % 2 == 0 ? SDPOffers.chromium : SDPOffers.firefoxAudio).utf8)
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 4 {
                case 0: bytes[at] = pool[Int(rng.next() % UInt64(pool.count))]
                case 1: bytes.insert(pool[Int(rng.next() % UInt64(pool.count))], at: at)
                case 2: bytes.remove(at: at)
                default: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                }
            }
            if (try? SessionDescription.parse(String(decoding: bytes, as: UTF8.self))) != nil { parsed += 1 } else { refused += 1 }
        }
        #expect(parsed + refused == 3000)
        #expect(refused > 100 && parsed > 100, "parsed \(parsed), refused \(refused)")
    }
}
