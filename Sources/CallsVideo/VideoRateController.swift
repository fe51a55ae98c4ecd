/// The sender's answer to its receivers' video reports: bitrate and frame rate follow the
/// worst receiver's loss (reports older than 6 s are forgotten). Above 10 % loss the bitrate
/// drops by a third and the frame rate halves (a receiver on a bad link gets fewer, whole
/// frames rather than a frozen picture); under 2 % both climb back, 10 % a report, to the
/// configured values. A value on a virtual clock (seconds), owned by the sender's thread.
public struct VideoRateController: Sendable {
    public let maxBitrateKbps: Int
    public let maxFPS: Int
    public let minBitrateKbps: Int
    public private(set) var bitrateKbps: Int
    public private(set) var fps: Int
    private var reports: [String: (loss: Double, at: Double)] = [:]

    public init(maxBitrateKbps: Int, maxFPS: Int) {
        self.maxBitrateKbps = maxBitrateKbps
        self.maxFPS = maxFPS
        minBitrateKbps = max(30, maxBitrateKbps / 8)
        bitrateKbps = maxBitrateKbps
        fps = maxFPS
    }

    /// A receiver's report (`from`: its pid) at `now`; returns whether the targets changed.
    @discardableResult
    public mutating func report(from: String, lossPercent: Double, now: Double) -> Bool {
        reports[from] = (lossPercent, now)
        reports = reports.filter { now - $0.value.at < 6 }
        let worst = reports.values.map(\.loss).max() ?? 0
        let before = (bitrateKbps, fps)
        if worst > 10 {
            bitrateKbps = max(minBitrateKbps, bitrateKbps * 2 / 3)
            fps = max(5, fps / 2)
        } else if worst < 2 {
            bitrateKbps = min(maxBitrateKbps, bitrateKbps + max(10, bitrateKbps / 10))
            if bitrateKbps >= maxBitrateKbps / 2 { fps = min(maxFPS, fps + max(1, maxFPS / 5)) }
        }
        return before != (bitrateKbps, fps)
    }
}
