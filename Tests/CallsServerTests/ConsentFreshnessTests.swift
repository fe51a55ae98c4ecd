@testable import CallsServer
import CallsTransport
import Testing

/// Consent freshness for browser legs on a virtual clock: the media address is asked every
/// interval, an answer from it keeps its consent, and a timeout without one ends it.
@Suite("WebRTC gateway: consent freshness of a leg's media address")
struct ConsentFreshnessTests {
    static let ms: UInt64 = 1_000_000
    let a = SocketAddress(host: "127.0.0.1", port: 5000)!, b = SocketAddress(host: "127.0.0.1", port: 5001)!

    @Test func anAddressThatAnswersKeepsItsConsentAndOneThatStopsLosesIt() {
        var c = ConsentFreshness(intervalMs: 500, timeoutMs: 3000, jitter: { 1.0 })
        c.answered(a, for: 7, media: a, now: 1000 * Self.ms)
        #expect(c.due(now: 1499 * Self.ms) == ([], []), "not asked before the interval")
        #expect(c.due(now: 1500 * Self.ms).check == [.init(tunnel: 7, address: a)])
        #expect(c.due(now: 1600 * Self.ms) == ([], []), "asked once an interval")
        // Answered every second for ten seconds: never expired.
        for t in stride(from: 2000, through: 12_000, by: 1000) {
            c.answered(a, for: 7, media: a, now: UInt64(t) * Self.ms)
            #expect(c.due(now: UInt64(t + 500) * Self.ms).expired.isEmpty)
        }
        // Then silent: asked each interval until 3 s after the last answer, then expired once.
        var asked = 0
        var expiredAt: UInt64?
        for t in stride(from: 12_600, through: 16_000, by: 100) {
            let (check, expired) = c.due(now: UInt64(t) * Self.ms)
            asked += check.count
            if !expired.isEmpty {
                #expect(expired == [.init(tunnel: 7, address: a)] && expiredAt == nil)
                expiredAt = UInt64(t)
            }
        }
        #expect(expiredAt == 15_000, "expired the timeout after its last answer")
        #expect(asked == 4, "asked at 13, 13.5, 14 and 14.5 s, and not after it expired")
        #expect(c.count == 0)
    }

    /// Only the media address's answers count; a new media address starts from its own answer.
    @Test func onlyTheMediaAddressesAnswersCount() {
        var c = ConsentFreshness(intervalMs: 500, timeoutMs: 3000, jitter: { 1.0 })
        c.answered(a, for: 7, media: a, now: 0)
        c.answered(b, for: 7, media: a, now: 2900 * Self.ms)  // another address of the leg: no consent for a
        #expect(c.due(now: 3000 * Self.ms).expired == [.init(tunnel: 7, address: a)])
        c.answered(b, for: 7, media: b, now: 4000 * Self.ms)  // the browser's media moved to b
        #expect(c.due(now: 6999 * Self.ms).expired.isEmpty)
        #expect(c.due(now: 7000 * Self.ms).expired == [.init(tunnel: 7, address: b)])
        c.answered(a, for: 8, media: a, now: 8000 * Self.ms)
        c.forget(8)
        #expect(c.due(now: 20_000 * Self.ms) == ([], []), "a forgotten leg is neither asked nor expired")
    }

    /// The interval is RFC 7675's randomised one: 0.8–1.2 of it, whatever the source says.
    @Test func theIntervalIsRandomisedWithinAFifth() {
        for (factor, expected) in [(0.5, 400), (0.9, 450), (1.1, 550), (3.0, 600)] {
            var c = ConsentFreshness(intervalMs: 500, timeoutMs: 3000, jitter: { factor })
            c.answered(a, for: 1, media: a, now: 0)
            #expect(c.due(now: UInt64(expected - 1) * Self.ms).check.isEmpty, "factor \(factor)")
            #expect(c.due(now: UInt64(expected) * Self.ms).check.count == 1, "factor \(factor)")
        }
    }
}
