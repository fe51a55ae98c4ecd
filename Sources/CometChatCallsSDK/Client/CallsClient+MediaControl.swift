import CallsAudio
import CallsCore
import CallsTransport
import Foundation

// MARK: Media control from the server: loss reports, keyframe requests, video reports, keys
extension CallsClient {
    /// What receivers report about our media, and the senders' keys.
    func mediaMessage(_ m: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(state))
        switch m {
        case .lossReport(let from, let loss, let redundancy, let burst, let blocks):
            guard phase == .joined else { return }
            let now = Date()
            // A run this report saw, or the longest of the last 6 s it said before.
            let run = max(burst ?? 0, lossReports[from].map { now.timeIntervalSince($0.runAt) < ReceiverLossReport.lifetime ? $0.longestRun : 0 } ?? 0)
            let runAt = (burst ?? 0) >= run ? now : lossReports[from]?.runAt ?? now
            lossReports[from] = ReceiverLossReport(lossPercent: loss, at: now, decodesRedundancy: redundancy, longestRun: run, runAt: runAt,
                                                   acceptsBlocks: blocks ?? (redundancy ? RedundantAudio.legacyBlocks : 0))
            applyReceiverReports(now: now)
        case .keyframeRequest:
            guard phase == .joined else { return }
            engine?.video?.requestKeyframe()
        case .videoReport(let from, let loss, _):
            guard phase == .joined else { return }
            engine?.video?.report(from: from, lossPercent: loss)
        case .mediaKeys(let keys):
            guard phase == .joined || phase == .leaving else { return }
            engine?.updateKeys(keys)
        default:
            break
        }
    }

    /// The receivers' reports still fresh, told to the engine (FEC, redundancy): after a new
    /// report, and when a receiver leaves (its report goes with it). With none left the engine
    /// keeps what it had: nobody listens, and the next receiver reports within 2 s.
    func applyReceiverReports(now: Date) {
        dispatchPrecondition(condition: .onQueue(state))
        lossReports = lossReports.filter { $0.value.isFresh(at: now) }
        let reports = lossReports.values
        guard !reports.isEmpty else { return }
        engine?.setReceiverReports(worstLossPercent: reports.map(\.lossPercent).max() ?? 0,
                                   longestRun: reports.map(\.longestRun).max() ?? 0,
                                   acceptedBlocks: reports.map(\.acceptsBlocks).min() ?? RedundantAudio.maxBlocks,
                                   everyoneDecodesRedundancy: reports.allSatisfy(\.decodesRedundancy))
    }
}
