import CallsCore
import COpenSSL
import Foundation

/// A certificate and its private key, PEM, and the certificate's SHA-256 fingerprint.
public struct TLSIdentity: Sendable, Equatable {
    public var certificatePEM: String
    public var privateKeyPEM: String
    /// `AB:CD:…` (32 bytes), as browsers and `openssl x509 -fingerprint -sha256` show it.
    public var fingerprint: String
}

/// Why a certificate could not be made or read.
public struct CertificateError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Self-signed certificates for development servers (`callroomd --tls-self-signed`), made with
/// OpenSSL: an EC P-256 key, SHA-256 signature, subjectAltName for the names and addresses
/// given, valid for `days`. Stateless; any thread.
public enum SelfSignedCertificate {
    public static func generate(commonName: String, dnsNames: [String], ipAddresses: [String], days: Int = 365) throws(CertificateError) -> TLSIdentity {
        func fail(_ what: String) -> CertificateError {
            ERR_clear_error()
            return CertificateError(message: "cannot make a certificate: \(what)")
        }
        guard let kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw fail("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(kctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(kctx) == 1, EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kctx, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(kctx, &key) == 1, let pkey = key else { throw fail("key generation") }
        defer { EVP_PKEY_free(pkey) }
        guard let x = X509_new() else { throw fail("X509_new") }
        defer { X509_free(x) }
        let serial = Crypto.randomBytes(16)
        var ok = X509_set_version(x, 2) == 1
        if let bn = serial.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 16, nil) }) {
            BN_set_bit(bn, 127)  // positive, full length
            ok = ok && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nil
            BN_free(bn)
        } else { ok = false }
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -300) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(x), days * 86_400) != nil
        ok = ok && X509_set_pubkey(x, pkey) == 1
        let name = X509_get_subject_name(x)
        ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1
        ok = ok && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, "CallRoom development", -1, -1, 0) == 1
        ok = ok && X509_set_issuer_name(x, name) == 1
        guard ok else { throw fail("certificate fields") }
        let alt = (dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }).joined(separator: ",")
        var v3 = X509V3_CTX()
        callroom_x509v3_self_ctx(&v3, x)
        for (nid, value) in [(NID_subject_alt_name, alt), (NID_basic_constraints, "critical,CA:FALSE"),
                             (NID_key_usage, "critical,digitalSignature"), (NID_ext_key_usage, "serverAuth")] where !value.isEmpty {
            guard let ext = X509V3_EXT_conf_nid(nil, &v3, nid, value) else { throw fail("extension \(value)") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else { throw fail("extension \(value)") }
        }
        guard X509_sign(x, pkey, EVP_sha256()) > 0 else { throw fail("signing") }
        return TLSIdentity(certificatePEM: try pem { PEM_write_bio_X509($0, x) }, privateKeyPEM: try pem { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) },
                           fingerprint: try fingerprint(x))
    }

    /// Checks that `certificatePEM` and `privateKeyPEM` parse and belong together; returns the
    /// certificate's fingerprint. Messages never contain the key.
    public static func check(certificatePEM: String, privateKeyPEM: String) throws(CertificateError) -> String {
        let cert = try readCertificate(certificatePEM)
        defer { X509_free(cert) }
        guard let key = withBIO(privateKeyPEM, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            ERR_clear_error()
            throw CertificateError(message: "the private key is not PEM (or is encrypted)")
        }
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(cert, key) == 1 else { ERR_clear_error(); throw CertificateError(message: "the private key does not match the certificate") }
        return try fingerprint(cert)
    }

    /// The SHA-256 fingerprint of the first certificate in `pem`.
    public static func fingerprint(pem: String) throws(CertificateError) -> String {
        let cert = try readCertificate(pem)
        defer { X509_free(cert) }
        return try fingerprint(cert)
    }

    /// The first certificate in `pem` (the caller frees it).
    static func readCertificate(_ pem: String) throws(CertificateError) -> OpaquePointer {
        guard let cert = withBIO(pem, { PEM_read_bio_X509($0, nil, nil, nil) }) else {
            ERR_clear_error()
            throw CertificateError(message: "the certificate is not PEM")
        }
        return cert
    }

    /// Runs `read` on a read-only memory BIO over `text`'s bytes, freed afterwards.
    static func withBIO(_ text: String, _ read: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
    }

    static func fingerprint(_ x: OpaquePointer) throws(CertificateError) -> String {
        var md = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var len: UInt32 = 0
        guard X509_digest(x, EVP_sha256(), &md, &len) == 1 else { throw CertificateError(message: "X509_digest failed") }
        return md.prefix(Int(len)).map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    private static func pem(_ write: (OpaquePointer?) -> Int32) throws(CertificateError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CertificateError(message: "BIO_new failed") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw CertificateError(message: "PEM write failed") }
        var out = [UInt8](repeating: 0, count: 16_384)
        let n = out.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
        guard n > 0 else { throw CertificateError(message: "PEM read failed") }
        return String(decoding: out.prefix(Int(n)), as: UTF8.self)
    }
}
