import CallRoomTestSupport
import Foundation
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `callroom join --settings cometchat-settings.json --auth-token …`: the production login path
/// (a backend issues the auth token with the REST key) through the settings-file init.
final class SettingsFileJoinTests: XCTestCase {
    func testJoinWithSettingsFileAndAuthToken() throws {
        let tmp = TemporaryDirectory()
        defer { tmp.remove() }
        let server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("data")])
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on") })
        let words = line.split(separator: " ").map(String.init)
        let url = words[3], appId = words.last ?? ""
        let apiKey = server.output.first { $0.contains("apiKey") }?.split(separator: " ").last.map(String.init) ?? ""

        func post(_ path: String) -> [String: Any] {
            BlockingHTTP.request("POST", url + path, headers: ["apikey": apiKey],
                                 body: path == "/v3/users" ? #"{"uid":"erin","name":"Erin E"}"# : nil).data
        }
        XCTAssertEqual(post("/v3/users")["uid"] as? String, "erin")
        let token = try XCTUnwrap(post("/v3/users/erin/auth_tokens")["authToken"] as? String)

        let host = url.replacingOccurrences(of: "http://", with: "")
        let settings = tmp.file("cometchat-settings.json")
        try #"{"appId":"\#(appId)","region":"local","callsSDK":{"host":"\#(host)"}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        let client = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "sync", "--settings", settings, "--auth-token", token,
                                                                         "--input", "null", "--output", "null", "--headless"])
        let roster = try XCTUnwrap(client.waitForLine { $0.contains("onParticipantListChanged") }, client.errorOutput)
        XCTAssertTrue(roster.contains(#""name":"Erin E""#), "the stored user's name: \(roster)")
        client.send("leave")
        XCTAssertEqual(client.wait(), 0)

        // A wrong token is refused with the server's code and exit status 1.
        let bad = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "sync", "--settings", settings, "--auth-token", "nope",
                                                                      "--input", "null", "--output", "null", "--headless"])
        XCTAssertEqual(bad.wait(), 1)
        XCTAssertTrue(bad.errorOutput.contains("AUTH_ERR_AUTH_TOKEN_NOT_FOUND"), bad.errorOutput)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }
}
