import CallsCore
import COpenSSL
import Foundation

/// Why a signing key was refused (never contains the key's bytes).
public struct SigningKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A private key loaded from PEM (PKCS#8 `BEGIN PRIVATE KEY`, as Apple's `.p8` files and
/// Google's service-account JSON carry them), owned by this object and freed with it, that
/// signs JWTs: ES256 (P-256, JOSE's raw `r‖s` signature) or RS256 (RSA PKCS#1 v1.5).
///
/// Thread rules: immutable after `init`; `sign` may be called from any thread (OpenSSL's
/// `EVP_PKEY` is safe for concurrent signing with separate contexts).
public final class JWTSigner: @unchecked Sendable {
    public enum Algorithm: String, Sendable { case es256 = "ES256", rs256 = "RS256" }

    public let algorithm: Algorithm
    private let key: OpaquePointer

    /// Parses `pem`; the key type must match `algorithm` (an EC P-256 key for ES256, RSA ≥ 2048
    /// bits for RS256).
    public init(pem: String, algorithm: Algorithm) throws(SigningKeyError) {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let parsed else { throw SigningKeyError(message: "not a PEM private key") }
        switch algorithm {
        case .es256:
            guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC, EVP_PKEY_get_bits(parsed) == 256 else {
                EVP_PKEY_free(parsed)
                throw SigningKeyError(message: "ES256 needs an EC P-256 private key")
            }
        case .rs256:
            guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_RSA, EVP_PKEY_get_bits(parsed) >= 2048 else {
                EVP_PKEY_free(parsed)
                throw SigningKeyError(message: "RS256 needs an RSA private key of at least 2048 bits")
            }
        }
        self.algorithm = algorithm
        key = parsed
    }

    deinit { EVP_PKEY_free(key) }

    /// `header.claims.signature`, base64url without padding. `header` gets `alg` (and `typ`).
    public func sign(header: [String: String], claims: some Encodable) throws(SigningKeyError) -> String {
        var h = header
        h["alg"] = algorithm.rawValue
        h["typ"] = "JWT"
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let hj = try? enc.encode(h), let cj = try? enc.encode(claims) else { throw SigningKeyError(message: "claims do not encode") }
        let input = Base64URL.encode(Array(hj)) + "." + Base64URL.encode(Array(cj))
        return input + "." + Base64URL.encode(try signature(Array(input.utf8)))
    }

    /// The JWS signature of `message` (SHA-256; ECDSA as raw 32-byte `r‖s`).
    func signature(_ message: [UInt8]) throws(SigningKeyError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw SigningKeyError(message: "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { throw SigningKeyError(message: "EVP_DigestSignInit failed") }
        var length = 0
        let ok = message.withUnsafeBufferPointer { m in EVP_DigestSign(ctx, nil, &length, m.baseAddress, m.count) }
        guard ok == 1 else { throw SigningKeyError(message: "EVP_DigestSign failed") }
        var der = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBufferPointer { m in
            der.withUnsafeMutableBufferPointer { d in EVP_DigestSign(ctx, d.baseAddress, &length, m.baseAddress, m.count) }
        }
        guard signed == 1 else { throw SigningKeyError(message: "EVP_DigestSign failed") }
        der.removeLast(der.count - length)
        guard algorithm == .es256 else { return der }
        // OpenSSL writes ECDSA signatures as DER SEQUENCE{r, s}; JWS wants r and s as 32 bytes each.
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { d in
            var p: UnsafePointer<UInt8>? = d.baseAddress
            return d2i_ECDSA_SIG(nil, &p, d.count)
        }
        guard let sig else { throw SigningKeyError(message: "malformed ECDSA signature") }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        let r = ECDSA_SIG_get0_r(sig), s = ECDSA_SIG_get0_s(sig)
        let wrote = out.withUnsafeMutableBufferPointer { o in
            guard let base = o.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard wrote else { throw SigningKeyError(message: "ECDSA signature out of range") }
        return out
    }
}
