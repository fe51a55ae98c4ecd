import CallRoomTestSupport
import Foundation
import XCTest

/// `callroom join` with a shared invite link (#34): a guest joins with a name only — no account,
/// no key on the command line — and a used-up or revoked invite says why and exits 1.
final class InviteCommandTests: XCTestCase {
    func testAGuestJoinsFromTheLinkWithANameOnly() throws {
        let tmp = TemporaryDirectory("callroom-invite-cmd")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let minted = BlockingHTTP.request("POST", server.url + "/v3/rooms/party/invites", headers: ["apikey": server.apiKey], body: #"{"maxUses":1}"#)
        let link = try XCTUnwrap(minted.data["link"] as? String, "\(minted.json)")
        let callroom = BuiltProducts.path("callroom")
        let noName = try ManagedProcess(callroom, ["join", link, "--input", "null", "--output", "null", "--headless"])
        XCTAssertEqual(noName.wait(timeout: 10), 2, "a guest must say a name")
        XCTAssertTrue(noName.errorOutput.contains("--name"), noName.errorOutput)
        let guest = try ManagedProcess(callroom, ["join", link, "--name", "Grace", "--input", "null", "--output", "null", "--headless"])
        let joined = guest.waitForLine { $0.contains(#""event":"onSessionJoined""#) }
        XCTAssertNotNil(joined, guest.errorOutput)
        XCTAssertNotNil(guest.waitForLine { $0.contains(#""event":"onParticipantListChanged""#) && $0.contains("Grace") }, "seen by the name given")
        guest.closeInput()
        XCTAssertEqual(guest.wait(timeout: 10), 0)
        let again = try ManagedProcess(callroom, ["join", link, "--name", "Linus", "--input", "null", "--output", "null", "--headless"])
        XCTAssertEqual(again.wait(timeout: 10), 1, "used up")
        XCTAssertTrue(again.errorOutput.contains("ERR_INVITE_INVALID"), again.errorOutput)
    }
}
