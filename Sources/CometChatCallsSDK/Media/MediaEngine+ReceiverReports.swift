import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
import CallsVideo
import Foundation
import Synchronization

/// Receiver reports, both ways: what the other receivers report tunes this sender's FEC and
/// redundancy; what this receiver heard is reported (loss per sender) and kept for the stats.
/// Thread rules: any thread (atomics and locks of the engine).
extension MediaEngine {

    /// The loss percentage the encoder's FEC is tuned for now.
    var expectedLossPercent: Int { expectedLoss.load(ordering: .relaxed) }

    /// Takes the receivers' reports (any thread): the worst recent loss tunes in-band FEC
    /// (0…50 %) and, when every receiver decodes redundant audio, how many previous frames each
    /// packet repeats (`RedundancyPolicy`).
    func setReceiverReports(worstLossPercent percent: Double, longestRun: Int = 0, acceptedBlocks: Int = RedundantAudio.maxBlocks,
                            everyoneDecodesRedundancy: Bool) {
        expectedLoss.store(Int(min(50, max(0, percent.rounded(.up)))), ordering: .relaxed)
        let decodes = options.redundancy && everyoneDecodesRedundancy
        let d = redundancyPolicy.withLock {
            $0.update(worstLossPercent: percent, longestRun: longestRun, maxDistance: acceptedBlocks, everyoneDecodes: decodes, now: monotonicNanoseconds())
        }
        redundancyDistance.store(d, ordering: .relaxed)
    }

    /// Previous frames each packet repeats now (0: plain Opus).
    var redundancyFrames: Int { redundancyDistance.load(ordering: .relaxed) }

    /// Loss per sender since the last call: packets lost on the network (not a sender that
    /// stopped, e.g. muted) over packets expected.
    /// Called every couple of seconds by the client to build receiver reports.
    func lossSinceLastReport() -> [LossReport] { published(receiver.lossSinceLastReport()) }

    /// The first report on each sender heard for half a second and not reported on yet
    /// (`ReceiveMixer.firstReportsDue`). Any thread; the client asks four times a second.
    func firstLossReportsDue() -> [LossReport] {
        published(receiver.firstReportsDue(afterFrames: max(1, 500 / frameMs)))
    }

    func published(_ reports: [LossReport]) -> [LossReport] {
        // Every CallRoom receiver decodes redundant audio, and says so.
        let out = reports.map { r in var r = r; r.red = true; r.redBlocks = RedundantAudio.maxBlocks; return r }
        recentLoss.withLock { r in for rep in out { r[rep.ssrc] = rep.lossPercent } }
        return out
    }

    /// The loss each sender's audio had over the last report interval (percent).
    func lossBySender() -> [UInt32: Double] { recentLoss.withLock { $0 } }

    /// Per-sender receive figures: jitter-buffer counts, RFC 3550 jitter (ms) and payload bytes.
    func receiveFigures() -> [UInt32: (JitterBuffer.Statistics, Double, Int)] {
        receiver.figures().mapValues { ($0.statistics, $0.jitterMs, $0.bytes) }
    }
}
