import CallRoomTestSupport
import CallsCore
@testable import CallsServer
@testable import CallsStore
import XCTest

/// Ringing calls as pure logic: devices say hello, calls ring, receipts release what was
/// decided. No store, no sockets, no sleeps; time and receipts are the test's.
final class RingCoreTests: XCTestCase {
    var core: RingCore!
    var now: Int64 = 1_700_000_000_000
    let ann = RingUser(uid: "ann", name: "Ann"), bob = RingUser(uid: "bob", name: "Bob"), cat = RingUser(uid: "cat", name: "Cat")
    let a = ConnectionID(node: "n", local: 1), b1 = ConnectionID(node: "n", local: 2), b2 = ConnectionID(node: "n", local: 3)
    let c = ConnectionID(node: "n", local: 4)

    override func setUp() { core = RingCore(defaultTimeoutSeconds: 45) }

    func input(_ i: RingInput) -> [RingEffect] { core.handle(i, now: now) }
    func sent(_ e: [RingEffect], to target: ConnectionID) -> [ServerMessage] {
        e.compactMap { if case .send(let m, let t) = $0, t == target { return m }; return nil }
    }
    func events(_ e: [RingEffect]) -> [CallEventKind] { e.compactMap { if case .send(.call(let k, _, _), _) = $0 { return k }; return nil } }
    func triggers(_ e: [RingEffect]) -> [CallTrigger] { e.compactMap { if case .event(let t, _) = $0 { return t }; return nil } }
    func request(_ e: [RingEffect]) throws -> StoreRequest { try XCTUnwrap(e.compactMap { if case .persist(let r) = $0 { return r }; return nil }.first, "\(e)") }
    func ok(_ e: [RingEffect]) throws -> [RingEffect] { input(.stored(StoreReceipt(id: try request(e).id, result: .success(.init())))) }
    func error(_ e: [RingEffect], to c: ConnectionID) -> SignalErrorCode? {
        sent(e, to: c).compactMap { if case .error(let code, _) = $0 { return code }; return nil }.first
    }
    func online() {
        _ = input(.hello(a, ann))
        _ = input(.hello(b1, bob))
        _ = input(.hello(b2, bob))
        _ = input(.hello(c, cat))
    }

    /// Ann calls Bob; returns the session id once it rings.
    func ringBob(timeout: Int? = nil) throws -> String {
        let e = input(.initiate(a, receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: timeout, receiver: RingReceiver(user: bob)))
        XCTAssertTrue(sent(e, to: b1).isEmpty, "nothing rings before the call is on disk")
        let after = try ok(e)
        guard case .call(.initiated, let call, nil)? = sent(after, to: a).first else { XCTFail("\(after)"); throw CancellationError() }
        XCTAssertEqual(events(sent(after, to: b1).map { .send($0, to: b1) }), [.incoming])
        XCTAssertEqual(events(sent(after, to: b2).map { .send($0, to: b2) }), [.incoming], "every device of the receiver rings")
        XCTAssertTrue(after.contains(.schedule(sessionId: call.sessionId, afterSeconds: Double(timeout ?? 45))))
        XCTAssertEqual(triggers(after), [.callInitiated])
        return call.sessionId
    }

    func testHelloIsAnsweredAndAnUnknownTokenRefused() {
        XCTAssertEqual(sent(input(.hello(a, ann)), to: a), [.welcome(uid: "ann", name: "Ann")])
        XCTAssertEqual(error(input(.hello(b1, nil)), to: b1), .authTokenInvalid)
        XCTAssertEqual(error(input(.message(.acceptCall(sessionId: "x"), from: b1)), to: b1), .notOnline)
    }

    /// A user is online on at most 20 devices: each ring is a message to every one, and a
    /// connection that said hello stays while kept alive — one account's token held any number
    /// of sockets. The 21st is refused and closed; once one goes, another gets in; a device
    /// saying hello again is no new one, and other users are not touched.
    func testAUserIsOnlineOnAtMostTwentyDevices() throws {
        let devices = (0..<RingCore.maxDevicesPerUser).map { ConnectionID(node: "n", local: 100 + UInt64($0)) }
        for d in devices { XCTAssertEqual(sent(input(.hello(d, bob)), to: d), [.welcome(uid: "bob", name: "Bob")]) }
        let extra = ConnectionID(node: "n", local: 999)
        let refused = input(.hello(extra, bob))
        XCTAssertEqual(error(refused, to: extra), .tooManyDevices)
        XCTAssertTrue(refused.contains(.close(extra)))
        XCTAssertEqual(core.devices["bob"]?.count, 20)
        XCTAssertEqual(sent(input(.hello(devices[3], bob)), to: devices[3]), [.welcome(uid: "bob", name: "Bob")], "hello again on a device it has")
        XCTAssertEqual(sent(input(.hello(a, ann)), to: a), [.welcome(uid: "ann", name: "Ann")])
        // A ring reaches the twenty, not the refused one.
        let e = try ok(input(.initiate(a, receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil, receiver: RingReceiver(user: bob))))
        XCTAssertEqual(Set(e.compactMap { if case .send(.call(.incoming, _, _), let t) = $0 { return t }; return nil }), Set(devices))
        _ = input(.connectionClosed(devices[0]))
        XCTAssertEqual(sent(input(.hello(extra, bob)), to: extra).first.flatMap { if case .welcome = $0 { return true }; return nil }, true,
                       "one went: the next gets in")
    }

    func testAStoreThatCannotBeReadIsSaidAsStorageNeverAsAnUnknownTokenOrReceiver() {
        XCTAssertEqual(error(input(.storeUnavailable(a, during: .hello)), to: a), .storage)
        online()
        let e = input(.storeUnavailable(a, during: .initiateCall))
        XCTAssertEqual(error(e, to: a), .storage)
        XCTAssertTrue(sent(e, to: b1).isEmpty, "nothing rings")
    }

    func testTheFirstAcceptWinsAndTheOtherDeviceStopsRinging() throws {
        online()
        let sid = try ringBob()
        let accepting = input(.message(.acceptCall(sessionId: sid), from: b2))
        XCTAssertTrue(sent(accepting, to: a).isEmpty, "announced after the disk")
        XCTAssertEqual(error(input(.message(.acceptCall(sessionId: sid), from: b1)), to: b1), .callNotRinging, "a second accept is refused at once")
        let after = try ok(accepting)
        XCTAssertEqual(events(after.filter { if case .send(_, a) = $0 { return true }; return false }), [.accepted])
        XCTAssertEqual(sent(after, to: b1).first.flatMap { m -> CallCancelReason? in if case .call(.cancelled, _, let r) = m { return r }; return nil },
                       CallCancelReason.answeredElsewhere)
        XCTAssertTrue(after.contains(.event(.callStarted, core.calls[sid]!.call)))
        // Either side ends it; both hear.
        let ending = try ok(input(.message(.endCall(sessionId: sid), from: a)))
        XCTAssertTrue(sent(ending, to: b2).contains { if case .call(.ended, let call, _) = $0 { return call.status == .ended }; return false })
        XCTAssertEqual(triggers(ending), [.callEnded])
        XCTAssertNil(core.calls[sid])
        XCTAssertEqual(error(input(.message(.acceptCall(sessionId: sid), from: b1)), to: b1), .callNotFound)
    }

    func testRejectTellsTheCallerAndTheOtherDevices() throws {
        online()
        let sid = try ringBob()
        XCTAssertEqual(error(input(.message(.rejectCall(sessionId: sid, status: .rejected), from: a)), to: a), .notAllowed, "the caller cancels, not rejects")
        let after = try ok(input(.message(.rejectCall(sessionId: sid, status: .rejected), from: b1)))
        XCTAssertEqual(sent(after, to: a).count, 1)
        guard case .call(.rejected, let call, _)? = sent(after, to: a).first else { return XCTFail("\(after)") }
        XCTAssertEqual(call.status, .rejected)
        XCTAssertEqual(call.members.first?.outcome, .rejected)
        XCTAssertTrue(sent(after, to: b2).contains { if case .call(.cancelled, _, .rejectedElsewhere) = $0 { return true }; return false })
        XCTAssertEqual(triggers(after), [.callRejected])
    }

    func testAReceiverInAnotherCallIsBusyAndTheCallerMayNotStartASecondCall() throws {
        online()
        let sid = try ringBob()
        _ = try ok(input(.message(.acceptCall(sessionId: sid), from: b1)))
        // Cat calls Bob, who is in a call: busy at once, without ringing him.
        let e = input(.initiate(c, receiverId: "bob", receiverType: .user, type: .video, timeoutSeconds: nil, receiver: RingReceiver(user: bob)))
        let after = try ok(e)
        XCTAssertEqual(events(after.filter { if case .send(_, c) = $0 { return true }; return false }), [.initiated, .busy])
        XCTAssertTrue(sent(after, to: b1).isEmpty, "a busy receiver is not rung")
        XCTAssertEqual(triggers(after), [.callInitiated, .callBusy])
        XCTAssertEqual(error(input(.initiate(a, receiverId: "cat", receiverType: .user, type: .audio, timeoutSeconds: nil,
                                              receiver: RingReceiver(user: cat))), to: a), .alreadyInCall)
    }

    func testTheCallerCancelsAndAcceptAfterwardsIsRefused() throws {
        online()
        let sid = try ringBob()
        let after = try ok(input(.message(.rejectCall(sessionId: sid, status: .cancelled), from: a)))
        XCTAssertTrue(after.contains(.cancel(sessionId: sid)) == false, "the timer was cancelled when decided, not at the receipt")
        XCTAssertTrue(sent(after, to: b1).contains { if case .call(.cancelled, _, .cancelledByInitiator) = $0 { return true }; return false })
        XCTAssertEqual(triggers(after), [.callCancelled])
        XCTAssertEqual(error(input(.message(.acceptCall(sessionId: sid), from: b1)), to: b1), .callNotFound)
    }

    /// The caller's last device drops while it rings: a reconnect within the grace keeps it
    /// ringing; none, and it stops ringing (`callerOffline`) instead of ringing out its timeout.
    func testACallWhoseCallerWentOfflineStopsRinging() throws {
        online()
        let sid = try ringBob()
        let dropped = input(.connectionClosed(a))
        XCTAssertEqual(dropped, [.scheduleCallerCheck(sessionId: sid, afterSeconds: RingCore.callerGoneSeconds)])
        // Back on a new connection before the check: the check finds them and nothing changes.
        let a2 = ConnectionID(node: "n", local: 9)
        XCTAssertTrue(sent(input(.hello(a2, ann)), to: a2).contains { if case .call(.initiated, _, _) = $0 { return true }; return false },
                      "the returning caller hears the call it is making")
        now += 10_000
        XCTAssertTrue(input(.callerGone(sessionId: sid)).isEmpty, "the caller is back: it keeps ringing")
        XCTAssertEqual(core.calls[sid]?.call.status, .initiated)
        // Gone for good this time.
        XCTAssertEqual(input(.connectionClosed(a2)), [.scheduleCallerCheck(sessionId: sid, afterSeconds: RingCore.callerGoneSeconds)])
        now += 10_000
        let deciding = input(.callerGone(sessionId: sid))
        XCTAssertTrue(deciding.contains(.cancel(sessionId: sid)), "the ring-out timer stops")
        XCTAssertTrue(sent(deciding, to: b1).isEmpty, "announced after the disk")
        let after = try ok(deciding)
        for d in [b1, b2] {
            XCTAssertTrue(sent(after, to: d).contains { if case .call(.cancelled, let call, .callerOffline) = $0 { return call.status == .cancelled }; return false },
                          "\(d): \(after)")
        }
        XCTAssertEqual(triggers(after), [.callCancelled])
        XCTAssertEqual(error(input(.message(.acceptCall(sessionId: sid), from: b1)), to: b1), .callNotFound)
        // A call that was answered meanwhile is not the check's business.
        _ = input(.hello(a, ann))
        let sid2 = try ringBob()
        _ = try ok(input(.message(.acceptCall(sessionId: sid2), from: b1)))
        XCTAssertEqual(input(.connectionClosed(a)), [], "an ongoing call is the room's to end")
        XCTAssertTrue(input(.callerGone(sessionId: sid2)).isEmpty)
        XCTAssertEqual(core.calls[sid2]?.call.status, .ongoing)
    }

    func testNobodyAnsweringInTimeIsUnanswered() throws {
        online()
        let sid = try ringBob(timeout: 20)
        now += 20_000
        let after = try ok(input(.timedOut(sessionId: sid)))
        for d in [a, b1, b2] { XCTAssertTrue(sent(after, to: d).contains { if case .call(.unanswered, _, _) = $0 { return true }; return false }, "\(d)") }
        XCTAssertEqual(triggers(after), [.callUnanswered])
        XCTAssertEqual(error(input(.message(.acceptCall(sessionId: sid), from: b1)), to: b1), .callNotFound)
    }

    func testBadCallsGetClearErrors() {
        online()
        func initiate(_ id: String, _ t: CallReceiverType, _ r: RingReceiver, timeout: Int? = nil) -> SignalErrorCode? {
            error(input(.initiate(a, receiverId: id, receiverType: t, type: .audio, timeoutSeconds: timeout, receiver: r)), to: a)
        }
        XCTAssertEqual(initiate("ann", .user, RingReceiver(user: ann)), .callSelf)
        XCTAssertEqual(initiate("nobody", .user, RingReceiver()), .receiverNotFound)
        XCTAssertEqual(initiate("g", .group, RingReceiver(group: ("g", "G", [bob, cat]))), .notGroupMember)
        XCTAssertEqual(initiate("bob", .user, RingReceiver(user: bob), timeout: 1), .badMessage)
        XCTAssertEqual(error(input(.message(.endCall(sessionId: "nope"), from: a)), to: a), .callNotFound)
    }

    func testAGroupRingsEveryoneAndIsOngoingFromTheFirstAccept() throws {
        online()
        let dan = RingUser(uid: "dan", name: "Dan"), d = ConnectionID(node: "n", local: 5)
        _ = input(.hello(d, dan))
        let e = input(.initiate(a, receiverId: "team", receiverType: .group, type: .audio, timeoutSeconds: 30,
                                receiver: RingReceiver(group: ("team", "Team", [ann, bob, cat, dan]))))
        let rung = try ok(e)
        for conn in [b1, b2, c, d] { XCTAssertEqual(events(rung.filter { if case .send(_, conn) = $0 { return true }; return false }), [.incoming]) }
        guard case .call(.initiated, let call, _)? = sent(rung, to: a).first else { return XCTFail() }
        let sid = call.sessionId
        _ = try ok(input(.message(.acceptCall(sessionId: sid), from: b1)))
        XCTAssertEqual(core.calls[sid]?.call.status, .ongoing)
        let catIn = try ok(input(.message(.acceptCall(sessionId: sid), from: c)))
        XCTAssertTrue(sent(catIn, to: b1).contains { if case .call(.accepted, _, _) = $0 { return true }; return false }, "members already in hear who joins")
        XCTAssertFalse(triggers(catIn).contains(.callStarted), "started once")
        let danNo = try ok(input(.message(.rejectCall(sessionId: sid, status: .rejected), from: d)))
        XCTAssertTrue(sent(danNo, to: a).isEmpty, "the call goes on: the caller is not told it was rejected")
        let outcomes = Dictionary(uniqueKeysWithValues: (core.calls[sid]?.call.members ?? []).map { ($0.uid, $0.outcome) })
        XCTAssertEqual(outcomes, ["bob": .accepted, "cat": .accepted, "dan": .rejected])
        // A member leaving does not end it; the caller ending does.
        _ = try ok(input(.message(.endCall(sessionId: sid), from: c)))
        XCTAssertEqual(core.calls[sid]?.call.status, .ongoing)
        let over = try ok(input(.message(.endCall(sessionId: sid), from: a)))
        XCTAssertTrue(sent(over, to: b1).contains { if case .call(.ended, _, _) = $0 { return true }; return false })
        XCTAssertNil(core.calls[sid])
    }

    func testRestoredCallsRingOnOrBecomeUnanswered() throws {
        let fresh = WireCall(sessionId: "call_fresh", initiator: .init(id: "ann", name: "Ann"), receiverType: .user, receiver: .init(id: "bob", name: "Bob"),
                             type: .audio, status: .initiated, members: [.init(uid: "bob", name: "Bob", outcome: .ringing)], timeoutSeconds: 45,
                             initiatedAt: now - 15_000)
        var stale = fresh
        stale.sessionId = "call_stale"
        stale.initiatedAt = now - 60_000
        let e = input(.restore([fresh, stale]))
        XCTAssertTrue(e.contains(.schedule(sessionId: "call_fresh", afterSeconds: 30)), "the rest of its timeout")
        guard case .ringStatus("call_stale", .unanswered, nil, now)? = try request(e).commands.last else { return XCTFail("\(e)") }
        _ = try ok(e)
        XCTAssertNil(core.calls["call_stale"])
        // Bob's device comes back: the fresh call rings on it.
        XCTAssertEqual(events(input(.hello(b1, bob)).filter { if case .send(_, b1) = $0 { return true }; return false }), [.incoming])
    }

    func testAnAcceptedCallEndsWhenItsRoomEmpties() throws {
        online()
        let sid = try ringBob()
        _ = try ok(input(.message(.acceptCall(sessionId: sid), from: b1)))
        let over = input(.roomEnded(sessionId: sid))
        XCTAssertEqual(triggers(over), [.callEnded])
        XCTAssertTrue(sent(over, to: a).contains { if case .call(.ended, _, _) = $0 { return true }; return false })
    }

    /// With a push service configured, ringing pushes each ringing member's phones in the
    /// transition's own request, and every way the ringing stops pushes its end.
    func testPushesAreWrittenWithTheTransitions() throws {
        core = RingCore(defaultTimeoutSeconds: 45, pushPlatforms: [.apnsVoip, .fcm])
        online()
        func pushes(_ e: [RingEffect]) throws -> [PushEvent] {
            try request(e).commands.flatMap { c -> [PushEvent] in if case .push(let p) = c { return p }; return [] }
        }
        let ringing = input(.initiate(a, receiverId: "bob", receiverType: .user, type: .video, timeoutSeconds: nil, receiver: RingReceiver(user: bob)))
        let ring = try pushes(ringing)
        XCTAssertEqual(ring.map(\.uid), ["bob"])
        XCTAssertEqual(ring.first?.action, .initiated)
        XCTAssertEqual(ring.first?.fields["callerName"], "Ann")
        XCTAssertEqual(ring.first?.fields["callType"], "video")
        XCTAssertEqual(ring.first?.platforms, [.apnsVoip, .fcm])
        let sid = try XCTUnwrap(ring.first?.sessionId)
        _ = try ok(ringing)
        let cancel = input(.message(.rejectCall(sessionId: sid, status: .cancelled), from: a))
        XCTAssertEqual(try pushes(cancel).map { "\($0.uid) \($0.action) \($0.reason?.rawValue ?? "")" }, ["bob ended cancelled"])
        _ = try ok(cancel)
        // Answered on a device: that user's phones stop.
        let sid2 = try ringBob()
        let accept = input(.message(.acceptCall(sessionId: sid2), from: b1))
        XCTAssertEqual(try pushes(accept).map { "\($0.uid) \($0.reason?.rawValue ?? "")" }, ["bob answered"])
        _ = try ok(accept)
        _ = try ok(input(.message(.endCall(sessionId: sid2), from: a)))
        // Rang out.
        let sid3 = try ringBob()
        now += 45_000
        XCTAssertEqual(try pushes(input(.timedOut(sessionId: sid3))).map { "\($0.uid) \($0.reason?.rawValue ?? "")" }, ["bob unanswered"])
        // Without a push service, nothing.
        core = RingCore(defaultTimeoutSeconds: 45)
        online()
        let plain = input(.initiate(a, receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil, receiver: RingReceiver(user: bob)))
        XCTAssertEqual(try pushes(plain), [])
    }

    /// Payloads: APNs carries the fields beside `aps`; FCM a data message of strings, high
    /// priority, TTL 30 s.
    func testPushPayloads() throws {
        let e = PushEvent(action: .ended, reason: .cancelled, sessionId: "call_1", uid: "bob", caller: CallPartyWire(id: "ann", name: "Ann \"A\""),
                          callType: .audio, receiverType: .user, guid: nil, at: 1_000, platforms: [.apnsVoip])
        let apns = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(e.apnsBody.utf8)) as? [String: Any])
        XCTAssertEqual(apns["callerName"] as? String, "Ann \"A\"")
        XCTAssertEqual(apns["reason"] as? String, "cancelled")
        XCTAssertEqual(apns["timestamp"] as? String, "1000")
        XCTAssertEqual((apns["aps"] as? [String: Any])?.count, 0)
        let fcm = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(e.fcmBody(token: "t").utf8)) as? [String: Any])
        let m = try XCTUnwrap(fcm["message"] as? [String: Any])
        XCTAssertEqual(m["token"] as? String, "t")
        XCTAssertEqual((m["data"] as? [String: String])?["callAction"], "ended")
        XCTAssertEqual(m["android"] as? [String: String], ["priority": "high", "ttl": "30s"])
        // A very long name is cut (at a character) so the push stays under APNs' 4 KB.
        var long = e
        long.caller.name = String(repeating: "👩‍👩‍👧‍👦", count: 2000)
        XCTAssertLessThan(long.apnsBody.utf8.count, 1200)
        XCTAssertTrue(long.fields["callerName"]?.hasSuffix("👩‍👩‍👧‍👦…") == true)
    }
}

/// Ringing limits (#34), on the virtual clock: a caller cannot ring a user's devices (and
/// phones) without end.
extension RingCoreTests {
    /// Ann calls Bob and cancels at once: one ring, over.
    private func ringAndCancel() throws -> SignalErrorCode? {
        let e = input(.initiate(a, receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil, receiver: RingReceiver(user: bob)))
        if let code = error(e, to: a) { return code }
        let after = try ok(e)
        guard case .call(.initiated, let call, nil)? = sent(after, to: a).first else { XCTFail("\(after)"); return nil }
        _ = try ok(input(.message(.rejectCall(sessionId: call.sessionId, status: .cancelled), from: a)))
        return nil
    }

    func testACalleeIsRungAtMostItsBurstThenItsRate() throws {
        online()
        for i in 0..<3 { XCTAssertNil(try ringAndCancel(), "call \(i) rings") }
        XCTAssertEqual(try ringAndCancel(), .rateLimited, "the fourth in a row is refused: nothing rings")
        XCTAssertTrue(sent(input(.initiate(a, receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil,
                                            receiver: RingReceiver(user: bob))), to: b1).isEmpty)
        // Cat may still call Ann (another callee, another caller).
        let other = input(.initiate(c, receiverId: "ann", receiverType: .user, type: .audio, timeoutSeconds: nil, receiver: RingReceiver(user: ann)))
        XCTAssertNil(error(other, to: c))
        now += 10_000  // 6 a minute: one more every 10 s
        XCTAssertNil(try ringAndCancel(), "the rate refills")
        XCTAssertEqual(try ringAndCancel(), .rateLimited)
    }

    func testAGroupIsRungAtMostItsBurst() throws {
        online()
        let g = RingReceiver(group: (guid: "team", name: "Team", members: [ann, bob, cat, bob]))
        for _ in 0..<2 {
            let e = input(.initiate(a, receiverId: "team", receiverType: .group, type: .audio, timeoutSeconds: nil, receiver: g))
            let after = try ok(e)
            guard case .call(.initiated, let call, nil)? = sent(after, to: a).first else { return XCTFail("\(after)") }
            XCTAssertEqual(call.members.map(\.uid), ["bob", "cat"], "each member once")
            _ = try ok(input(.message(.rejectCall(sessionId: call.sessionId, status: .cancelled), from: a)))
        }
        let third = input(.initiate(c, receiverId: "team", receiverType: .group, type: .audio, timeoutSeconds: nil, receiver: g))
        XCTAssertEqual(error(third, to: c), .rateLimited, "another member cannot ring the group either")
    }
}
