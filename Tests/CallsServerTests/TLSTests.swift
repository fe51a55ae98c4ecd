@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import CallsSecurity
import CallsTransport
import Foundation
import XCTest
import CallsDatabase

/// TLS for REST and signalling (libwebsockets + OpenSSL): served, verified by clients, reloaded
/// without dropping calls; plain HTTP only on loopback; private files from their first byte.
final class TLSTests: XCTestCase {
    private func get(_ url: String, _ trust: TLSTrust) -> Result<CurlClient.Response, CurlError> {
        do throws(CurlError) { return try CurlClient(trust: trust).request("GET", url, headers: [], body: nil, timeoutMs: 5000) }
        catch { return .failure(error) }
    }

    private func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    func testTheServerSpeaksOnlyTLSAndClientsVerifyItsCertificate() throws {
        let h = try ServerHarness { $0.tlsSelfSigned = true }
        defer { h.stop(); h.removeData() }
        let url = h.server.url
        XCTAssertTrue(url.hasPrefix("https://127.0.0.1:"), url)
        let ca = h.dir + "/tls/cert.pem"
        let fp = try SelfSignedCertificate.fingerprint(pem: String(contentsOfFile: ca, encoding: .utf8))
        XCTAssertEqual(h.server.tlsFingerprint, fp)
        // Verified against the given CA: fine. Against the system's store: refused. --insecure: fine.
        guard case .success(let ok) = get(url + "/healthz", TLSTrust(caFile: ca)) else { return XCTFail("with the CA file") }
        XCTAssertEqual(ok.status, 200)
        guard case .failure(let e) = get(url + "/healthz", .system) else { return XCTFail("a self-signed certificate must not pass the system store") }
        XCTAssertTrue(e.isCertificateProblem, "\(e)")
        guard case .success = get(url + "/healthz", TLSTrust(insecure: true)) else { return XCTFail("--insecure") }
        // Plain HTTP on the TLS port gets nothing.
        guard case .failure = get(url.replacingOccurrences(of: "https://", with: "http://") + "/healthz", .system) else {
            return XCTFail("plain HTTP answered on the TLS port")
        }
        // Signalling over WSS: joins with the CA; without it the connection is refused.
        let p = try SignalProbe(url: url, trust: TLSTrust(caFile: ca))
        p.send(.join(.init(callToken: try ServerHarness.callToken(url: url, appId: h.server.keys.appId, authKey: h.server.keys.authKey,
                                                                    uid: "ann", session: "tls", trust: TLSTrust(caFile: ca)))))
        XCTAssertNotNil(p.joined(), "joined over wss")
        let stranger = try SignalProbe(url: url)
        XCTAssertTrue(stranger.waitClosed(), "an unverified certificate closes the connection")
        // Private files from the first byte: the directory 0700, keys, TLS key and database 0600.
        XCTAssertEqual(mode(h.dir), 0o700)
        let database = StoreBackend.current == .sqlite ? ["callroom.sqlite", "callroom.sqlite-wal", "callroom.sqlite-shm"] : []
        for f in ["keys.json", "tls/key.pem"] + database {
            XCTAssertEqual(mode(h.dir + "/" + f), 0o600, f)
        }
        XCTAssertEqual(mode(h.dir + "/tls"), 0o700)
    }

    /// An existing data directory others can enter is made private at start.
    func testAnOpenDataDirectoryIsMadePrivate() throws {
        let dir = TemporaryDirectory("callroom-tls")
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("data"), withIntermediateDirectories: true)
        chmod(dir.file("data"), 0o755)
        let h = try ServerHarness(dataDir: dir.file("data"))
        defer { h.stop() }
        XCTAssertEqual(mode(dir.file("data")), 0o700)
    }

    func testPlainHTTPIsRefusedOffLoopbackUnlessAskedFor() throws {
        let dir = TemporaryDirectory("callroom-tls")
        defer { dir.remove() }
        var c = ServerConfiguration(host: "0.0.0.0", port: 0, mediaPort: 0, dataDir: dir.file("data"))
        c.logLevel = .error
        XCTAssertThrowsError(try CallServer(configuration: c).start()) { e in
            XCTAssertTrue("\(e)".contains("refusing plain HTTP on 0.0.0.0"), "\(e)")
        }
        c.allowPlainHTTP = true
        let s = CallServer(configuration: c)
        XCTAssertNoThrow(try s.start())
        s.stop()
        // Half a pair, or a key that is not the certificate's: refused, naming the files.
        var t = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dir.file("data2"))
        t.tlsCertificate = dir.file("cert.pem")
        XCTAssertThrowsError(try CallServer(configuration: t).start()) { XCTAssertTrue("\($0)".contains("both --tls-cert and --tls-key")) }
        let a = try SelfSignedCertificate.generate(commonName: "a", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let b = try SelfSignedCertificate.generate(commonName: "b", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try a.certificatePEM.write(toFile: dir.file("cert.pem"), atomically: true, encoding: .utf8)
        try b.privateKeyPEM.write(toFile: dir.file("key.pem"), atomically: true, encoding: .utf8)
        t.tlsPrivateKey = dir.file("key.pem")
        XCTAssertThrowsError(try CallServer(configuration: t).start()) { e in
            XCTAssertTrue("\(e)".contains("does not match"), "\(e)")
            XCTAssertFalse("\(e)".contains("PRIVATE KEY"), "never the key")
        }
    }

    /// A renewed certificate is loaded on SIGHUP: new connections get it, a call in progress stays.
    func testSIGHUPReloadsTheCertificateWithoutDroppingCalls() throws {
        let dir = TemporaryDirectory("callroom-tls")
        defer { dir.remove() }
        let first = try SelfSignedCertificate.generate(commonName: "first", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let second = try SelfSignedCertificate.generate(commonName: "second", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let (cert, key) = (dir.file("cert.pem"), dir.file("key.pem"))
        try first.certificatePEM.write(toFile: cert, atomically: true, encoding: .utf8)
        try first.privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        try first.certificatePEM.write(toFile: dir.file("first.pem"), atomically: true, encoding: .utf8)
        try second.certificatePEM.write(toFile: dir.file("second.pem"), atomically: true, encoding: .utf8)
        let server = try CallroomdProcess(dataDir: dir.file("data"), extra: ["--tls-cert", cert, "--tls-key", key, "--log-level", "error"])
        defer { _ = server.stop() }
        XCTAssertTrue(server.url.hasPrefix("https://"), server.url)
        XCTAssertTrue(server.output.contains { $0.contains("sha256 \(first.fingerprint)") }, "the fingerprint is printed: \(server.output)")
        let old = TLSTrust(caFile: dir.file("first.pem")), new = TLSTrust(caFile: dir.file("second.pem"))
        let p = try SignalProbe(url: server.url, trust: old)
        p.send(.join(.init(callToken: try ServerHarness.callToken(url: server.url, appId: server.appId, authKey: server.authKey,
                                                                    uid: "ann", session: "renewal", trust: old))))
        XCTAssertNotNil(p.joined())
        guard case .failure = get(server.url + "/healthz", new) else { return XCTFail("the new certificate is not served yet") }
        // Renew: a broken pair first (refused, the old one stays), then the real one.
        try "not a certificate".write(toFile: cert, atomically: true, encoding: .utf8)
        server.process.signal(SIGHUP)
        XCTAssertTrue(eventually(5) { server.process.errorOutput.contains("TLS reload refused") }, server.process.errorOutput)
        guard case .success = get(server.url + "/healthz", old) else { return XCTFail("a bad renewal replaced the working certificate") }
        try second.certificatePEM.write(toFile: cert, atomically: true, encoding: .utf8)
        try second.privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        server.process.signal(SIGHUP)
        let served = eventually(5, poll: 0.1) { if case .success = get(server.url + "/healthz", new) { return true }; return false }
        XCTAssertTrue(served, "new connections get the renewed certificate")
        // The call in progress was not dropped: it still talks to the server.
        p.send(.ping(7))
        XCTAssertNotNil(p.wait { if case .pong(7) = $0 { return true }; return false }, "the joined connection is still up")
        XCTAssertFalse(p.closed)
    }
}

/// Start-up refusals of #34: files that would make a running server unsafe or lose data silently.
final class StartRefusalTests: XCTestCase {
    /// A database truncated to 0 bytes (or replaced by a file without the schema) beside the keys
    /// of an earlier start: before, a new empty store under the old keys, every user and call gone.
    func testAnEmptyOrSchemalessDatabaseBesideKeysIsRefused() throws {
        try XCTSkipIf(StoreBackend.current == .postgres, "the SQLite file alone (a PostgreSQL database is the operator's)")
        let dir = TemporaryDirectory("callroom-db")
        defer { dir.remove() }
        let data = dir.file("data")
        let first = try ServerHarness(dataDir: data)
        first.stop()
        XCTAssertTrue(FileManager.default.createFile(atPath: data + "/callroom.sqlite", contents: Data()))
        try? FileManager.default.removeItem(atPath: data + "/callroom.sqlite-wal")
        try? FileManager.default.removeItem(atPath: data + "/callroom.sqlite-shm")
        var c = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: data)
        c.logLevel = .error
        XCTAssertThrowsError(try CallServer(configuration: c).start()) { e in
            XCTAssertTrue("\(e)".contains("is empty (0 bytes) but keys.json is from an earlier start"), "\(e)")
        }
        let other = try SQLiteDatabase(path: data + "/callroom.sqlite")
        try other.execute("CREATE TABLE notes(x TEXT)")
        XCTAssertThrowsError(try CallServer(configuration: c).start()) { e in
            XCTAssertTrue("\(e)".contains("has no CallRoom schema"), "\(e)")
        }
        // A fresh directory (no keys yet) starts as ever.
        let fresh = try ServerHarness(dataDir: dir.file("fresh"))
        fresh.stop()
    }

    /// Under --production a TLS key others may read is refused (a development start takes it).
    func testAnOpenTLSKeyIsRefusedInProduction() throws {
        let dir = TemporaryDirectory("callroom-key")
        defer { dir.remove() }
        let id = try SelfSignedCertificate.generate(commonName: "a", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try id.certificatePEM.write(toFile: dir.file("cert.pem"), atomically: true, encoding: .utf8)
        try id.privateKeyPEM.write(toFile: dir.file("key.pem"), atomically: true, encoding: .utf8)
        chmod(dir.file("key.pem"), 0o644)
        var c = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dir.file("data"))
        c.logLevel = .error
        c.tlsCertificate = dir.file("cert.pem")
        c.tlsPrivateKey = dir.file("key.pem")
        c.production = true
        XCTAssertThrowsError(try CallServer(configuration: c).start()) { e in
            XCTAssertTrue("\(e)".contains("readable by others (mode 644)"), "\(e)")
            XCTAssertFalse("\(e)".contains("PRIVATE KEY"))
        }
        chmod(dir.file("key.pem"), 0o600)
        let s = CallServer(configuration: c)
        XCTAssertNoThrow(try s.start())
        s.stop()
    }
}
