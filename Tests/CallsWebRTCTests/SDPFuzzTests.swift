import CallsCore
@testable import CallsWebRTC
import Foundation
import Testing

/// Browsers' offers mutated at random (a fixed seed: the same inputs every run) through the
/// parser and the answer: every one is read or refused with `SDPError`, none hangs or crashes
/// the process (sofia-sip is C, and an offer comes from anyone who may join a room).
@Suite("Session descriptions: mutated offers")
struct SDPFuzzTests {
    static let tokens = [" ", "  ", "/", ":", "=", "-", "0", "9", "4294967296", "18446744073709551616", "-1", "\t", "m=", "a=",
                         "c=IN IP4 ", "a=rtpmap:", "a=fmtp:", "a=group:BUNDLE ", "a=mid:", "a=ssrc:", "a=extmap:", "a=rtcp-fb:",
                         "UDP/TLS/RTP/SAVPF", "RTP/AVP", "webrtc-datachannel", "IN IP6 ::", "a=candidate:", "*", "%", ";", ","]

    /// One mutation of `text`.
    static func mutate(_ text: String, _ g: inout SplitMix64) -> String {
        var lines = text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        for _ in 0..<Int.random(in: 1...4, using: &g) {
            guard !lines.isEmpty else { break }
            let i = Int.random(in: 0..<lines.count, using: &g)
            switch Int.random(in: 0..<8, using: &g) {
            case 0: lines.remove(at: i)
            case 1: lines.insert(lines[i], at: Int.random(in: 0...lines.count, using: &g))
            case 2: lines[i] = String(lines[i].prefix(Int.random(in: 0...lines[i].count, using: &g)))
            case 3:
                var u = Array(lines[i].utf8)
                if !u.isEmpty { u[Int.random(in: 0..<u.count, using: &g)] = UInt8.random(in: 0x20...0x7e, using: &g) }
                lines[i] = String(decoding: u, as: UTF8.self)
            case 4:
                var u = Array(lines[i].utf8)
                let t = Array((tokens.randomElement(using: &g) ?? " ").utf8)
                u.insert(contentsOf: t, at: Int.random(in: 0...u.count, using: &g))
                lines[i] = String(decoding: u, as: UTF8.self)
            case 5: lines.insert((tokens.randomElement(using: &g) ?? "a=") + String(repeating: "9", count: Int.random(in: 0...40, using: &g)), at: i)
            case 6: lines[i] = lines[i].replacingOccurrences(of: " ", with: tokens.randomElement(using: &g) ?? " ")
            default: lines.swapAt(i, Int.random(in: 0..<lines.count, using: &g))
            }
        }
        return lines.joined(separator: Bool.random(using: &g) ? "\r\n" : "\n") + "\r\n"
    }

    @Test func mutatedOffersAreReadOrRefused() throws {
        let transport = SDPAnswer.Transport(iceUfrag: "crUf", icePwd: "callroomIcePasswordOf22c", fingerprint:
                                                "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
                                            address: "127.0.0.1", port: 40000, audioSSRC: 1111, videoSSRC: 2222, cname: "callroom")
        var g = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["SDP_FUZZ_SEED"] ?? "") ?? 38)
        let n = Int(ProcessInfo.processInfo.environment["SDP_FUZZ_N"] ?? "") ?? 3000
        var parsed = 0, answered = 0
        let offers = [SDPOffers.chromium, SDPOffers.firefoxAudio, SDPOffers.firefoxMaxBundle]
        for i in 0..<n {
            var text = offers[i % offers.count]
            for _ in 0..<Int.random(in: 1...3, using: &g) { text = Self.mutate(text, &g) }
            if ProcessInfo.processInfo.environment["SDP_FUZZ_TRACE"] != nil { FileHandle.standardError.write(Data(("#\(i)\n" + text).utf8)) }
            guard let offer = try? SessionDescription.parse(text) else { continue }
            parsed += 1
            if (try? SDPAnswer(offer: offer, transport: transport, sessionID: UInt64(i))) != nil { answered += 1 }
        }
        print("sdp fuzz: \(n) offers, \(parsed) read, \(answered) answered")
        #expect(parsed > 0 && parsed < n, "some mutations still read, some refused: \(parsed) of \(n)")
    }
}
