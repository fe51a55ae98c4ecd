import CallsSecurity
import Testing

@Suite("Crypto and call tokens")
struct CryptoTests {
    @Test func sha256KnownVector() {
        #expect(Crypto.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func hmacRFC4231Case2() {
        let mac = Crypto.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac.map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func randomIsRandomAndSized() {
        let a = Crypto.randomBytes(16), b = Crypto.randomBytes(16)
        #expect(a.count == 16)
        #expect(a != b)
        #expect(Crypto.randomHex(8).count == 16)
    }

    @Test func constantTimeEqual() {
        #expect(Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEqual([1, 2], [1, 2, 3]))
    }

    let signer = CallTokenSigner(secret: Array("0123456789abcdef0123456789abcdef".utf8))
    let claims = CallTokenClaims(app: "app1", sub: "alice", sid: "room", iat: 1000, exp: 2000)

    @Test func signAndVerify() throws {
        let t = signer.sign(claims)
        #expect(t.split(separator: ".").count == 3)
        #expect(try signer.verify(t, now: 1500) == claims)
    }

    @Test func expiredTokenRefused() {
        #expect(throws: CallTokenError.expired) { try signer.verify(signer.sign(claims), now: 2000) }
    }

    @Test func tamperedTokenRefused() {
        let t = signer.sign(claims)
        let parts = t.split(separator: ".").map(String.init)
        let otherPayload = Base64URL.encode(Array(#"{"app":"app1","exp":9999,"iat":1000,"sid":"room","sub":"mallory"}"#.utf8))
        #expect(throws: CallTokenError.badSignature) { try signer.verify(parts[0] + "." + otherPayload + "." + parts[2], now: 1500) }
        let other = CallTokenSigner(secret: Array("another secret, another secret!!".utf8))
        #expect(throws: CallTokenError.badSignature) { try other.verify(t, now: 1500) }
    }

    @Test func malformedAndWrongAlgorithm() {
        #expect(throws: CallTokenError.malformed) { try signer.verify("abc", now: 0) }
        #expect(throws: CallTokenError.malformed) { try signer.verify("a.b.c", now: 0) }
        let none = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let t = signer.sign(claims).split(separator: ".").map(String.init)
        #expect(throws: CallTokenError.unsupportedAlgorithm) { try signer.verify(none + "." + t[1] + "." + t[2], now: 1500) }
    }

    @Test func base64URLRoundTrip() {
        for n in 0..<20 {
            let bytes = (0..<n).map { UInt8(($0 * 37 + 251) % 256) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
            #expect(!Base64URL.encode(bytes).contains("="))
        }
    }
}
