import CallRoomTestSupport
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Who gets in (#34), through the SDK against a real server: a lobby room makes a guest wait
/// for the host, who lets them in or not; a moderator locks the room.
final class LobbyAndLockTests: XCTestCase {
    private var quiet: SessionSettingsBuilder.SessionSettings { SessionSettingsBuilder().setAudioInput("tone:440").setAudioOutput("null").build() }

    func testAGuestWaitsInTheLobbyUntilTheHostLetsThemIn() async throws {
        let t = try TestServer.forSDK { $0.roomAccess = .lobby }
        defer { t.stop() }
        let hostEvents = EventRecorder<CallEvent>(), guestEvents = EventRecorder<CallEvent>(), otherEvents = EventRecorder<CallEvent>()
        let host = try await t.joinedClient("host", session: "lobby", settings: quiet, onEvent: { hostEvents.add($0) })
        // The guest's join does not return while they wait.
        let guest = CallsClient(serverURL: t.url, appID: t.appId, eventQueue: DispatchQueue(label: "guest"), onEvent: { guestEvents.add($0) })
        _ = try await guest.login(uid: "guest", authKey: t.authKey, name: "Guest")
        let token = try await guest.generateToken(sessionID: "lobby")
        let settings = quiet
        let joining = Task { try await guest.join(callToken: token, sessionID: "lobby", settings: settings) }
        try await waitFor("the guest waits for the host", guestEvents) { $0 == .waitingInLobby }
        XCTAssertTrue(guest.isWaitingInLobby)
        try await waitFor("the host is asked", hostEvents) { if case .lobbyRequest(let p) = $0 { return p.uid == "guest" }; return false }
        XCTAssertEqual(host.participants.count, 1, "nobody entered yet")
        let pid = try XCTUnwrap(host.lobby.first?.pid)
        host.admitFromLobby(pid)
        try await joining.value
        try await waitFor("in", guestEvents) { $0 == .sessionJoined }
        try await waitFor("the host sees the request resolved", hostEvents) { if case .lobbyRequestResolved(_, true) = $0 { return true }; return false }
        try await waitFor("and the guest join", hostEvents) { if case .participantJoined(let p) = $0 { return p.uid == "guest" }; return false }
        XCTAssertTrue(host.lobby.isEmpty)
        // Someone else is sent away.
        let other = CallsClient(serverURL: t.url, appID: t.appId, eventQueue: DispatchQueue(label: "other"), onEvent: { otherEvents.add($0) })
        _ = try await other.login(uid: "other", authKey: t.authKey)
        let otherToken = try await other.generateToken(sessionID: "lobby")
        let refused = Task { () -> String? in
            do { try await other.join(callToken: otherToken, sessionID: "lobby", settings: settings); return nil } catch { return error.callErrorCode }
        }
        try await waitFor("the host is asked again", hostEvents) { if case .lobbyRequest(let p) = $0 { return p.uid == "other" }; return false }
        host.denyFromLobby(try XCTUnwrap(host.lobby.first?.pid))
        let code = await refused.value
        XCTAssertEqual(code, "ERR_LOBBY_DENIED")
        await guest.leave()
        await host.leave()
    }

    func testAModeratorLocksTheRoom() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let hostEvents = EventRecorder<CallEvent>(), guestEvents = EventRecorder<CallEvent>()
        let host = try await t.joinedClient("host", session: "locked", settings: quiet, onEvent: { hostEvents.add($0) })
        let guest = try await t.joinedClient("guest", session: "locked", settings: quiet, onEvent: { guestEvents.add($0) })
        guest.setRoomLocked(true)
        try await waitFor("a participant may not lock", guestEvents) { if case .error("ERR_NOT_MODERATOR", _) = $0 { return true }; return false }
        host.setRoomLocked(true)
        try await waitFor("everyone hears", guestEvents) { $0 == .roomLockChanged(locked: true) }
        XCTAssertTrue(guest.isRoomLocked)
        do {
            _ = try await t.joinedClient("late", session: "locked", settings: quiet)
            XCTFail("a locked room takes nobody new")
        } catch {
            XCTAssertEqual(error.callErrorCode, "ERR_ROOM_LOCKED")
        }
        host.setRoomLocked(false)
        try await waitFor("unlocked", guestEvents) { $0 == .roomLockChanged(locked: false) }
        let late = try await t.joinedClient("late", session: "locked", settings: quiet)
        await late.leave()
        await guest.leave()
        await host.leave()
    }
}

private extension Error {
    var callErrorCode: String? { (self as? CometChatCallException).map { $0.errorCode } }
}
