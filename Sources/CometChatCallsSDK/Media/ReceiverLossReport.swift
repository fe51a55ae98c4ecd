import CallsCore
import Foundation

/// What one receiver of our audio said last (`ServerMessage.lossReport`), as the sender keeps it
/// for `RedundancyPolicy`. Thread rules: a value; the client keeps them on its state queue.
struct ReceiverLossReport: Sendable {
    var lossPercent: Double
    var at: Date
    var decodesRedundancy: Bool
    /// The longest run of our frames it lost in a row over the last 6 s, and when it said so.
    var longestRun: Int
    var runAt: Date
    /// Redundant blocks it accepts in a packet (0: it decodes none).
    var acceptsBlocks: Int

    /// How long a report counts (receivers report every 2 s): one older speaks of a receiver
    /// that stopped reporting or left.
    static let lifetime: TimeInterval = 6

    func isFresh(at now: Date) -> Bool { now.timeIntervalSince(at) < Self.lifetime }
}
