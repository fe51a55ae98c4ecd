@testable import CallsCore
import Testing

@Suite("RTP clock anchor")
struct RTPClockAnchorTests {
    @Test func packetsArePlacedByTheirClockNotTheirArrival() {
        var a = RTPClockAnchor(toleranceMs: 1000)
        #expect(a.sample(of: 0xFFFF_FC40, arrivedAtMs: 100) == 4800)  // the first anchors (960 before the wrap)
        // Three frames arriving together 60 ms later, the clock wrapping on the way.
        #expect(a.sample(of: 0xFFFF_FC40 &+ 1920, arrivedAtMs: 160) == 4800 + 1920)
        #expect(a.sample(of: 0xFFFF_FC40 &+ 960, arrivedAtMs: 160) == 4800 + 960, "a reordered one lands where it belongs")
        #expect(a.sample(of: 0xFFFF_FC40 &+ 2880, arrivedAtMs: 160) == 4800 + 2880)
    }

    @Test func aClockThatJumpsIsAnchoredAgain() {
        var a = RTPClockAnchor(toleranceMs: 1000)
        _ = a.sample(of: 1000, arrivedAtMs: 0)
        #expect(a.sample(of: 1000 + 48 * 900, arrivedAtMs: 0) == 48 * 900, "within the tolerance: the clock rules")
        #expect(a.sample(of: 7_000_000, arrivedAtMs: 2000) == 2000 * 48, "a rejoin's new clock: anchored at its arrival")
        #expect(a.sample(of: 7_000_960, arrivedAtMs: 2030) == 2000 * 48 + 960)
    }
}
