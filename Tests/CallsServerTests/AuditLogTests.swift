@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import Foundation
import XCTest

/// The audit log and what never reaches any log (#34).
final class AuditLogTests: XCTestCase {
    func testAdminAndModeratorActionsAreAuditedAndNoTokenIsLogged() throws {
        let tmp = TemporaryDirectory("callroom-audit")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "debug"])
        defer { _ = server.stop() }
        let admin = ["apikey": server.apiKey, "appId": server.appId]
        XCTAssertEqual(BlockingHTTP.request("POST", server.url + "/v3/users", headers: admin, body: #"{"uid":"ann"}"#).status, 200)
        let token = try XCTUnwrap(BlockingHTTP.request("POST", server.url + "/v3/users/ann/auth_tokens", headers: admin).data["authToken"] as? String)
        // A refused request whose path carries the token, then the real revocation.
        XCTAssertEqual(BlockingHTTP.request("DELETE", server.url + "/v3/users/ann/auth_tokens/\(token)", headers: ["apikey": "wrong"]).status, 401)
        XCTAssertEqual(BlockingHTTP.request("DELETE", server.url + "/v3/users/ann/auth_tokens/\(token)", headers: admin).status, 200)
        // In a room: the moderator mutes and removes; a participant's attempt is refused.
        func join(_ uid: String) throws -> SignalProbe {
            let p = try SignalProbe(url: server.url)
            p.send(.join(.init(callToken: try ServerHarness.callToken(url: server.url, appId: server.appId, authKey: server.authKey, uid: uid, session: "audit"))))
            return p
        }
        let mod = try join("mod")
        XCTAssertEqual(mod.joined()?.you.role, .moderator)
        let eve = try join("eve")
        let evePID = try XCTUnwrap(eve.joined()?.you.pid)
        let bob = try join("bob")
        let bobPID = try XCTUnwrap(bob.joined()?.you.pid)
        eve.send(.muteParticipant(pid: bobPID))
        XCTAssertEqual(eve.error(), "ERR_NOT_MODERATOR")
        mod.send(.muteParticipant(pid: evePID))
        mod.send(.removeParticipant(pid: evePID))
        XCTAssertTrue(eve.waitClosed())

        let path = tmp.file("data") + "/audit.jsonl"
        var lines: [[String: Any]] = []
        eventually(3, poll: 0.05) {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return lines.count >= 6
        }
        func has(_ actor: String, _ action: String, _ result: String) -> Bool {
            lines.contains { ($0["actor"] as? String)?.hasPrefix(actor) == true && $0["action"] as? String == action && $0["result"] as? String == result }
        }
        XCTAssertTrue(has("operator@", "POST /v3/users", "200"), "\(lines)")
        XCTAssertTrue(has("operator@", "POST /v3/users/ann/auth_tokens", "200"))
        XCTAssertTrue(has("operator@", "DELETE /v3/users/ann/auth_tokens/…", "401"), "refused, and the path redacted")
        XCTAssertTrue(has("operator@", "DELETE /v3/users/ann/auth_tokens/…", "200"))
        XCTAssertTrue(has("uid:eve", "mute", "ERR_NOT_MODERATOR"))
        XCTAssertTrue(has("uid:mod", "mute", "ok"))
        XCTAssertTrue(lines.contains { $0["action"] as? String == "remove" && ($0["target"] as? String)?.contains("eve/") == true }, "\(lines)")
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        let audit = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        for secret in [token, server.apiKey, server.authKey] {
            XCTAssertFalse(audit.contains(secret), "no secret in the audit log")
            XCTAssertFalse(server.process.errorOutput.contains(secret), "no secret in the server's log")
        }
    }

    /// A disk that is full (`/dev/full`: every write ENOSPC) loses the audit lines and never
    /// the server: the write trapped there (`FileHandle.write`), and every admin action past a
    /// disk filled by recordings would have ended the process.
    func testAFullDiskLosesTheLineNotTheServer() throws {
        let audit = try XCTUnwrap(AuditLog(path: "/dev/full"))
        for i in 0..<3 {
            XCTAssertFalse(audit.record(AuditEntry(actor: "operator", action: "DELETE /v3/users/u\(i)", target: "u\(i)", result: "200")), "said lost")
        }
        let tmp = TemporaryDirectory("callroom-audit-ok")
        defer { tmp.remove() }
        XCTAssertEqual(try XCTUnwrap(AuditLog(path: tmp.file("audit.jsonl"))).record(AuditEntry(actor: "operator", action: "x", target: "", result: "200")), true)
    }

    func testPathsAreRedacted() {
        XCTAssertEqual(AuditLog.redacted(path: "/v3/users/ann/auth_tokens/abc123"), "/v3/users/ann/auth_tokens/…")
        XCTAssertEqual(AuditLog.redacted(path: "/v3/users/ann/push_tokens/ff00?x=1"), "/v3/users/ann/push_tokens/…?…")
        XCTAssertEqual(AuditLog.redacted(path: "/v3/users/ann"), "/v3/users/ann")
    }
}
