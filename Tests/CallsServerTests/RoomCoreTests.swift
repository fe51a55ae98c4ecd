import CallRoomTestSupport
import CallsCore
@testable import CallsRelay
import CallsSecurity
@testable import CallsServer
@testable import CallsStore
import XCTest

/// The room core alone: inputs in, effects out, time given by the test. No store, no
/// sockets, no queue, no sleeps; receipts are written by hand, so every ordering promise about
/// the disk is checked step by step.
final class RoomCoreTests: XCTestCase {
    /// A fresh `jti` for each token (one token is one participant).
    nonisolated(unsafe) static var tokenCounter = 0
    static func nextTokenID() -> String {
        tokenCounter += 1
        return "t\(tokenCounter)"
    }

    let signer = CallTokenSigner(secret: Array(repeating: 9, count: 32))
    var core: RoomCore!
    var now: Int64 = 1_700_000_000_000
    let a = ConnectionID(node: "n", local: 1), b = ConnectionID(node: "n", local: 2), c = ConnectionID(node: "n", local: 3)

    override func setUp() {
        var limits = RoomLimits()
        limits.gracePeriodSeconds = 30
        limits.maxParticipants = 3
        core = RoomCore(signer: signer, appID: "app", limits: limits, mediaPort: 4000)
    }

    func token(_ uid: String, _ session: String = "room", role: String? = nil) -> String {
        signer.sign(CallTokenClaims(app: "app", sub: uid, sid: session, iat: now / 1000, exp: now / 1000 + 600, role: role, jti: Self.nextTokenID(), aud: "callroom:app"))
    }

    func input(_ i: RoomInput) -> [RoomEffect] { core.handle(i, now: now) }
    func message(_ m: ClientMessage, _ from: ConnectionID) -> [RoomEffect] { input(.message(m, from: from)) }

    func requests(_ effects: [RoomEffect]) -> [StoreRequest] {
        effects.compactMap { if case .persist(let r) = $0 { return r }; return nil }
    }
    func sent(_ effects: [RoomEffect], to target: ConnectionID) -> [ServerMessage] {
        effects.compactMap { if case .send(let m, let t) = $0, t == target { return m }; return nil }
    }
    func ok(_ r: StoreRequest, name: String? = nil, chatID: Int64? = nil) -> [RoomEffect] {
        input(.stored(StoreReceipt(id: r.id, result: .success(.init(name: name, chatID: chatID)))))
    }
    func failed(_ r: StoreRequest, diskFull: Bool = false) -> [RoomEffect] {
        input(.stored(StoreReceipt(id: r.id, result: .failure(StoreFailure(description: "disk full", diskFull: diskFull)))))
    }

    /// Joins and commits; returns the `joined` payload.
    @discardableResult
    func joined(_ uid: String, _ conn: ConnectionID, session: String = "room", name: String? = nil) throws -> ServerMessage.Joined {
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token(uid, session), sessionId: session)), conn)).first)
        for m in sent(ok(r, name: name ?? uid.capitalized), to: conn) { if case .joined(let j) = m { return j } }
        XCTFail("no joined for \(uid)")
        throw CancellationError()
    }

    /// A recording a crash cut starts again when a moderator is back — once, and only within
    /// `recordingResumeSeconds` of the restart (virtual clock).
    func testACutRecordingResumesWhenAModeratorIsBackInTime() throws {
        func startsRecording(_ effects: [RoomEffect]) -> Bool {
            effects.contains { if case .startMember(let l) = $0 { return l.feature == .recording }; return false }
        }
        _ = input(.resumeRecordings(["taped", "late"]))
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("kim", "taped"), sessionId: "taped")), a)).first)
        XCTAssertTrue(startsRecording(ok(r, name: "Kim")), "the first one back moderates: the recording starts again")
        let r2 = try XCTUnwrap(requests(message(.join(.init(callToken: token("lou", "taped"), sessionId: "taped")), b)).first)
        XCTAssertFalse(startsRecording(ok(r2, name: "Lou")), "once")
        now += RoomCore.recordingResumeSeconds * 1000 + 1
        let r3 = try XCTUnwrap(requests(message(.join(.init(callToken: token("max", "late"), sessionId: "late")), c)).first)
        XCTAssertFalse(startsRecording(ok(r3, name: "Max")), "too late: nobody is recorded by surprise")
    }

    /// Each start of a server feature is a row of the call's log (with its files): a moderator's
    /// start/stop loop made two a second. A call starts each at most `maxFeatureStartsPerCall`
    /// times; the other features and the next call count on their own.
    func testACallStartsEachFeatureABoundedNumberOfTimes() throws {
        var limits = RoomLimits()
        limits.maxFeatureStartsPerCall = 2
        core = RoomCore(signer: signer, appID: "app", limits: limits, mediaPort: 4000)
        func starts(_ f: SessionFeature, _ effects: [RoomEffect]) -> Bool {
            effects.contains { if case .startMember(let l) = $0 { return l.feature == f }; return false }
        }
        try joined("ann", a)
        for i in 0..<2 {
            XCTAssertTrue(starts(.recording, message(.setSessionFeature(feature: .recording, enabled: true), a)), "start \(i)")
            _ = message(.setSessionFeature(feature: .recording, enabled: false), a)
        }
        let third = message(.setSessionFeature(feature: .recording, enabled: true), a)
        XCTAssertFalse(starts(.recording, third))
        XCTAssertEqual(sent(third, to: a), [.error(code: .rateLimited, message: "This call has started its recording 2 times; no more until it ends.")])
        XCTAssertTrue(starts(.transcription, message(.setSessionFeature(feature: .transcription, enabled: true), a)), "each feature its own count")
        for r in requests(message(.leave, a)) { _ = ok(r) }
        try joined("ann", b)
        XCTAssertTrue(starts(.recording, message(.setSessionFeature(feature: .recording, enabled: true), b)), "the next call counts again")
    }

    func testAJoinIsAnnouncedOnlyAfterItsRowCommits() throws {
        let effects = message(.join(.init(callToken: token("ann"), sessionId: "room", idleTimeoutSeconds: 60)), a)
        XCTAssertTrue(sent(effects, to: a).isEmpty, "nothing is said before the disk has it: \(effects)")
        XCTAssertFalse(effects.contains { if case .relay = $0 { return true }; return false }, "no media before the disk either")
        let r = try XCTUnwrap(requests(effects).first)
        guard case .startCall(let call, "room", "audio", "meet", now)? = r.commands.first,
              case .participantJoined(let ref, call, "ann", _, nil, now) = r.commands[1],
              r.commands.last == .participantModerates(ref), r.commands.count == 3 else {
            return XCTFail("one request: start the call, record the join and that the first in moderates, \(r.commands)")
        }
        let after = ok(r, name: "Ann Stored")
        guard case .joined(let j)? = sent(after, to: a).first else { return XCTFail("\(after)") }
        XCTAssertEqual(j.you.name, "Ann Stored", "the name the store resolved")
        XCTAssertEqual(j.you.role, .moderator, "first in")
        XCTAssertEqual(j.mediaPort, 4000)
        var member = RelayTable.Member(key: 1, room: 1, ssrc: j.you.ssrc, consent: MediaConsent(ssrc: j.you.ssrc, token: Hex.decode(j.bindToken) ?? []))
        member.videoSSRC = try XCTUnwrap(j.you.videoSsrc)
        XCTAssertNotEqual(member.videoSSRC, member.ssrc)
        XCTAssertTrue(after.contains(.relay(RelayPatch(room: 1, members: [member]))))
        XCTAssertTrue(after.contains(.schedule(.idle(session: "room"), afterSeconds: 60)), "alone: the idle timer starts")
    }

    func testAJoinTheStoreRefusesIsAnErrorAndTheNextJoinStartsTheCallAgain() throws {
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("ann"))), a)).first)
        let after = failed(r)
        XCTAssertEqual(sent(after, to: a), [.error(code: .storage, message: "The server could not record the join.")])
        XCTAssertTrue(after.contains(.close(a)))
        XCTAssertTrue(after.contains { if case .log(.error, "store failed on join", _) = $0 { return true }; return false })
        XCTAssertTrue(core.rooms.isEmpty, "the room went with its only (never announced) participant")
        let again = try XCTUnwrap(requests(message(.join(.init(callToken: token("ann"))), b)).first)
        guard case .startCall? = again.commands.first else { return XCTFail("the call is started again: \(again.commands)") }
        // Refused by a full disk: said as one.
        XCTAssertEqual(sent(failed(again, diskFull: true), to: b), [.error(code: .storage, message: "The server's disk is full: it could not record the join.")])
    }

    func testPeersHearOfAJoinAfterItCommitsAndTheLeaverHearsLeftAfterItsLeaveCommits() throws {
        let ja = try joined("ann", a)
        let joining = message(.join(.init(callToken: token("bea"))), b)
        XCTAssertTrue(joining.contains(.cancel(.idle(session: "room"))), "not alone any more (from the join on)")
        let rb = try XCTUnwrap(requests(joining).first)
        guard case .participantJoined? = rb.commands.first, rb.commands.count == 1 else { return XCTFail("the call exists: \(rb.commands)") }
        let admitted = ok(rb, name: "Bea")
        guard case .participantJoined(let w)? = sent(admitted, to: a).first(where: { if case .participantJoined = $0 { return true }; return false })
        else { return XCTFail("\(admitted)") }
        XCTAssertEqual(w.name, "Bea")
        XCTAssertEqual(w.role, .participant)
        // b leaves: a hears at once, the media stops at once, b's `left` waits for the disk.
        let leaving = message(.leave, b)
        XCTAssertTrue(sent(leaving, to: a).contains { if case .participantLeft(let p, .left) = $0 { return p.name == "Bea" }; return false })
        XCTAssertTrue(leaving.contains { if case .relay(let p) = $0 { return p.members.map(\.key) == [1] }; return false })
        XCTAssertTrue(sent(leaving, to: b).isEmpty)
        let rl = try XCTUnwrap(requests(leaving).first)
        guard case .participantLeft(_, now)? = rl.commands.first, rl.commands.count == 1 else { return XCTFail("\(rl.commands)") }
        let done = ok(rl)
        XCTAssertEqual(sent(done, to: b), [.left(reason: .left)])
        XCTAssertEqual(done.last, .close(b))
        // The last one out ends the call in the same request as its leave.
        let last = requests(message(.leave, a))
        guard case .participantLeft? = last.first?.commands.first, case .endCall? = last.first?.commands.last else { return XCTFail("\(last)") }
        XCTAssertTrue(core.rooms.isEmpty)
        _ = ja
    }

    func testALeaveTheStoreRefusesStillLeavesAndIsLogged() throws {
        try joined("ann", a)
        let r = try XCTUnwrap(requests(message(.leave, a)).first)
        let after = failed(r)
        XCTAssertEqual(sent(after, to: a), [.left(reason: .left)])
        XCTAssertTrue(after.contains { if case .log(.error, "store failed on leave", _) = $0 { return true }; return false })
    }

    func testChatIsBroadcastOnceKeptAndAFailedWriteIsReported() throws {
        try joined("ann", a)
        try joined("bea", b)
        let r = try XCTUnwrap(requests(message(.chat(text: "  hi  "), a)).first)
        guard case .chat(_, "ann", _, "Ann", "hi", now)? = r.commands.first else { return XCTFail("\(r.commands)") }
        let kept = ok(r, chatID: 42)
        for conn in [a, b] {
            XCTAssertTrue(sent(kept, to: conn).contains { if case .chat(let m) = $0 { return m.id == 42 && m.text == "hi" }; return false })
        }
        let r2 = try XCTUnwrap(requests(message(.chat(text: "lost"), a)).first)
        let lost = failed(r2)
        XCTAssertEqual(sent(lost, to: a), [.error(code: .storage, message: "The message could not be kept.")])
        XCTAssertTrue(sent(lost, to: b).isEmpty, "nobody sees a message that was not kept")
        // A full disk is said as one.
        let r3 = try XCTUnwrap(requests(message(.chat(text: "full"), a)).first)
        XCTAssertEqual(sent(failed(r3, diskFull: true), to: a), [.error(code: .storage, message: "The message could not be kept: the server's disk is full.")])
    }

    func testChatRateRefillsOnTheGivenClock() throws {
        try joined("ann", a)
        for _ in 0..<5 { XCTAssertEqual(requests(message(.chat(text: "x"), a)).count, 1) }
        XCTAssertEqual(sent(message(.chat(text: "x"), a), to: a).first, .error(code: .rateLimited, message: "Too many chat messages; wait a moment."))
        now += 1_000
        XCTAssertEqual(requests(message(.chat(text: "x"), a)).count, 1, "one more a second")
    }

    /// A call keeps at most `maxChatMessagesPerCall` messages (each a row): past it, chat is
    /// refused and nothing is written; the next call starts again.
    func testACallKeepsABoundedNumberOfChatMessages() throws {
        var limits = RoomLimits()
        limits.maxChatMessagesPerCall = 3
        core = RoomCore(signer: signer, appID: "app", limits: limits, mediaPort: 4000)
        try joined("ann", a)
        try joined("bea", b)
        for (i, from) in [a, b, a].enumerated() {
            let r = try XCTUnwrap(requests(message(.chat(text: "m\(i)"), from)).first, "message \(i) is written")
            _ = ok(r, chatID: Int64(i))
            now += 1_000
        }
        let refused = message(.chat(text: "one too many"), b)
        XCTAssertTrue(requests(refused).isEmpty, "nothing written past the limit")
        XCTAssertEqual(sent(refused, to: b), [.error(code: .chatFull, message: "This call's chat holds 3 messages; no more are kept.")])
        XCTAssertTrue(sent(refused, to: a).isEmpty)
        // Everyone leaves: the call ends, and the next call of the session has its own.
        for conn in [a, b] { for r in requests(message(.leave, conn)) { _ = ok(r) } }
        try joined("ann", c)
        XCTAssertEqual(requests(message(.chat(text: "a new call"), c)).count, 1)
    }

    /// Each join is a row of the call's log and a `participantJoined` to everyone: one call
    /// token rejoining in a loop made them for as long as the call ran. A user's joins of one
    /// call, and the call's joins in all, are bounded; nothing is written past them, and the
    /// next call of the session counts again.
    func testACallTakesABoundedNumberOfJoins() throws {
        var limits = RoomLimits()
        limits.maxParticipants = 2
        limits.maxJoinsPerUserPerCall = 3
        limits.maxJoinsPerCall = 5
        core = RoomCore(signer: signer, appID: "app", limits: limits, mediaPort: 4000)
        try joined("ann", a)
        for _ in 0..<3 {
            try joined("eve", b)
            for r in requests(message(.leave, b)) { _ = ok(r) }
            now += 1_000
        }
        let again = message(.join(.init(callToken: token("eve"), sessionId: "room")), b)
        XCTAssertTrue(requests(again).isEmpty, "nothing written past the user's bound")
        XCTAssertEqual(sent(again, to: b).first,
                       .error(code: .rateLimited, message: "You have joined this call 3 times; no more joins of yours are taken until it ends."))
        XCTAssertTrue(sent(again, to: a).isEmpty, "nobody hears of it")
        _ = input(.connectionClosed(b))
        // The call's own bound (at least ten times the room's size: 20 here) with others' joins.
        for i in 0..<16 {
            try joined("u\(i)", c)
            for r in requests(message(.leave, c)) { _ = ok(r) }
        }
        let full = message(.join(.init(callToken: token("zed"), sessionId: "room")), c)
        XCTAssertTrue(requests(full).isEmpty)
        XCTAssertEqual(sent(full, to: c).first, .error(code: .roomFull, message: "This call has taken 20 joins; no more are taken until it ends."))
        _ = input(.connectionClosed(c))
        // Everyone leaves: the call ends, and the next call of the session counts again.
        for r in requests(message(.leave, a)) { _ = ok(r) }
        XCTAssertNil(core.rooms["room"])
        try joined("eve", b)
    }

    /// A four-digit passcode fell to 10,000 joins (two minutes at the signalling rate). A user
    /// has five wrong guesses a session, then one every 30 s; with none left the passcode is
    /// not even checked (the right one waits too). Others' guesses are their own; a join with
    /// no passcode is no guess.
    func testWrongPasscodesAreRationedPerUserAndSession() throws {
        core = RoomCore(signer: signer, appID: "app", limits: RoomLimits(), mediaPort: 4000,
                        roomRules: RoomRulesDirectory(defaultModeration: .firstJoiner, rules: ["room": RoomRules(passcode: "4711")]))
        func attempt(_ uid: String, _ passcode: String?, _ conn: ConnectionID) -> [ServerMessage] {
            defer { _ = input(.connectionClosed(conn)) }  // (each refusal closes; the client tries again on a new one)
            return sent(message(.join(.init(callToken: token(uid), sessionId: "room", passcode: passcode)), conn), to: conn)
        }
        let wrong = ServerMessage.error(code: .passcodeWrong, message: "The passcode is not right.")
        func errorCode(_ m: ServerMessage) -> SignalErrorCode? { if case .error(let code, _) = m { return code }; return nil }
        XCTAssertEqual(attempt("eve", nil, a).first, .error(code: .passcodeWrong, message: "This session needs a passcode."))
        for guess in 0..<5 { XCTAssertEqual(attempt("eve", "000\(guess)", a).first, wrong, "guess \(guess)") }
        XCTAssertEqual(attempt("eve", "4711", a).first,
                       .error(code: .rateLimited, message: "Too many wrong passcodes for this session: try again in 30 s."),
                       "no guess left: not even the right one is checked")
        XCTAssertEqual(attempt("eve", nil, a).first.flatMap(errorCode), .rateLimited)
        XCTAssertEqual(attempt("ann", "0000", b).first, wrong, "another user's guesses are their own")
        now += 20_000
        XCTAssertEqual(attempt("eve", "0005", a).first,
                       .error(code: .rateLimited, message: "Too many wrong passcodes for this session: try again in 10 s."))
        now += 10_000
        XCTAssertEqual(attempt("eve", "0006", a).first, wrong, "one more guess every 30 s")
        XCTAssertEqual(attempt("eve", "4711", a).first.flatMap(errorCode), .rateLimited)
        now += 30_000
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("eve"), sessionId: "room", passcode: "4711")), a)).first)
        XCTAssertNotNil(sent(ok(r), to: a).first { if case .joined = $0 { return true }; return false }, "the right one, in time, lets in")
    }

    /// The attack: joins sent one behind the other on a connection, each checked before the
    /// first refusal's close took effect — six passcodes guessed in one write. What comes behind
    /// a refusal that closes is not looked at, until the close arrives.
    func testNothingBehindARefusalThatClosesIsLookedAt() throws {
        core = RoomCore(signer: signer, appID: "app", limits: RoomLimits(), mediaPort: 4000,
                        roomRules: RoomRulesDirectory(defaultModeration: .firstJoiner, rules: ["room": RoomRules(passcode: "4711")]))
        let first = message(.join(.init(callToken: token("eve"), sessionId: "room", passcode: "0000")), a)
        XCTAssertEqual(sent(first, to: a).first, .error(code: .passcodeWrong, message: "The passcode is not right."))
        XCTAssertTrue(first.contains(.close(a)))
        for guess in ["0001", "0002", "4711"] {
            XCTAssertEqual(message(.join(.init(callToken: token("eve"), sessionId: "room", passcode: guess)), a), [], guess)
        }
        XCTAssertEqual(message(.chat(text: "hi"), a), [])
        _ = input(.connectionClosed(a))
        // Only the first was a guess: three more wrong ones and then the right one are checked.
        for guess in 0..<3 {
            XCTAssertEqual(sent(message(.join(.init(callToken: token("eve"), sessionId: "room", passcode: "1\(guess)00")), b), to: b).first,
                           .error(code: .passcodeWrong, message: "The passcode is not right."))
            _ = input(.connectionClosed(b))
        }
        XCTAssertFalse(requests(message(.join(.init(callToken: token("eve"), sessionId: "room", passcode: "4711")), a)).isEmpty,
                       "a new connection (the same id once closed) is looked at")
    }

    func testAConnectionThatDropsWhileItsJoinIsBeingWrittenIsNeverAnnounced() throws {
        try joined("ann", a)
        let rb = try XCTUnwrap(requests(message(.join(.init(callToken: token("bea"))), b)).first)
        let dropped = input(.connectionClosed(b))
        let rl = try XCTUnwrap(requests(dropped).first, "its (future) row is closed")
        guard case .participantLeft = rl.commands.first else { return XCTFail("\(rl.commands)") }
        XCTAssertTrue(sent(dropped, to: a).isEmpty)
        XCTAssertTrue(sent(ok(rb), to: a).isEmpty, "the late receipt changes nothing")
        XCTAssertEqual(core.rooms["room"]?.order.count, 1)
    }

    func testAFullRoomCountsJoinsStillBeingWritten() throws {
        try joined("ann", a)
        _ = message(.join(.init(callToken: token("bea"))), b)
        _ = message(.join(.init(callToken: token("cid"))), c)
        let d = ConnectionID(node: "n", local: 4)
        XCTAssertEqual(sent(message(.join(.init(callToken: token("dan"))), d), to: d).first,
                       .error(code: .roomFull, message: "The session already has 3 participants."))
    }

    func testTheModeratorRoleIsHandedOnAndModerationIsChecked() throws {
        let ja = try joined("ann", a)
        let jb = try joined("bea", b)
        XCTAssertEqual(sent(message(.muteParticipant(pid: ja.you.pid), b), to: b).first?.errorCode, .notModerator)
        XCTAssertEqual(sent(message(.muteParticipant(pid: "nobody"), a), to: a).first?.errorCode, .participantNotFound)
        let muted = message(.muteParticipant(pid: jb.you.pid), a)
        XCTAssertTrue(sent(muted, to: b).contains { if case .participantUpdated(let p, .audioMuted) = $0 { return p.pid == jb.you.pid }; return false })
        let left = message(.leave, a)
        XCTAssertTrue(sent(left, to: b).contains { if case .participantUpdated(let p, .roleChanged) = $0 { return p.role == .moderator }; return false })
    }

    func testAModeratorLeavingWhileTheOnlyOtherIsJoiningHandsTheRoleToThem() throws {
        try joined("ann", a)
        let rb = try XCTUnwrap(requests(message(.join(.init(callToken: token("bea"))), b)).first)
        _ = message(.leave, a)
        guard case .joined(let jb)? = sent(ok(rb), to: b).first else { return XCTFail("bea joins") }
        XCTAssertEqual(jb.you.role, .moderator, "a room never goes on without a moderator")
    }

    func testADroppedParticipantIsHeldAndResumedOnTimersTheCoreAsksFor() throws {
        let ja = try joined("ann", a)
        let jb = try joined("bea", b)
        let drop = input(.connectionClosed(b))
        XCTAssertTrue(drop.contains(.schedule(.grace(session: "room", pid: jb.you.pid), afterSeconds: 30)))
        let back = message(.resume(token: try XCTUnwrap(jb.resumeToken)), c)
        XCTAssertTrue(back.contains(.cancel(.grace(session: "room", pid: jb.you.pid))))
        guard case .resumed(let r)? = sent(back, to: c).first else { return XCTFail("\(back)") }
        XCTAssertNotEqual(r.bindToken, jb.bindToken)
        XCTAssertTrue(back.contains { if case .relay(let p) = $0 { return p.members.contains { $0.consent == MediaConsent(ssrc: r.you.ssrc, token: Hex.decode(r.bindToken) ?? []) } }; return false },
                      "the relay learns the new bind token")
        // A timer that fires after the resume changes nothing; dropped again, it ends the stay.
        XCTAssertTrue(input(.timerFired(.grace(session: "room", pid: jb.you.pid))).isEmpty)
        _ = input(.connectionClosed(c))
        let gone = input(.timerFired(.grace(session: "room", pid: jb.you.pid)))
        XCTAssertTrue(sent(gone, to: a).contains { if case .participantLeft(let p, .disconnected) = $0 { return p.pid == jb.you.pid }; return false })
        XCTAssertTrue(sent(gone, to: c).isEmpty, "nobody to tell")
        _ = ja
    }

    func testTheIdleTimerLeavesTheLoneParticipantWithTimedOut() throws {
        try joined("ann", a)
        let fired = input(.timerFired(.idle(session: "room")))
        let r = try XCTUnwrap(requests(fired).first)
        XCTAssertEqual(sent(ok(r), to: a), [.left(reason: .timedOut)])
    }

    func testEachChangePatchesOnlyItsOwnRoom() throws {
        try joined("ann", a, session: "one")
        let rb = try XCTUnwrap(requests(message(.join(.init(callToken: token("bea", "two"), sessionId: "two")), b)).first)
        let patches = ok(rb).compactMap { if case .relay(let p) = $0 { return p }; return nil }
        XCTAssertEqual(patches.map(\.room), [2], "room one is not touched")
        XCTAssertEqual(patches.first?.members.count, 1)
    }

    func testShutdownTellsEveryoneAfterTheirLeavesCommit() throws {
        try joined("ann", a)
        try joined("bea", b)
        let down = input(.shutdown(.serverShuttingDown))
        XCTAssertTrue(sent(down, to: a).allSatisfy { if case .left = $0 { return false }; return true })
        var told: [ServerMessage] = []
        for r in requests(down) {
            let after = ok(r)
            told += sent(after, to: a) + sent(after, to: b)
        }
        XCTAssertEqual(told.filter { $0 == .left(reason: .serverShuttingDown) }.count, 2)
        XCTAssertTrue(core.rooms.isEmpty)
    }

    func testTheLoudestAdmittedSpeakerIsAnnouncedButNeverAMutedOne() throws {
        let ja = try joined("ann", a)
        try joined("bea", b)
        let key = try XCTUnwrap(core.rooms["room"]?.participants[ja.you.pid]?.key)
        XCTAssertTrue(sent(input(.dominantSpeaker(room: 1, key: key)), to: b).contains(.dominantSpeaker(pid: ja.you.pid)))
        XCTAssertTrue(input(.dominantSpeaker(room: 1, key: key)).isEmpty, "no change, no message")
        _ = input(.dominantSpeaker(room: 1, key: nil))
        _ = message(.setAudioMuted(true), a)
        XCTAssertTrue(input(.dominantSpeaker(room: 1, key: key)).isEmpty, "muted: never dominant")
        XCTAssertTrue(input(.dominantSpeaker(room: 7, key: key)).isEmpty, "another room's index")
    }

    /// SRTP keys: the joiner gets its own and everyone's; the room gets the joiner's before its
    /// roster change; a leave gives every remaining sender a new epoch and a new key.
    func testMediaKeysAreHandedOutAndRotatedWhenAMemberLeaves() throws {
        let ja = try joined("ann", a)
        XCTAssertEqual(ja.srtpProfile, .aeadAES128GCM)
        XCTAssertEqual(ja.mediaKeys?.map(\.ssrc), [ja.you.ssrc], "alone: its own key")
        let annKey = try XCTUnwrap(ja.mediaKeys?.first)
        XCTAssertEqual(Base64URL.decode(annKey.key)?.count, 28)
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("bea"))), b)).first)
        let admitted = ok(r)
        guard case .joined(let jb)? = sent(admitted, to: b).first else { return XCTFail("\(admitted)") }
        XCTAssertEqual(Set(jb.mediaKeys?.map(\.ssrc) ?? []), [ja.you.ssrc, jb.you.ssrc])
        XCTAssertEqual(jb.mediaKeys?.first?.ssrc, jb.you.ssrc, "its own key first")
        XCTAssertTrue(jb.mediaKeys?.contains(annKey) == true, "ann's current key")
        let toAnn = sent(admitted, to: a)
        guard case .mediaKeys(let k)? = toAnn.first, case .participantJoined? = toAnn.dropFirst().first else { return XCTFail("\(toAnn)") }
        XCTAssertEqual(k, [try XCTUnwrap(jb.mediaKeys?.first)])
        _ = try joined("cy", c)
        let leave = message(.leave, c)
        let rotated = sent(leave, to: a).compactMap { if case .mediaKeys(let k) = $0 { return k }; return nil }
        XCTAssertEqual(rotated.count, 1, "one rotation: \(sent(leave, to: a))")
        let keys = try XCTUnwrap(rotated.first)
        XCTAssertEqual(Set(keys.map(\.ssrc)), [ja.you.ssrc, jb.you.ssrc], "the leaver's key is gone")
        XCTAssertTrue(keys.allSatisfy { $0.epoch == 1 }, "\(keys)")
        XCTAssertFalse(keys.contains { $0.key == annKey.key }, "new key material")
        XCTAssertEqual(sent(leave, to: b).filter { if case .mediaKeys = $0 { return true }; return false }.count, 1)
        XCTAssertTrue(sent(leave, to: c).allSatisfy { if case .mediaKeys = $0 { return false }; return true }, "the leaver learns nothing new")
    }

    /// Where the room holds a moderator's mute, the muted participant's own unmute is refused
    /// (the relay keeps dropping them) until a moderator allows it; elsewhere it lifts the mute.
    func testAModeratorsMuteHoldsUntilAModeratorAllowsAnUnmute() throws {
        let rules = RoomRulesDirectory(defaultModeration: .firstJoiner, rules: ["room": RoomRules(moderatorMute: .untilAllowed)])
        var limits = RoomLimits()
        limits.maxParticipants = 3
        core = RoomCore(signer: signer, appID: "app", limits: limits, mediaPort: 4000, roomRules: rules)
        let ja = try joined("ann", a)  // moderator
        let jb = try joined("bea", b)
        func relayMuted(_ e: [RoomEffect]) -> Bool? {
            e.lazy.compactMap { if case .relay(let p) = $0 { return p.members.first { $0.ssrc == jb.you.ssrc }?.muted }; return nil }.first
        }
        let muted = message(.muteParticipant(pid: jb.you.pid), a)
        XCTAssertEqual(relayMuted(muted), true)
        guard case .participantUpdated(let w, .audioMuted)? = sent(muted, to: b).first else { return XCTFail("\(muted)") }
        XCTAssertEqual(w.mutedByModerator, true, "everyone sees the mute holds")
        let refused = message(.setAudioMuted(false), b)
        XCTAssertEqual(sent(refused, to: b).first?.errorCode, .mutedByModerator)
        XCTAssertTrue(sent(refused, to: a).isEmpty, "nothing changed for the room")
        XCTAssertNil(relayMuted(refused), "the relay still drops them")
        XCTAssertEqual(sent(message(.allowUnmute(pid: jb.you.pid), b), to: b).first?.errorCode, .notModerator, "not by themselves")
        let allowed = message(.allowUnmute(pid: jb.you.pid), a)
        guard case .participantUpdated(let w2, .unmuteAllowed)? = sent(allowed, to: b).first else { return XCTFail("\(allowed)") }
        XCTAssertNil(w2.mutedByModerator)
        XCTAssertTrue(w2.isAudioMuted, "allowed, not unmuted: they unmute themselves")
        let unmuted = message(.setAudioMuted(false), b)
        guard case .participantUpdated(_, .audioUnmuted)? = sent(unmuted, to: a).first else { return XCTFail("\(unmuted)") }
        XCTAssertEqual(relayMuted(unmuted), false, "and the relay forwards them again")
        _ = ja
    }

    func testHeartbeatNamesEveryLiveCall() throws {
        try joined("ann", a, session: "one")
        try joined("bea", b, session: "two")
        guard case .heartbeat(let calls, now)? = requests(input(.heartbeat)).first?.commands.first else { return XCTFail() }
        XCTAssertEqual(Set(calls).count, 2)
    }

    /// A heartbeat the store refuses every 5 s while the disk stays full is logged when the
    /// outage starts and when it ends (with how many failed) — not a line a heartbeat.
    func testHeartbeatsTheStoreRefusesAreLoggedOncePerOutage() throws {
        try joined("ann", a)
        func logs(_ effects: [RoomEffect]) -> [String] {
            effects.compactMap { if case .log(_, let m, let f) = $0 { return m + " " + f.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }; return nil }
        }
        var lines: [String] = []
        for _ in 0..<4 {
            now += 5_000
            lines += logs(failed(try XCTUnwrap(requests(input(.heartbeat)).first)))
        }
        XCTAssertEqual(lines, ["store failed: heartbeat error=disk full until=it succeeds again (said then)"])
        now += 5_000
        XCTAssertEqual(logs(ok(try XCTUnwrap(requests(input(.heartbeat)).first))), ["store answers again: heartbeat failed_writes=4"])
        now += 5_000
        XCTAssertEqual(logs(ok(try XCTUnwrap(requests(input(.heartbeat)).first))), [], "nothing while it works")
        now += 5_000
        XCTAssertEqual(logs(failed(try XCTUnwrap(requests(input(.heartbeat)).first))).count, 1, "the next outage is said again")
    }
}

private extension ServerMessage {
    var errorCode: SignalErrorCode? { if case .error(let c, _) = self { return c }; return nil }
}

/// Removals and hard mutes that stick (#34), on the virtual clock.
extension RoomCoreTests {
    /// The attack: a removed participant minted a new call token and was back in 10 ms.
    func testARemovalKeepsTheUserOutWhateverTokenUntilTheSessionEnds() throws {
        let ja = try joined("ann", a)
        let jb = try joined("bob", b)
        XCTAssertEqual(ja.you.role, .moderator)
        _ = message(.removeParticipant(pid: jb.you.pid), a)
        let again = message(.join(.init(callToken: token("bob"), sessionId: "room")), c)
        guard case .error(.removedFromSession, let text)? = sent(again, to: c).first else { return XCTFail("refused: \(again)") }
        XCTAssertTrue(text.contains("any token"), text)
        XCTAssertTrue(again.contains(.close(c)))
        XCTAssertTrue(requests(again).isEmpty, "not even a row")
        _ = input(.connectionClosed(c))
        // Another session is not this one.
        XCTAssertFalse(requests(message(.join(.init(callToken: token("bob", "other"), sessionId: "other")), c)).isEmpty)
        _ = input(.connectionClosed(c))
        // Only a moderator lets them back; the operator does too (below).
        let f = ConnectionID(node: "n", local: 6)
        try joined("cy", f)
        guard case .error(.notModerator, _)? = sent(message(.allowRejoin(uid: "bob"), f), to: f).first else { return XCTFail("only moderators") }
        for r in requests(message(.leave, f)) { _ = ok(r) }
        let back = message(.allowRejoin(uid: "bob"), a)
        XCTAssertTrue(back.contains { if case .audit(let e) = $0 { return e.action == "allow rejoin" && e.result == "ok" }; return false })
        let e = ConnectionID(node: "n", local: 5)
        XCTAssertFalse(requests(message(.join(.init(callToken: token("bob"), sessionId: "room")), e)).isEmpty, "the moderator let them back")
        _ = input(.connectionClosed(e))
        let jb1 = try joined("bob", b)
        _ = message(.removeParticipant(pid: jb1.you.pid), a)
        // The operator lifts it: a new token gets in.
        _ = input(.rulesChanged(session: "room", liftedBan: "bob"))
        let d = ConnectionID(node: "n", local: 4)
        XCTAssertFalse(requests(message(.join(.init(callToken: token("bob"), sessionId: "room")), d)).isEmpty, "lifted")
        _ = input(.connectionClosed(d))
        // Removed again, then the session ends: the next session of the same id admits them.
        let jb2 = try joined("bob", b)
        _ = message(.removeParticipant(pid: jb2.you.pid), a)
        for r in requests(message(.leave, a)) { _ = ok(r) }
        XCTAssertNil(core.rooms["room"])
        XCTAssertNil(core.sessionBans["room"])
        XCTAssertFalse(requests(message(.join(.init(callToken: token("bob"), sessionId: "room")), c)).isEmpty, "a new session")
    }

    /// `maxRoomsPerUser` counts rooms, not participants (a second device in the same room is
    /// no new room), and a room left is free again — read from the index the core keeps, which
    /// must stay what a scan of every room would say through any joins and leaves.
    func testRoomsPerUserAreCountedByTheIndexAJoinAndALeaveKeep() throws {
        var limits = core.limits
        limits.maxRoomsPerUser = 2
        limits.maxParticipants = 20
        core = RoomCore(signer: signer, appID: "app", limits: limits, mediaPort: 4000)
        _ = try joined("ann", a, session: "one")
        _ = try joined("ann", b, session: "two")
        let d = ConnectionID(node: "n", local: 40)
        let refused = message(.join(.init(callToken: token("ann", "three"), sessionId: "three")), d)
        XCTAssertEqual(sent(refused, to: d).first?.errorCode, .tooManyRooms)
        _ = input(.connectionClosed(d))
        _ = try joined("ann", c, session: "one")  // (a second device in a room she is in)
        for r in requests(message(.leave, b)) { _ = ok(r) }
        _ = try joined("ann", ConnectionID(node: "n", local: 41), session: "three")
        // Joins and leaves in any order: the index is the scan's answer after each.
        var rng = SplitMix64(seed: 7)
        var open: [(ConnectionID, String)] = []
        for step in 0..<300 {
            if open.isEmpty || rng.next() % 3 != 0 {
                let conn = ConnectionID(node: "n", local: UInt64(100 + step))
                let uid = ["bob", "cy", "dee"][Int(rng.next() % 3)], sid = ["s1", "s2", "s3", "s4"][Int(rng.next() % 4)]
                let effects = message(.join(.init(callToken: token(uid, sid), sessionId: sid)), conn)
                if let r = requests(effects).first {
                    _ = ok(r)
                    open.append((conn, uid))
                } else {
                    _ = input(.connectionClosed(conn))
                }
            } else {
                let (conn, _) = open.remove(at: Int(rng.next() % UInt64(open.count)))
                for r in requests(message(.leave, conn)) { _ = ok(r) }
            }
            var scanned: [String: [String: Int]] = [:]
            for room in core.rooms.values { for p in room.participants.values { scanned[p.wire.uid, default: [:]][room.sessionId, default: 0] += 1 } }
            XCTAssertEqual(core.roomsOfUser, scanned, "step \(step)")
            XCTAssertTrue(scanned.values.allSatisfy { $0.count <= 2 }, "step \(step)")
        }
    }

    /// A removed token is kept out until it expires, past its session's end — and no longer:
    /// sessions that end leave nothing behind once their removed tokens have expired.
    func testRemovedTokensAreForgottenOnceExpired() throws {
        _ = try joined("ann", a)
        let jb = try joined("bob", b)
        _ = message(.removeParticipant(pid: jb.you.pid), a)
        for r in requests(message(.leave, a)) { _ = ok(r) }
        XCTAssertNil(core.rooms["room"])
        XCTAssertEqual(core.removedTokens["room"]?.count, 1, "bob's token stays out of the next session of this id")
        now += 601_000  // (the tokens live 600 s)
        _ = try joined("cy", c, session: "other")
        for r in requests(message(.leave, c)) { _ = ok(r) }
        XCTAssertEqual(core.removedTokens.count, 0, "expired: forgotten when a room ends")
    }

    /// The attack: leave and rejoin to shed a moderator's `untilAllowed` mute (and the relay's drop).
    func testAHardMuteSurvivesLeavingAndRejoining() throws {
        core = RoomCore(signer: signer, appID: "app", limits: core.limits, mediaPort: 4000,
                        roomRules: RoomRulesDirectory(defaultModeration: .firstJoiner, rules: ["room": RoomRules(moderatorMute: .untilAllowed)]))
        _ = try joined("ann", a)
        let jb = try joined("bob", b)
        _ = message(.muteParticipant(pid: jb.you.pid), a)
        for r in requests(message(.leave, b)) { _ = ok(r) }
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("bob"), sessionId: "room")), c)).first)
        let back = ok(r, name: "Bob")
        guard case .joined(let j)? = sent(back, to: c).first else { return XCTFail("\(back)") }
        XCTAssertTrue(j.you.isAudioMuted, "comes back muted")
        XCTAssertEqual(j.you.mutedByModerator, true)
        let patch = back.compactMap { if case .relay(let p) = $0 { return p }; return nil }.last
        XCTAssertEqual(patch?.members.first { $0.ssrc == j.you.ssrc }?.muted, true, "and the relay drops what it sends")
        guard case .error(.mutedByModerator, _)? = sent(message(.setAudioMuted(false), c), to: c).first else { return XCTFail("still held") }
        _ = message(.allowUnmute(pid: j.you.pid), a)
        XCTAssertFalse(sent(message(.setAudioMuted(false), c), to: c).contains { if case .error = $0 { return true }; return false }, "allowed: unmutes")
        XCTAssertNil(core.heldMutes["room"]?.first)
    }
}

/// Locked rooms and the lobby (#34), on the virtual clock.
extension RoomCoreTests {
    func testALockedRoomTakesNobodyNewButItsOwnComeBack() throws {
        let ja = try joined("ann", a)
        let jb = try joined("bob", b)
        guard case .error(.notModerator, _)? = sent(message(.setRoomLocked(true), b), to: b).first else { return XCTFail("only moderators lock") }
        let locking = message(.setRoomLocked(true), a)
        XCTAssertEqual(sent(locking, to: b), [.roomLocked(true, by: ja.you.pid)], "everyone hears")
        XCTAssertTrue(locking.contains { if case .audit(let e) = $0 { return e.action == "lock" && e.result == "ok" }; return false })
        let refused = message(.join(.init(callToken: token("cy"), sessionId: "room")), c)
        XCTAssertEqual(sent(refused, to: c).first, .error(code: .roomLocked, message: "A moderator locked this session: nobody new may join."))
        XCTAssertTrue(refused.contains(.close(c)))
        _ = input(.connectionClosed(c))
        // One of the room whose connection dropped resumes into a locked room.
        _ = input(.connectionClosed(b))
        let d = ConnectionID(node: "n", local: 9)
        guard case .resumed(let back)? = sent(message(.resume(token: try XCTUnwrap(jb.resumeToken)), d), to: d).first else { return XCTFail("resumes") }
        XCTAssertEqual(back.locked, true, "and is told it is locked")
        _ = message(.setRoomLocked(false), a)
        XCTAssertFalse(requests(message(.join(.init(callToken: token("cy"), sessionId: "room")), c)).isEmpty, "unlocked: in")
    }

    func testALobbyRoomHoldsJoinersUntilAModeratorLetsThemIn() throws {
        core = RoomCore(signer: signer, appID: "app", limits: core.limits, mediaPort: 4000,
                        roomRules: RoomRulesDirectory(defaultModeration: .firstJoiner, defaultAccess: .lobby))
        let host = try joined("host", a)
        XCTAssertEqual(host.you.role, .moderator, "the first in hosts (firstJoiner moderation)")
        // Bob waits: no row, no pid in the roster, no media; the host is asked.
        let waiting = message(.join(.init(callToken: token("bob"), sessionId: "room", displayName: "Bob")), b)
        XCTAssertEqual(sent(waiting, to: b), [.lobbyWaiting])
        XCTAssertTrue(requests(waiting).isEmpty, "nothing on disk while waiting")
        guard case .lobbyRequest(let w)? = sent(waiting, to: a).first else { return XCTFail("the host is asked: \(waiting)") }
        XCTAssertEqual(w.name, "Bob")
        XCTAssertEqual(core.rooms["room"]?.order.count, 1)
        guard case .error(.notJoined, _)? = sent(message(.chat(text: "let me in"), b), to: b).first else { return XCTFail("waiting: no requests") }
        // Cy waits too, then goes away: the host hears.
        let cyWaits = message(.join(.init(callToken: token("cy"), sessionId: "room")), c)
        guard case .lobbyRequest(let cw)? = sent(cyWaits, to: a).first else { return XCTFail("\(cyWaits)") }
        XCTAssertEqual(sent(input(.connectionClosed(c)), to: a), [.lobbyResolved(pid: cw.pid, admitted: false)])
        // The host lets Bob in: the usual join follows.
        let admitting = message(.admitFromLobby(pid: w.pid), a)
        XCTAssertTrue(sent(admitting, to: a).contains(.lobbyResolved(pid: w.pid, admitted: true)))
        let r = try XCTUnwrap(requests(admitting).first, "the join's row")
        guard case .joined(let jb)? = sent(ok(r, name: "Bob"), to: b).first else { return XCTFail("Bob is in") }
        XCTAssertEqual(jb.you.role, .participant)
        // Denied: told, and closed.
        let d = ConnectionID(node: "n", local: 9)
        guard case .lobbyRequest(let dw)? = sent(message(.join(.init(callToken: token("dan"), sessionId: "room")), d), to: a).first else { return XCTFail() }
        let denying = message(.denyFromLobby(pid: dw.pid), a)
        XCTAssertEqual(sent(denying, to: d), [.error(code: .lobbyDenied, message: "A moderator did not let you in.")])
        XCTAssertTrue(denying.contains(.close(d)))
        guard case .error(.notModerator, _)? = sent(message(.admitFromLobby(pid: "x"), b), to: b).first else { return XCTFail("participants cannot admit") }
    }

    func testInvitedAccessAndTheHostArrivingLate() throws {
        var rules = RoomRules(allowedUids: ["bob"])
        rules.access = .lobby
        core = RoomCore(signer: signer, appID: "app", limits: core.limits, mediaPort: 4000,
                        roomRules: RoomRulesDirectory(defaultModeration: .operator, rules: ["room": rules, "inv": RoomRules(allowedUids: ["bob"]).with(access: .invited)]))
        // Nobody moderates yet: a guest waits for the host.
        XCTAssertEqual(sent(message(.join(.init(callToken: token("guest"), sessionId: "room")), c), to: c), [.lobbyWaiting])
        // Those on the list go straight in; so does the operator's moderator, who is then told who waits.
        XCTAssertFalse(requests(message(.join(.init(callToken: token("bob"), sessionId: "room")), b)).isEmpty)
        let r = try XCTUnwrap(requests(message(.join(.init(callToken: token("host", role: "moderator"), sessionId: "room")), a)).first)
        XCTAssertTrue(sent(ok(r), to: a).contains { if case .lobbyRequest(let w) = $0 { return w.uid == "guest" }; return false })
        // `invited`: not on the list, not a moderator: refused outright.
        let d = ConnectionID(node: "n", local: 9)
        guard case .error(.notOnAllowList, _)? = sent(message(.join(.init(callToken: token("eve", "inv"), sessionId: "inv")), d), to: d).first else {
            return XCTFail("invited only")
        }
    }
}

extension RoomRules {
    func with(access: Access) -> RoomRules { var r = self; r.access = access; return r }
}
