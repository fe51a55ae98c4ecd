import CallsCore
import COpenSSL
import Foundation

/// Thin wrappers over OpenSSL's digests, MACs and random generator. Stateless; safe from any thread.
public enum Crypto {
    /// `count` bytes from OpenSSL's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        // RAND_bytes fails only when the CSPRNG cannot be seeded; nothing safe can continue then.
        precondition(ok == 1, "OpenSSL RAND_bytes failed: the system random source is unavailable")
        return out
    }

    /// A random token of `bytes` bytes, hex encoded.
    public static func randomHex(_ bytes: Int) -> String {
        Hex.encode(randomBytes(bytes))
    }

    /// SHA-256 of `data`.
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o in _ = SHA256(d.baseAddress, d.count, o.baseAddress) }
        }
        return out
    }

    /// SHA-256 of a string's UTF-8 bytes, hex encoded.
    public static func sha256Hex(_ s: String) -> String {
        Hex.encode(sha256(Array(s.utf8)))
    }

    /// HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var len: UInt32 = 0
        key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress, &len)
                }
            }
        }
        return Array(out.prefix(Int(len)))
    }

    /// Compares two byte strings in time independent of where they differ.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 } }
    }
}

/// Base64url without padding (RFC 4648 §5), as JWT uses.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ s: String) -> [UInt8]? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map { Array($0) }
    }
}
