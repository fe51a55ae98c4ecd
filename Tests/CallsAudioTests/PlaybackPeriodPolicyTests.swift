import CallsAudio
import Testing

/// The playback period on a virtual clock: the smallest the device keeps up with, backing off
/// on repeated under-runs, never for the start's, never when the user fixed it.
struct PlaybackPeriodPolicyTests {
    let s: UInt64 = 1_000_000_000

    @Test func startsSmallAndBacksOffOnRepeatedUnderRuns() {
        var p = PlaybackPeriodPolicy(frameMs: 20, fixedMs: nil, now: 0)
        #expect(p.isAutomatic && p.periodMs == 5)
        #expect(p.observe(xruns: 2, now: s / 2) == nil, "the start's under-runs do not count")
        #expect(p.observe(xruns: 3, now: 2 * s) == nil, "one under-run is not a pattern")
        #expect(p.observe(xruns: 4, now: 5 * s) == nil)
        #expect(p.observe(xruns: 5, now: 8 * s) == 10, "three within 10 s: 10 ms")
        #expect(p.periodMs == 10)
        #expect(p.backOffs.count == 1 && p.backOffs[0].fromMs == 5)
        p.reopened(now: 9 * s)
        // Spread out: never three within 10 s.
        var t = 11 * s, n = 0
        for _ in 0..<6 { n += 1; t += 6 * s; #expect(p.observe(xruns: n, now: t) == nil) }
        #expect(p.periodMs == 10)
        #expect(p.observe(xruns: n + 3, now: t + s) == 20, "a burst: 20 ms")
        p.reopened(now: t + s)
        #expect(p.observe(xruns: 50, now: t + 5 * s) == nil, "nothing larger than a frame")
        #expect(p.periodMs == 20)
    }

    @Test func aFixedPeriodNeverMovesAndTenMillisecondFramesStartAtTwo() {
        var fixed = PlaybackPeriodPolicy(frameMs: 20, fixedMs: 5, now: 0)
        #expect(!fixed.isAutomatic && fixed.periodMs == 5)
        #expect(fixed.observe(xruns: 100, now: 5 * s) == nil)
        var two = PlaybackPeriodPolicy(frameMs: 20, fixedMs: 2, now: 0)
        #expect(!two.isAutomatic && two.periodMs == 2, "2 ms may be fixed with 20 ms frames too")
        #expect(two.observe(xruns: 100, now: 5 * s) == nil)
        var ten = PlaybackPeriodPolicy(frameMs: 10, fixedMs: nil, now: 0)
        #expect(ten.periodMs == 2, "a quarter of a 10 ms frame or less: 2 ms")
        #expect(ten.observe(xruns: 3, now: 2 * s) == 5)
        ten.reopened(now: 2 * s)
        #expect(ten.observe(xruns: 3, now: 4 * s) == 10)
        ten.reopened(now: 4 * s)
        #expect(ten.observe(xruns: 10, now: 6 * s) == nil, "10 ms frames: 10 ms is the largest")
    }
}
