import CallRoomTestSupport
import Foundation
import XCTest

/// The lobby and the lock on the call screen (#34), in a real terminal: the host sees who
/// waits and lets them in with a key; the waiting guest (headless) is told and then joins; the
/// host locks the room and everyone hears it.
final class LobbyScreenTmuxTests: XCTestCase {
    /// Opens the participant list, selects Grace (the second row) and presses `key` twice: the
    /// action asks first (`asks`), the second press confirms it.
    func confirmOnGrace(_ tmux: Tmux, key: String, asks: String, file: StaticString = #filePath, line: UInt = #line) {
        tmux.keys("p")
        XCTAssertTrue(tmux.waitFor("Participants (2)"), tmux.screen(), file: file, line: line)
        tmux.keys("Down")
        tmux.keys(key)
        XCTAssertTrue(tmux.waitFor(asks), tmux.screen(), file: file, line: line)
        tmux.keys(key)
    }

    func testTheHostLetsAGuestInFromTheLobbyAndLocksTheRoom() throws {
        let tmp = TemporaryDirectory("callroom-lobby")
        defer { tmp.remove() }
        let tmux = Tmux(session: "lobby-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        defer { _ = tmux.run(["kill-server"]) }
        try #"{"roomAccess": "lobby"}"#.write(toFile: tmp.file("config.json"), atomically: true, encoding: .utf8)
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--config", tmp.file("config.json"), "--log-level", "error"])
        defer { _ = server.stop() }
        let callroom = BuiltProducts.path("callroom")
        XCTAssertTrue(tmux.start("LANG=C.UTF-8 \(callroom) join lobbyroom --server \(server.url) --uid host --name Host --auth-key \(server.authKey) "
                                 + "--input tone:300 --output null; echo JOIN-EXIT=$?; sleep 30", width: 100, height: 30))
        XCTAssertTrue(tmux.waitFor("in call"), tmux.screen())
        let guest = try ManagedProcess(callroom, ["join", "lobbyroom", "--server", server.url, "--uid", "guest", "--name", "Grace",
                                                  "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"])
        defer { guest.closeInput(); _ = guest.wait(timeout: 10) }
        XCTAssertNotNil(guest.waitForLine { $0.contains(#""event":"onWaitingInLobby""#) }, "the guest is told to wait: \(guest.errorOutput)")
        XCTAssertTrue(tmux.waitFor("Grace waiting: y admit, n deny"), "the host is asked: \(tmux.screen())")
        XCTAssertTrue(tmux.screen().contains("1 participant"), "nobody entered yet: \(tmux.screen())")
        tmux.keys("y")
        XCTAssertNotNil(guest.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, "let in: \(guest.errorOutput)")
        XCTAssertTrue(tmux.waitFor("2 participants"), tmux.screen())
        XCTAssertFalse(tmux.screen().contains("waiting: y admit"), "the prompt goes once answered")
        // Removed from the participant list (p, the row, x twice): she stays out, whatever token she brings…
        confirmOnGrace(tmux, key: "x", asks: "Remove Grace")
        XCTAssertNotNil(guest.wait(timeout: 10), "removed: the session is over for her and the client exits")
        XCTAssertTrue(tmux.waitFor("R lets them back"), "the panel says how to let her back: \(tmux.screen())")
        func join(_ name: String) throws -> ManagedProcess {
            try ManagedProcess(callroom, ["join", "lobbyroom", "--server", server.url, "--uid", "guest", "--name", name,
                                          "--auth-key", server.authKey, "--input", "null", "--output", "null", "--headless"])
        }
        let refused = try join("Grace")
        XCTAssertEqual(refused.wait(timeout: 10), 1)
        XCTAssertTrue(refused.errorOutput.contains("ERR_REMOVED_FROM_SESSION"), refused.errorOutput)
        // …until the host lets her back (R), and in again from the lobby.
        tmux.keys("R")
        XCTAssertTrue(tmux.waitFor("may join again"), tmux.screen())
        let back = try join("Grace")
        defer { back.closeInput(); _ = back.wait(timeout: 10) }
        XCTAssertNotNil(back.waitForLine { $0.contains(#""event":"onWaitingInLobby""#) }, back.errorOutput)
        tmux.keys("Escape")
        XCTAssertTrue(tmux.waitFor("waiting: y admit"), tmux.screen())
        tmux.keys("y")
        XCTAssertNotNil(back.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, back.errorOutput)
        tmux.keys("k")
        XCTAssertTrue(tmux.waitFor("LOCKED"), tmux.screen())
        XCTAssertNotNil(back.waitForLine { $0.contains(#""event":"onRoomLockChanged""#) && $0.contains("true") }, "everyone hears of the lock")
        let late = try ManagedProcess(callroom, ["join", "lobbyroom", "--server", server.url, "--uid", "late", "--auth-key", server.authKey,
                                                 "--input", "null", "--output", "null", "--headless"])
        XCTAssertEqual(late.wait(timeout: 10), 1, "a locked room takes nobody new")
        XCTAssertTrue(late.errorOutput.contains("ERR_ROOM_LOCKED"), late.errorOutput)
        // Banned for good from the panel (B twice), listed there, lifted with U.
        confirmOnGrace(tmux, key: "B", asks: "Ban Grace")
        XCTAssertNotNil(back.wait(timeout: 10), "banned: she is out")
        XCTAssertTrue(tmux.waitFor("banned: guest"), tmux.screen())
        XCTAssertEqual((BlockingHTTP.request("GET", server.url + "/v3/rooms/lobbyroom/bans", headers: ["apikey": server.apiKey]).data["bannedUids"] as? [String]), ["guest"])
        tmux.keys("U")
        XCTAssertTrue(tmux.waitFor("Lifting the ban on guest"), tmux.screen())
        eventually(5, poll: 0.1) {
            ((BlockingHTTP.request("GET", server.url + "/v3/rooms/lobbyroom/bans", headers: ["apikey": server.apiKey]).data["bannedUids"] as? [String]) ?? ["?"]).isEmpty
        }
        XCTAssertEqual((BlockingHTTP.request("GET", server.url + "/v3/rooms/lobbyroom/bans", headers: ["apikey": server.apiKey]).data["bannedUids"] as? [String]) ?? [], [])
    }
}
