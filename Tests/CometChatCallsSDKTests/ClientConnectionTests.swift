@testable import CometChatCallsSDK
import XCTest

/// The client's connection lifecycle on made-up time: no sockets, no timers, no server. What
/// `CallsClient` does with each effect is its effect runner's; here, every transition.
final class ClientConnectionTests: XCTestCase {
    typealias Input = ClientConnection.Input
    typealias Effect = ClientConnection.Effect
    static let s: UInt64 = 1_000_000_000

    /// A connection in a call (joined at t = 1 s, heard from then), and a clock.
    struct Run {
        var c = ClientConnection()
        var now: UInt64 = 1 * ClientConnectionTests.s
        init(grace: Int = 30, token: String? = "rt-1") {
            _ = c.handle(.joinSent, at: now)
            _ = c.handle(.heard, at: now)
            _ = c.handle(.joined(resumeToken: token, graceSeconds: grace), at: now)
        }
        mutating func at(_ seconds: Double, _ input: Input) -> [Effect] {
            now = UInt64(seconds * 1e9)
            return c.handle(input, at: now)
        }
        /// The input of the one `after` effect in `effects`, and its delay.
        func scheduled(_ effects: [Effect]) -> (Double, Input)? {
            for case .after(let d, let i) in effects { return (d, i) }
            return nil
        }
    }

    func testALostConnectionIsAnnouncedAndRetriedWithBackOffUntilTheGracePeriodEnds() throws {
        var r = Run(grace: 4)
        XCTAssertEqual(r.c.phase, .joined)
        let lost = r.at(2, .closed(reason: "reset"))
        XCTAssertEqual(r.c.phase, .reconnecting)
        XCTAssertEqual(lost.first, .announceLost)
        var (delay, retry) = try XCTUnwrap(r.scheduled(lost))
        XCTAssertEqual(delay, 0.25)
        var t = 2.0
        var delays: [Double] = []
        // Each retry opens a resume attempt with a 3 s deadline; each closes at once (server down).
        while true {
            t += delay
            let attempt = r.at(t, retry)
            XCTAssertEqual(Array(attempt.prefix(2)), [.drop, .openResume(token: "rt-1")])
            let (deadline, _) = try XCTUnwrap(r.scheduled(attempt))
            XCTAssertEqual(deadline, ClientConnection.resumeSeconds)
            let closed = r.at(t + 0.01, .closed(reason: "refused"))
            if closed == [.giveUp] { break }
            (delay, retry) = try XCTUnwrap(r.scheduled(closed))
            delays.append(delay)
            XCTAssertLessThan(t, 7, "never gave up")
        }
        XCTAssertEqual(Array(delays.prefix(3)), [0.5, 1, 1], "0.25 s, 0.5 s, then every second")
        XCTAssertGreaterThanOrEqual(t, 5.9, "gave up only once the 4 s grace period (from the loss at 2 s) was over")
    }

    func testWithoutAResumeTokenALossEndsTheSession() {
        var r = Run(token: nil)
        XCTAssertEqual(r.at(2, .closed(reason: "reset")), [.giveUp])
    }

    func testAResumeWithinTheGracePeriodIsBackInAndLaterLossesStartOver() throws {
        var r = Run()
        let lost = r.at(2, .closed(reason: "reset"))
        let (_, retry) = try XCTUnwrap(r.scheduled(lost))
        let attempt = r.at(2.25, retry)
        let (_, timeout) = try XCTUnwrap(r.scheduled(attempt))
        XCTAssertEqual(r.at(2.3, .resumed(resumeToken: "rt-2", graceSeconds: 20)), [])
        XCTAssertEqual(r.c.phase, .joined)
        XCTAssertEqual(r.c.resumeToken, "rt-2")
        XCTAssertEqual(r.at(5.25, timeout), [], "the resumed attempt's deadline does nothing")
        // The next loss starts the back-off over and uses the new token.
        let again = r.at(10, .closed(reason: "reset"))
        let (delay, next) = try XCTUnwrap(r.scheduled(again))
        XCTAssertEqual(delay, 0.25)
        XCTAssertEqual(Array(r.at(10.25, next).prefix(2)), [.drop, .openResume(token: "rt-2")])
    }

    func testAServerThatAcceptsButNeverAnswersIsLeftAfterThreeSeconds() throws {
        var r = Run()
        let (_, retry) = try XCTUnwrap(r.scheduled(r.at(2, .closed(reason: "reset"))))
        let (_, timeout) = try XCTUnwrap(r.scheduled(r.at(2.25, retry)))
        let timedOut = r.at(5.25, timeout)
        XCTAssertEqual(timedOut.first, .drop)
        XCTAssertNotNil(r.scheduled(timedOut), "the next attempt is scheduled")
    }

    func testTwoReasonsToRetryMakeOneAttemptAndAnOldDeadlineDoesNothing() throws {
        var r = Run()
        let (_, retry) = try XCTUnwrap(r.scheduled(r.at(2, .closed(reason: "reset"))))
        let (_, firstDeadline) = try XCTUnwrap(r.scheduled(r.at(2.25, retry)))
        // The attempt's connection could not be opened, and its socket's close came too.
        let (_, superseded) = try XCTUnwrap(r.scheduled(r.at(2.26, .connectFailed)))
        let (_, latest) = try XCTUnwrap(r.scheduled(r.at(2.27, .closed(reason: "refused"))))
        XCTAssertEqual(r.at(2.8, superseded), [], "a retry superseded by a later one does nothing")
        XCTAssertEqual(Array(r.at(3.3, latest).prefix(2)), [.drop, .openResume(token: "rt-1")])
        XCTAssertEqual(r.at(5.25, firstDeadline), [], "the first attempt's deadline: that attempt is over")
    }

    func testTheHeartbeatPingsMeasuresTheRoundTripAndCallsFiveSecondsOfSilenceALoss() {
        var r = Run()
        XCTAssertEqual(r.at(3, .heartbeat), [.ping(id: 1)])
        XCTAssertEqual(r.at(3.04, .pong(id: 1)), [])
        XCTAssertEqual(try XCTUnwrap(r.c.roundTripMs), 40, accuracy: 0.001)
        _ = r.at(3.04, .heard)
        XCTAssertEqual(r.at(5, .heartbeat), [.ping(id: 2)])
        XCTAssertEqual(r.at(7, .heartbeat), [.ping(id: 3)], "4 s of silence is not yet a loss")
        let silent = r.at(9, .heartbeat)
        XCTAssertEqual(Array(silent.prefix(2)), [.drop, .announceLost], "more than 5 s without a word: lost")
        XCTAssertEqual(r.c.phase, .reconnecting)
        XCTAssertEqual(r.at(11, .heartbeat), [], "no pings while reconnecting")
    }

    func testAnExpiredResumeRejoinsWithAFreshTokenOnANewConnection() throws {
        var r = Run()
        let (_, retry) = try XCTUnwrap(r.scheduled(r.at(2, .closed(reason: "reset"))))
        _ = r.at(2.25, retry)
        XCTAssertTrue(r.c.claims(.resumeExpired))
        let refused = r.at(2.3, .refused(code: "ERR_RESUME_EXPIRED", message: "unknown", canRejoin: true))
        XCTAssertEqual(refused.first, .fetchRejoinToken)
        XCTAssertEqual(r.c.rejoin, .fetchingToken)
        XCTAssertEqual(r.at(2.31, .closed(reason: "the refused resume's connection")), [], "the server closes it: expected")
        let join = r.at(2.5, .rejoinToken("call-token"))
        XCTAssertEqual(Array(join.prefix(2)), [.drop, .openRejoin(callToken: "call-token")])
        let (deadline, timeout) = try XCTUnwrap(r.scheduled(join))
        XCTAssertEqual(deadline, ClientConnection.rejoinSeconds)
        XCTAssertEqual(r.at(2.6, .rejoined(resumeToken: "rt-new", graceSeconds: 30)), [])
        XCTAssertEqual(r.c.phase, .joined)
        XCTAssertNil(r.c.rejoin)
        XCTAssertEqual(r.c.resumeToken, "rt-new")
        XCTAssertEqual(r.at(7.5, timeout), [], "a rejoin that succeeded has no deadline")
    }

    func testARejoinThatCannotGetATokenOrIsRefusedEndsTheSessionSayingWhy() throws {
        var r = Run()
        let (_, retry) = try XCTUnwrap(r.scheduled(r.at(2, .closed(reason: "reset"))))
        _ = r.at(2.25, retry)
        _ = r.at(2.3, .refused(code: "ERR_RESUME_EXPIRED", message: "unknown", canRejoin: true))
        XCTAssertEqual(r.at(2.4, .rejoinTokenFailed(code: "AUTH_ERR", message: "logged out")),
                       [.rejoinFailed(code: "AUTH_ERR", message: "logged out"), .giveUp])

        var q = Run()
        let (_, again) = try XCTUnwrap(q.scheduled(q.at(2, .closed(reason: "reset"))))
        _ = q.at(2.25, again)
        _ = q.at(2.3, .refused(code: "ERR_RESUME_EXPIRED", message: "unknown", canRejoin: true))
        _ = q.at(2.4, .rejoinToken("t"))
        XCTAssertTrue(q.c.claims(.init(rawValue: "ERR_ROOM_LOCKED")), "while rejoining, the server's refusal is the rejoin's")
        XCTAssertEqual(q.at(2.5, .refused(code: "ERR_ROOM_LOCKED", message: "locked", canRejoin: true)),
                       [.rejoinFailed(code: "ERR_ROOM_LOCKED", message: "locked"), .giveUp])

        var n = Run()
        let (_, third) = try XCTUnwrap(n.scheduled(n.at(2, .closed(reason: "reset"))))
        _ = n.at(2.25, third)
        XCTAssertEqual(n.at(2.3, .refused(code: "ERR_RESUME_EXPIRED", message: "unknown", canRejoin: false)), [.giveUp],
                       "no session to rejoin")
    }

    /// The old client stayed "rejoining" for ever when the resume attempt's 3 s deadline passed
    /// while the token was being fetched; the rejoin has its own deadline now and then retries.
    func testARejoinWhoseTokenNeverComesRetriesAfterItsDeadline() throws {
        var r = Run()
        let (_, retry) = try XCTUnwrap(r.scheduled(r.at(2, .closed(reason: "reset"))))
        let (_, resumeDeadline) = try XCTUnwrap(r.scheduled(r.at(2.25, retry)))
        let refused = r.at(2.3, .refused(code: "ERR_RESUME_EXPIRED", message: "unknown", canRejoin: true))
        let (_, rejoinDeadline) = try XCTUnwrap(r.scheduled(refused))
        XCTAssertEqual(r.at(5.25, resumeDeadline), [], "the resume attempt's deadline belongs to an attempt that is over")
        let timedOut = r.at(7.3, rejoinDeadline)
        XCTAssertEqual(timedOut.first, .drop)
        XCTAssertNil(r.c.rejoin)
        let (_, next) = try XCTUnwrap(r.scheduled(timedOut))
        XCTAssertEqual(Array(r.at(8.3, next).prefix(2)), [.drop, .openResume(token: "rt-1")], "tries again")
        XCTAssertEqual(r.at(8.4, .rejoinToken("late")), [], "a token that comes after its deadline is not used")
    }

    func testJoiningFailsOnAClosedConnectionOrARefusal() {
        var c = ClientConnection()
        XCTAssertEqual(c.handle(.joinSent, at: 0), [])
        XCTAssertEqual(c.phase, .joining)
        XCTAssertTrue(c.claims(.init(rawValue: "ERR_PASSCODE")))
        XCTAssertEqual(c.handle(.refused(code: "ERR_PASSCODE", message: "wrong passcode", canRejoin: false), at: 1),
                       [.failJoin(code: "ERR_PASSCODE", message: "wrong passcode")])
        XCTAssertEqual(c.handle(.closed(reason: "reset"), at: 1), [.failJoin(code: CometChatCallException.networkError,
                                                                            message: "the server closed the connection (reset)")])
        _ = c.handle(.joinFailed, at: 1)
        XCTAssertEqual(c.phase, .ended)
        XCTAssertEqual(c.handle(.joinSent, at: 2), [], "a new join starts from scratch")
        XCTAssertEqual(c.phase, .joining)
    }

    func testInACallOtherRefusalsAreTheSessionsNotTheConnections() {
        let r = Run()
        XCTAssertFalse(r.c.claims(.init(rawValue: "ERR_MUTED_BY_MODERATOR")))
        XCTAssertFalse(r.c.claims(.resumeExpired), "joined: nothing to resume")
    }

    func testLeavingEndsOnTheConfirmationTheCloseOrAfterTwoSeconds() throws {
        var r = Run()
        let leave = r.at(2, .leave)
        XCTAssertEqual(leave.first, .sendLeave)
        let (delay, timeout) = try XCTUnwrap(r.scheduled(leave))
        XCTAssertEqual(delay, 2)
        XCTAssertEqual(r.c.phase, .leaving)
        XCTAssertEqual(r.at(2.1, .closed(reason: "closed")), [.finishLeaving])
        XCTAssertEqual(r.at(4, timeout), [.finishLeaving], "the runner's finish is idempotent")
        _ = r.at(4, .ended)
        XCTAssertEqual(r.at(4.1, timeout), [], "over")
        XCTAssertEqual(r.at(4.2, .leave), [], "nothing to leave")
        XCTAssertNil(r.c.resumeToken)
    }
}
