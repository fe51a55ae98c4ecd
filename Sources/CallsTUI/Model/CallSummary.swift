import CometChatCallsSDK
import Foundation

/// What happened in a call, shown on the summary screen after leaving and printed on stdout
/// once the terminal is restored. A value; any thread.
public struct CallSummary: Equatable, Sendable {
    public var title: String
    public var duration: TimeInterval?
    public var participantsSeen: [String]
    public var eventsByListener: [(String, Int)]
    public var totalEvents: Int
    public var media: MediaReport?
    public var reconnects: Int
    /// How it ended, in one sentence ("You were removed by Grace"); the status while it runs.
    public var ending: String
    /// RFC 3550 jitter of each sender heard (ms), at the end.
    public var jitterMs: [Double]

    public static func == (a: CallSummary, b: CallSummary) -> Bool { a.lines == b.lines }

    public init(_ m: CallViewModel) {
        title = m.title
        if let j = m.joinedAt { duration = (m.leftAt ?? m.now).timeIntervalSince(j) }
        participantsSeen = m.seen.values.sorted()
        eventsByListener = m.log.countsByListener.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        totalEvents = m.log.total
        media = m.media
        reconnects = m.reconnects
        ending = m.ending?.sentence ?? m.status
        jitterMs = m.heardStats.values.map(\.jitterMs).sorted()
    }

    /// The summary as text lines.
    public var lines: [String] {
        var out = ["Call summary: \(title)", "  ended           \(ending)"]
        if let d = duration {
            let s = Int(d.rounded())
            out.append(String(format: "  duration        %d:%02d:%02d", s / 3600, s / 60 % 60, s % 60))
        } else {
            out.append("  duration        not joined")
        }
        out.append("  participants    \(participantsSeen.count): \(participantsSeen.joined(separator: ", "))")
        out.append("  events          \(totalEvents): " + eventsByListener.map { "\($0.0.replacingOccurrences(of: "Listener", with: "")) \($0.1)" }.joined(separator: ", "))
        if let r = media {
            out.append("  packets         sent \(r.packetsSent), received \(r.packetsReceived)")
            let expected = r.packetsReceived + r.lost
            let loss = expected == 0 ? 0 : 100 * Double(r.lost) / Double(expected)
            out.append(String(format: "  loss            %.1f %% (%d lost; %d recovered by FEC, %d concealed, %d late)", loss, r.lost, r.recovered, r.concealed, r.late))
            // Which of those the network (or a stalled sender) caused, not this end's playout.
            if r.delayed > 0 { out.append("  held up         \(r.delayed) of those: packets delayed on their way") }
        } else {
            out.append("  packets         no media")
        }
        if let worst = jitterMs.last {
            let mean = jitterMs.reduce(0, +) / Double(jitterMs.count)
            out.append(String(format: "  jitter          %.1f ms mean, %.1f ms worst (%d sender%@)", mean, worst, jitterMs.count, jitterMs.count == 1 ? "" : "s"))
        } else {
            out.append("  jitter          nobody heard")
        }
        out.append("  reconnects      \(reconnects)")
        return out
    }
}
