import CallsCore
import CallsSecurity
import CallsTransport
import Foundation

/// TLS for the server's one TCP port: the operator's files, or a self-signed development
/// certificate, or none (loopback only); reloaded on SIGHUP.
extension CallServer {
    /// Resolves TLS: the given files (checked: they parse and belong together), or the
    /// self-signed development certificate, or none — which only loopback (or `allowPlainHTTP`) may use.
    func tls(dataDir: String) throws(ServerStartError) -> TLSFiles? {
        var files: TLSFiles?
        if configuration.tlsCertificate != nil || configuration.tlsPrivateKey != nil {
            guard let c = configuration.tlsCertificate, let k = configuration.tlsPrivateKey else {
                throw .tls("give both --tls-cert and --tls-key")
            }
            files = TLSFiles(certificate: c, privateKey: k)
        } else if configuration.tlsSelfSigned {
            let d = (dataDir as NSString).appendingPathComponent("tls")
            let f = TLSFiles(certificate: d + "/cert.pem", privateKey: d + "/key.pem")
            if !FileManager.default.fileExists(atPath: f.certificate) || !FileManager.default.fileExists(atPath: f.privateKey) {
                let host = configuration.host
                let isIP = host.allSatisfy { $0.isNumber || $0 == "." } || host.contains(":")
                let names = ["localhost"] + (isIP || host == "localhost" ? [] : [host])
                let ips = ["127.0.0.1"] + (isIP && host != "127.0.0.1" && host != "0.0.0.0" ? [host] : [])
                let id: TLSIdentity
                do { id = try SelfSignedCertificate.generate(commonName: names.last ?? "localhost", dnsNames: names, ipAddresses: ips) } catch {
                    throw .tls(error.message)
                }
                guard PrivateFiles.directory(d), PrivateFiles.write(Data(id.privateKeyPEM.utf8), to: f.privateKey),
                      PrivateFiles.write(Data(id.certificatePEM.utf8), to: f.certificate, mode: 0o644) else { throw .cannotWrite(d) }
                generatedCertificate = true
            }
            files = f
        }
        guard let files else {
            guard Self.isLoopback(configuration.host) || configuration.allowPlainHTTP else {
                throw .tls("refusing plain HTTP on \(configuration.host): tokens and keys would cross the network in the clear. "
                           + "Give --tls-cert and --tls-key (or --tls-self-signed for a test), or --allow-plain-http behind a TLS proxy")
            }
            return nil
        }
        if configuration.production, case let mode = PrivateFiles.mode(files.privateKey), let mode, mode & 0o077 != 0 {
            throw .tls("the TLS key \(files.privateKey) is readable by others (mode \(String(mode & 0o777, radix: 8))): chmod 600 it (refused under --production)")
        }
        tlsFingerprint = try Self.checkTLS(files)
        tlsFiles = files
        return files
    }

    private static func checkTLS(_ f: TLSFiles) throws(ServerStartError) -> String {
        guard let cert = FileManager.default.contents(atPath: f.certificate) else { throw .tls("cannot read the TLS certificate \(f.certificate)") }
        guard let key = FileManager.default.contents(atPath: f.privateKey) else { throw .tls("cannot read the TLS key \(f.privateKey)") }
        do {
            return try SelfSignedCertificate.check(certificatePEM: String(decoding: cert, as: UTF8.self), privateKeyPEM: String(decoding: key, as: UTF8.self))
        } catch {
            throw .tls("TLS \(f.certificate) / \(f.privateKey): \(error.message)")
        }
    }

    /// Loads the TLS files again (SIGHUP after a renewal): new connections get the new
    /// certificate, calls in progress keep theirs. A pair that does not load is refused and the
    /// old one stays. Returns the new fingerprint.
    @discardableResult
    public func reloadTLS() -> Result<String, ServerStartError> {
        guard let files = tlsFiles, let web = running?.parts.web else { return .failure(.tls("TLS is not on")) }
        let fp: String
        do { fp = try Self.checkTLS(files) } catch {
            log.error("TLS reload refused; keeping the old certificate", ["error": error.description])
            return .failure(error)
        }
        guard web.reloadCertificates() else {
            log.error("TLS reload failed; keeping the old certificate", [:])
            return .failure(.tls("libwebsockets did not take the new certificate"))
        }
        tlsFingerprint = fp
        log.info("TLS certificate reloaded", ["sha256": fp])
        return .success(fp)
    }

}
