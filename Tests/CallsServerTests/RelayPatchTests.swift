import CallRoomTestSupport
@testable import CallsServer
import CallsCore
import CallsSecurity
import CallsTransport
import XCTest
@testable import CallsRelay

/// Relay membership as per-room patches: a change touches its own room only, tokens follow
/// the members, and every worker's copy ends up where the canonical table is.
final class RelayPatchTests: XCTestCase {
    func consent(_ ssrc: UInt32, _ b: UInt8) -> MediaConsent { MediaConsent(ssrc: ssrc, token: Array(repeating: b, count: 16)) }

    func testAPatchReplacesOneRoomAndReportsWhoLeft() {
        var t = RelayTable()
        t.apply(RelayPatch(room: 1, members: [.init(key: 1, room: 1, ssrc: 11, consent: consent(11, 1)), .init(key: 2, room: 1, ssrc: 12, consent: consent(12, 2))]))
        t.apply(RelayPatch(room: 2, members: [.init(key: 3, room: 2, ssrc: 13, consent: consent(13, 3))]))
        // Member 2 leaves, member 1 resumes with a new bind token.
        let removed = t.apply(RelayPatch(room: 1, members: [.init(key: 1, room: 1, ssrc: 11, consent: consent(11, 9))]))
        XCTAssertEqual(removed, [2])
        XCTAssertEqual(t.rooms[1], [1])
        XCTAssertNil(t.members[2])
        XCTAssertEqual(t.members[1]?.consent, consent(11, 9), "the old token no longer binds")
        XCTAssertNil(t.bySSRC[12])
        XCTAssertEqual(t.bySSRC[11], 1)
        XCTAssertEqual(t.rooms[2], [3], "room 2 untouched")
        XCTAssertEqual(t.bySSRC[13], 3)
        XCTAssertEqual(t.apply(RelayPatch(room: 2, members: [])), [3])
        XCTAssertNil(t.rooms[2], "an empty room goes")
        XCTAssertEqual(t.members.count, 1)
    }

    /// Bind → challenge → answer, on a virtual clock: only the right answer from the address
    /// the challenge went to binds.
    func bindAndAnswer(_ shared: RelayShared, _ c: MediaConsent, from addr: SocketAddress, now: UInt64) -> RelayShared.ConsentOutcome? {
        guard case .challenge(let bytes) = shared.challenge(.init(ssrc: c.ssrc, proof: c.proof), from: addr, now: now),
              let answer = bytes.withUnsafeBytes({ c.answer($0) }),
              let response = answer.withUnsafeBytes({ MediaBinding.parseResponse($0) }) else { return nil }
        return shared.consent(response, from: addr, now: now)
    }

    func testWorkersApplyTheSameChangesAndALaggingWorkerResyncs() throws {
        let shared = RelayShared(workers: 2, maxDelayNanoseconds: 0)
        let addr = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: 5000))
        shared.apply(RelayPatch(room: 1, members: [.init(key: 1, room: 1, ssrc: 11, consent: consent(11, 1))]))
        guard case .bound(let m)? = bindAndAnswer(shared, consent(11, 1), from: addr, now: 1) else { return XCTFail("bind") }
        XCTAssertEqual(m.key, 1)
        guard case .badProof = shared.challenge(.init(ssrc: 12, proof: consent(12, 1).proof), from: addr, now: 2) else { return XCTFail("wrong SSRC") }
        let (changes, whole) = shared.takeChanges(worker: 0)
        XCTAssertNil(whole)
        XCTAssertEqual(changes.count, 2, "the patch and the bind")
        XCTAssertTrue(shared.takeChanges(worker: 0).changes.isEmpty, "taken once")
        // Leaving drops the binding in the canonical state too.
        shared.apply(RelayPatch(room: 1, members: []))
        XCTAssertNil(shared.state.withLock { $0.bindings.addressOf[1] })
        // Worker 1 never ran: past the inbox limit it is told to copy the whole state.
        for k in 0..<RelayState.inboxLimit { shared.apply(RelayPatch(room: 2, members: [.init(key: UInt64(100 + k % 2), room: 2, ssrc: 1)])) }
        let lagging = shared.takeChanges(worker: 1)
        XCTAssertTrue(lagging.changes.isEmpty)
        XCTAssertEqual(lagging.resync?.0.rooms[2]?.count, 1)
    }

    func testConsentBindsOnlyTheAnsweringAddressAndLapsesWhenItStopsAnswering() throws {
        let shared = RelayShared(workers: 1, maxDelayNanoseconds: 0, consentIntervalMs: 5000, consentTimeoutMs: 30_000)
        let me = consent(21, 4)
        let home = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: 6000))
        let victim = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: 6001))
        shared.apply(RelayPatch(room: 1, members: [.init(key: 7, room: 1, ssrc: 21, consent: me)]))
        let s: UInt64 = 1_000_000_000
        // A bind spoofed from the victim's address: the victim gets a challenge it cannot answer; nothing binds.
        guard case .challenge = shared.challenge(.init(ssrc: 21, proof: me.proof), from: victim, now: s) else { return XCTFail("challenge") }
        XCTAssertNil(shared.state.withLock { $0.bindings.addressOf[7] }, "a bind alone binds nothing")
        // Someone else's proof, or a forged answer, is refused.
        guard case .badProof = shared.challenge(.init(ssrc: 21, proof: consent(21, 5).proof), from: home, now: s) else { return XCTFail("forged proof") }
        guard case .refused = shared.consent(.init(ssrc: 21, nonce: [UInt8](repeating: 0, count: 16), mac: [UInt8](repeating: 0, count: 16)),
                                             from: victim, now: s) else { return XCTFail("forged answer") }
        // The real client answers from its own address.
        guard case .bound? = bindAndAnswer(shared, me, from: home, now: 2 * s) else { return XCTFail("bound") }
        XCTAssertEqual(shared.state.withLock { $0.bindings.addressOf[7] }, home)
        // An answer to the victim's challenge sent from elsewhere does not move the binding there.
        guard case .challenge(let vb) = shared.challenge(.init(ssrc: 21, proof: me.proof), from: victim, now: 3 * s),
              let vr = vb.withUnsafeBytes({ me.answer($0) }).flatMap({ a in a.withUnsafeBytes { MediaBinding.parseResponse($0) } }) else { return XCTFail() }
        guard case .refused = shared.consent(vr, from: try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: 6002)), now: 3 * s) else { return XCTFail("wrong address") }
        // Freshness: nothing due before the interval; a challenge to the bound address after it.
        XCTAssertTrue(shared.tendConsent(now: 4 * s).challenges.isEmpty)
        let due = shared.tendConsent(now: 8 * s)
        XCTAssertEqual(due.challenges.map(\.0), [home])
        XCTAssertEqual(due.expired, 0)
        // Answered: consent is fresh again (the answer is only acknowledged, nothing moves).
        let answer = try XCTUnwrap(due.challenges[0].1.withUnsafeBytes { me.answer($0) })
        let response = try XCTUnwrap(answer.withUnsafeBytes { MediaBinding.parseResponse($0) })
        guard case .refreshed = shared.consent(response, from: home, now: 9 * s) else { return XCTFail("refreshed") }
        // Then silence: challenged every 5 s, unbound 30 s after the last answer.
        XCTAssertEqual(shared.tendConsent(now: 15 * s).challenges.count, 1)
        XCTAssertEqual(shared.tendConsent(now: 38 * s).expired, 0)
        let lapse = shared.tendConsent(now: 40 * s)
        XCTAssertEqual(lapse.expired, 1)
        XCTAssertEqual(lapse.rooms, [1])
        XCTAssertNil(shared.state.withLock { $0.bindings.addressOf[7] }, "no media to an address that stopped answering")
        XCTAssertNil(shared.state.withLock { $0.bindings.memberAt[home] })
        // It may bind again.
        guard case .bound? = bindAndAnswer(shared, me, from: home, now: 41 * s) else { return XCTFail("rebound") }
    }
}
