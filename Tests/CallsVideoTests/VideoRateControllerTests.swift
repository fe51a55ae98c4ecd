import CallsVideo
import Testing

/// The sender's rate control on a virtual clock (seconds): the worst receiver decides, heavy
/// loss halves the frame rate and cuts the bitrate, a clean link climbs back, old reports expire.
struct VideoRateControllerTests {
    @Test func heavyLossBacksOffAndACleanLinkRecovers() {
        var r = VideoRateController(maxBitrateKbps: 300, maxFPS: 15)
        let changed = r.report(from: "a", lossPercent: 20, now: 0)
        #expect(changed)
        #expect(r.bitrateKbps == 200 && r.fps == 7)
        r.report(from: "a", lossPercent: 20, now: 2)
        #expect(r.bitrateKbps == 133 && r.fps == 5)
        // A second receiver with a clean link does not outvote the bad one.
        r.report(from: "b", lossPercent: 0, now: 3)
        #expect(r.bitrateKbps == 88, "the worst receiver still decides")
        // The bad receiver's reports stop (it left): after 6 s only b's clean reports count.
        var t = 10.0
        while r.bitrateKbps < 300 || r.fps < 15 {
            r.report(from: "b", lossPercent: 0, now: t)
            t += 2
            #expect(t < 60, "recovers within a minute")
        }
        #expect(r.bitrateKbps == 300 && r.fps == 15)
    }

    @Test func moderateLossHolds() {
        var r = VideoRateController(maxBitrateKbps: 300, maxFPS: 15)
        let changed = r.report(from: "a", lossPercent: 5, now: 0)
        #expect(!changed)
        #expect(r.bitrateKbps == 300 && r.fps == 15)
        for i in 0..<20 { r.report(from: "a", lossPercent: 50, now: Double(i)) }
        #expect(r.bitrateKbps == r.minBitrateKbps && r.fps == 5, "floors")
    }
}
