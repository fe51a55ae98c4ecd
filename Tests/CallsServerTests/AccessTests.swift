@testable import CallsServer
import CallRoomTestSupport
import CallsCore
import Foundation
import XCTest

/// Issue #15's access findings, each reproduced as the attack and refused: the shared auth key
/// logging in as anyone, keys on the command line, names that carry terminal escapes.
final class AccessTests: XCTestCase {
    func testWithAuthKeyLoginOffOnlyBackendIssuedTokensLogIn() throws {
        let h = try ServerHarness { $0.authKeyLogin = false; $0.autoCreateUsers = false }
        defer { h.stop(); h.removeData() }
        XCTAssertEqual(h.request("POST", "/v3/users", headers: h.adminHeaders, body: #"{"uid":"ann","name":"Ann"}"#).status, 200)
        // The attack: anyone holding the app's auth key logs in as an existing user.
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"ann","authKey":"\#(h.server.keys.authKey)"}"#)
        XCTAssertEqual(login.status, 403)
        XCTAssertEqual(login.errorCode, "AUTH_ERR_AUTH_KEY_DISABLED")
        // What still works: the backend issues an auth token, the client uses it.
        let token = try XCTUnwrap(h.request("POST", "/v3/users/ann/auth_tokens", headers: h.adminHeaders).data["authToken"] as? String)
        XCTAssertEqual(h.request("GET", "/v3/me", headers: ["authToken": token]).data["uid"] as? String, "ann")
        XCTAssertNotNil(h.request("POST", "/v3.0/call_tokens", headers: ["appId": h.server.keys.appId, "authToken": token],
                                  body: #"{"sessionId":"s"}"#).data["token"])
    }

    /// `--production` turns auth-key login off; keys come from a file or the environment, never
    /// from the command line (`/proc/PID/cmdline` is world-readable).
    func testProductionAndKeysOffTheCommandLine() throws {
        let tmp = TemporaryDirectory("callroom-access")
        defer { tmp.remove() }
        try "file-api-key-0123456789\n".write(toFile: tmp.file("api.key"), atomically: true, encoding: .utf8)
        let p = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data"), "--production",
                                                                     "--api-key-file", tmp.file("api.key"), "--log-level", "error"],
                                   environment: ["CALLROOM_AUTH_KEY": "env-auth-key-0123456789"])
        defer { p.signal(SIGTERM); _ = p.wait() }
        let line = try XCTUnwrap(p.waitForLine { $0.hasPrefix("callroomd listening on") }, p.errorOutput)
        let url = String(line.split(separator: " ")[3])
        let app = String(line.split(separator: " ").last ?? "")
        XCTAssertEqual(BlockingHTTP.request("POST", url + "/v3/users", headers: ["apikey": "file-api-key-0123456789"],
                                            body: #"{"uid":"ann"}"#).status, 200, "the key from the file")
        XCTAssertEqual(BlockingHTTP.request("POST", url + "/v3/sdk/login", headers: ["appId": app],
                                            body: #"{"uid":"ann","authKey":"env-auth-key-0123456789"}"#).errorCode, "AUTH_ERR_AUTH_KEY_DISABLED")
        let cmdline = String(decoding: FileManager.default.contents(atPath: "/proc/\(p.pid)/cmdline") ?? Data(), as: UTF8.self)
        XCTAssertFalse(cmdline.contains("file-api-key") || cmdline.contains("env-auth-key"), "no key in the process's command line")
        XCTAssertFalse(cmdline.isEmpty)
    }

    /// The attack: a display name with terminal escapes, shown on everyone's call screen.
    func testNamesAndChatReachOthersWithoutControlCharacters() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let evil = "Eve\\u001b[2J\\u001b]52;c;cm0gLXJm\\u0007\\u0000"
        let login = h.request("POST", "/v3/sdk/login", headers: ["appId": h.server.keys.appId],
                              body: #"{"uid":"eve","authKey":"\#(h.server.keys.authKey)","name":"\#(evil)"}"#)
        XCTAssertEqual(login.data["name"] as? String, "Eve[2J]52;c;cm0gLXJm")
        XCTAssertEqual(h.request("PUT", "/v3/users/eve", headers: h.adminHeaders, body: #"{"name":"\u202eevE"}"#).data["name"] as? String, "evE")
        let a = try SignalProbe(url: h.server.url)
        a.send(.join(.init(callToken: try h.callToken(uid: "eve", session: "names"), displayName: "Mallory\u{1B}[31m\u{9B}H")))
        XCTAssertEqual(a.joined()?.you.name, "Mallory[31mH")
        a.send(.chat(text: "hi\u{1B}[2J\nthere"))
        guard case .chat(let m)? = a.wait({ if case .chat = $0 { return true }; return false }) else { return XCTFail("no chat") }
        XCTAssertEqual(m.text, "hi[2J\nthere")
    }
}
