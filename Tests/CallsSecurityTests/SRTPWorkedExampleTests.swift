import CallRoomTestSupport
import CallsCore
import CallsSecurity
import COpenSSL
import Foundation
import Testing

/// The worked example in docs/protocol.md ("SRTP, worked"): one packet protected with a known
/// key. Checked three ways: libsrtp2 (what the clients use) gives the bytes the doc prints; the
/// derivation the doc describes, done here from scratch with plain AES (OpenSSL's ECB and GCM),
/// gives the same bytes; and a receiver opens them. A third party following the doc gets the
/// packet right first time.
@Suite("SRTP worked example")
struct SRTPWorkedExampleTests {
    static let masterKey: [UInt8] = Array(0x00...0x0f)
    static let masterSalt: [UInt8] = Array(0xa0...0xab)
    static let epoch: UInt8 = 7
    static let ssrc: UInt32 = 0xCAFE_BABE
    static let sequence: UInt16 = 0x1234
    static let timestamp: UInt32 = 0x0001_E240
    static let opus: [UInt8] = [0xF8, 0xFF, 0xFE, 0x01, 0x02, 0x03, 0x04, 0x05]

    /// The RTP packet before protection: header with the level extension (voice, −30 dBov), then Opus.
    static var rtp: [UInt8] {
        var b = [UInt8](repeating: 0, count: 64)
        let h = b.withUnsafeMutableBytes { RTPPacket.writeHeader(into: $0, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc,
                                                                 audioLevel: .init(level: 30, voiceActivity: true)) }
        return Array(b[0..<h]) + opus
    }

    /// The hex blocks under a heading of docs/protocol.md, by their label ("rtp:", "srtp:" …).
    static func documented() throws -> [String: [UInt8]] {
        let doc = try String(contentsOfFile: BuiltProducts.packageRoot + "/docs/protocol.md", encoding: .utf8)
        guard let start = doc.range(of: "#### SRTP, worked") else { throw TestFailure("protocol.md has no \"SRTP, worked\" section") }
        let section = doc[start.upperBound...].prefix { _ in true }
        guard let open = section.range(of: "```"), let close = section[open.upperBound...].range(of: "```") else {
            throw TestFailure("the worked example has no code block")
        }
        var out: [String: [UInt8]] = [:]
        var label: String?
        for line in section[open.upperBound..<close.lowerBound].split(separator: "\n") {
            var text = Substring(line)
            if let colon = text.firstIndex(of: ":"), text[..<colon].allSatisfy({ $0.isLetter || $0 == " " }) {
                label = String(text[..<colon]).trimmingCharacters(in: .whitespaces)
                text = text[text.index(after: colon)...]
            }
            guard let label else { continue }
            let words: [String] = String(text).split(separator: " ").map(String.init)
            let hex = words.filter { $0.allSatisfy(\.isHexDigit) && $0.count % 2 == 0 }.joined()
            out[label, default: []] += Hex.decode(hex) ?? []
        }
        return out
    }

    func protectWithLibSRTP() throws -> [UInt8] {
        let sender = try SRTPSender(ssrc: Self.ssrc, key: SRTPKey(epoch: Self.epoch, material: Self.masterKey + Self.masterSalt))
        var b = Self.rtp + [UInt8](repeating: 0, count: 32)
        let n = try b.withUnsafeMutableBytes { raw throws(SRTPError) in try sender.protect(raw, length: Self.rtp.count) }
        return Array(b[0..<n])
    }

    @Test("the doc's bytes are what libsrtp2 sends")
    func documentedBytes() throws {
        let doc = try Self.documented()
        #expect(doc["master key"] == Self.masterKey + Self.masterSalt)
        #expect(doc["rtp"] == Self.rtp)
        #expect(doc["srtp"] == (try protectWithLibSRTP()))
        let (key, salt) = Self.sessionKeys()
        #expect(doc["session key"] == key)
        #expect(doc["session salt"] == salt)
        #expect(doc["nonce"] == Self.nonce(salt: salt))
    }

    @Test("the derivation the doc describes gives the same packet, done with plain AES")
    func independentDerivation() throws {
        let (key, salt) = Self.sessionKeys()
        let header = Array(Self.rtp.prefix(Self.rtp.count - Self.opus.count))
        let (cipher, tag) = try Self.gcm(key: key, nonce: Self.nonce(salt: salt), aad: header, plaintext: Self.opus)
        #expect(header + cipher + tag + [Self.epoch] == (try protectWithLibSRTP()))
    }

    @Test("a receiver holding the key opens it")
    func opens() throws {
        let receiver = try SRTPReceiver()
        try receiver.setKey(SRTPKey(epoch: Self.epoch, material: Self.masterKey + Self.masterSalt), for: Self.ssrc)
        var b = try protectWithLibSRTP()
        let count = b.count
        let n = try b.withUnsafeMutableBytes { raw throws(SRTPError) in try receiver.unprotect(raw, length: count) }
        #expect(Array(b[0..<n]) == Self.rtp)
    }

    // MARK: The derivation, as docs/protocol.md states it

    /// RFC 3711 §4.3.1 with AES-CM as PRF, the 12-byte salt padded to 14 with two zero bytes
    /// (RFC 7714 §11): for label L, x = salt14 with byte 7 XOR L; the key stream is
    /// AES-128(master key, x ‖ 00 00 + i) for i = 0, 1 … ; session key = label 0's first 16
    /// bytes, session salt = label 2's first 12.
    static func sessionKeys() -> (key: [UInt8], salt: [UInt8]) {
        func stream(label: UInt8, count: Int) -> [UInt8] {
            var x = masterSalt + [0, 0]
            x[7] ^= label
            var out: [UInt8] = []
            var counter: UInt16 = 0
            while out.count < count {
                let block = x + [UInt8(counter >> 8), UInt8(counter & 0xff)]
                out += aesBlock(key: masterKey, block)
                counter += 1
            }
            return Array(out.prefix(count))
        }
        return (stream(label: 0x00, count: 16), stream(label: 0x02, count: 12))
    }

    /// RFC 7714 §8.1: (00 00 ‖ SSRC ‖ ROC ‖ SEQ) XOR session salt; the ROC starts at 0.
    static func nonce(salt: [UInt8]) -> [UInt8] {
        let roc: UInt32 = 0
        var iv: [UInt8] = [0, 0]
        for v in [ssrc, roc] { iv += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        iv += [UInt8(sequence >> 8), UInt8(sequence & 0xff)]
        return zip(iv, salt).map { $0 ^ $1 }
    }

    static func aesBlock(key: [UInt8], _ block: [UInt8]) -> [UInt8] {
        guard let ctx = EVP_CIPHER_CTX_new() else { return [] }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: 32)
        var n: Int32 = 0
        EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), nil, key, nil)
        EVP_CIPHER_CTX_set_padding(ctx, 0)
        EVP_EncryptUpdate(ctx, &out, &n, block, Int32(block.count))
        return Array(out.prefix(16))
    }

    static func gcm(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8]) throws -> ([UInt8], [UInt8]) {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw TestFailure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var n: Int32 = 0
        var cipher = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1,
              EVP_EncryptInit_ex(ctx, nil, nil, key, nonce) == 1,
              EVP_EncryptUpdate(ctx, nil, &n, aad, Int32(aad.count)) == 1,
              EVP_EncryptUpdate(ctx, &cipher, &n, plaintext, Int32(plaintext.count)) == 1 else { throw TestFailure("AES-GCM") }
        let written = Int(n)
        guard EVP_EncryptFinal_ex(ctx, &cipher[written], &n) == 1,
              EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1 else { throw TestFailure("AES-GCM tag") }
        return (Array(cipher.prefix(written + Int(n))), tag)
    }

    @Test("print the example (for the doc)", .enabled(if: ProcessInfo.processInfo.environment["PRINT_SRTP_EXAMPLE"] != nil))
    func printExample() throws {
        let (key, salt) = Self.sessionKeys()
        print("master key:", Hex.encode(Self.masterKey + Self.masterSalt))
        print("rtp:", Hex.encode(Self.rtp))
        print("session key:", Hex.encode(key))
        print("session salt:", Hex.encode(salt))
        print("nonce:", Hex.encode(Self.nonce(salt: salt)))
        print("srtp:", Hex.encode(try protectWithLibSRTP()))
    }
}
