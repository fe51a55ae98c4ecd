import CallRoomTestSupport
import Foundation
import XCTest

/// Someone on the path between `callroom join` and callroomd (a TCP relay that records every
/// byte): over plain HTTP they read the auth key, auth token, call token and media bind token;
/// over TLS none of it. And the client refuses a certificate it cannot verify.
final class TLSJoinTests: XCTestCase {
    /// Joins `session` through `recorder`, waits for the session, leaves; returns the output.
    private func joinThrough(_ recorder: TCPRecorder, scheme: String, key: String, extra: [String]) throws -> [String] {
        let p = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "sniffed", "--server", "\(scheme)://127.0.0.1:\(recorder.port)",
                                                                    "--uid", "ann", "--auth-key", key, "--input", "tone:440", "--output", "null",
                                                                    "--headless"] + extra)
        XCTAssertNotNil(p.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, p.errorOutput + p.output.joined(separator: "\n"))
        Thread.sleep(forTimeInterval: 0.3)
        p.closeInput()
        XCTAssertEqual(p.wait(timeout: 10), 0, p.errorOutput)
        return p.output
    }

    func testOverTLSNothingSecretCrossesThePathInTheClear() throws {
        let tmp = TemporaryDirectory("callroom-tls")
        defer { tmp.remove() }
        // The attack, reproduced: plain HTTP leaks every credential.
        let plain = try CallroomdProcess(dataDir: tmp.file("plain"))
        defer { _ = plain.stop() }
        let plainRecorder = try TCPRecorder(forwardingTo: Int(plain.url.split(separator: ":").last ?? "") ?? 0)
        defer { plainRecorder.stop() }
        _ = try joinThrough(plainRecorder, scheme: "http", key: plain.authKey, extra: [])
        XCTAssertTrue(plainRecorder.saw(plain.authKey), "plain HTTP carries the auth key in the clear")
        XCTAssertTrue(plainRecorder.saw("\"authToken\""))
        XCTAssertTrue(plainRecorder.saw("\"bindToken\""))
        XCTAssertTrue(plainRecorder.saw("\"resumeToken\""))

        // The fix: TLS. The same join through the same kind of relay shows none of it.
        let secure = try CallroomdProcess(dataDir: tmp.file("tls"), extra: ["--tls-self-signed"])
        defer { _ = secure.stop() }
        XCTAssertTrue(secure.url.hasPrefix("https://"), secure.url)
        let recorder = try TCPRecorder(forwardingTo: Int(secure.url.split(separator: ":").last ?? "") ?? 0)
        defer { recorder.stop() }
        _ = try joinThrough(recorder, scheme: "https", key: secure.authKey, extra: ["--ca-file", tmp.file("tls/tls/cert.pem")])
        XCTAssertGreaterThan(recorder.bytes.count, 1000, "the join went through the relay")
        for secret in [secure.authKey, "authToken", "bindToken", "resumeToken", "callToken", "sniffed"] {
            XCTAssertFalse(recorder.saw(secret), "'\(secret)' crossed the path in the clear")
        }
        // A certificate the client cannot verify: refused, with a message saying what to do.
        let refused = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "x", "--server", secure.url, "--uid", "ben",
                                                                          "--auth-key", secure.authKey, "--input", "null", "--output", "null", "--headless"])
        XCTAssertEqual(refused.wait(timeout: 15), 1)
        XCTAssertTrue(refused.errorOutput.contains("certificate") && refused.errorOutput.contains("--ca-file"), refused.errorOutput)
        // --insecure, explicitly, connects anyway.
        let insecure = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "x", "--server", secure.url, "--uid", "ben",
                                                                           "--auth-key", secure.authKey, "--input", "null", "--output", "null",
                                                                           "--headless", "--insecure"])
        XCTAssertNotNil(insecure.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, insecure.errorOutput)
        insecure.closeInput()
        _ = insecure.wait(timeout: 10)
    }
}
