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
}
