import CometChatCallsSDK
import Foundation

/// The call screen's event log: every listener callback with a millisecond timestamp and its
/// JSON payload, filtered by listener, participant and text, scrolled by an anchor that stays
/// put while new events arrive. A value; owned by the UI thread.
public struct EventLog: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        /// Increases by one per event, never reused.
        public var seq: Int
        public var time: Date
        public var listener: String
        public var event: String
        public var summary: String
        /// The same JSON line `--event-log` writes.
        public var json: String
        /// The participant the event is about (uid), if any.
        public var uid: String?
        /// The entry as the log shows it: `HH:mm:ss.SSS Listener.event summary`.
        public var line: String
        /// The listener without its "Listener" suffix (`ParticipantEvent`).
        public var shortListener: String { listener.replacingOccurrences(of: "Listener", with: "") }
    }

    public private(set) var entries: [Entry] = []
    private var nextSeq = 1
    public static let capacity = 2000
    /// All events seen per callback name (not capped with the entries).
    public private(set) var counts: [String: Int] = [:]
    public private(set) var countsByListener: [String: Int] = [:]

    /// Only this listener (nil: all).
    public var listenerFilter: String?
    /// Only events about this participant (uid; nil: all).
    public var participantFilter: String?
    /// Only entries containing this text (case-insensitive; empty: all).
    public var search = ""
    /// The entry shown at the bottom when scrolled back (nil: follow the newest).
    public var anchor: Int?

    public init() {}

    /// Local time with milliseconds.
    static let timeFormat: DateFormatter = {
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss.SSS"
        f.locale = Locale(identifier: "en_US_POSIX")
        return f
    }()

    public mutating func append(_ e: CallEvent, at time: Date) {
        let uid: String?
        switch e {
        case .participantJoined(let p), .participantLeft(let p), .participantAudioMuted(let p), .participantAudioUnmuted(let p),
             .participantVideoPaused(let p), .participantVideoResumed(let p), .participantHandRaised(let p),
             .participantHandLowered(let p), .participantStartedScreenShare(let p), .participantStoppedScreenShare(let p),
             .participantStartedRecording(let p), .participantStoppedRecording(let p), .dominantSpeakerChanged(let p):
            uid = p.uid
        case .chatMessage(let m): uid = m.uid
        case .captionReceived(let c): uid = c.uid
        default: uid = nil
        }
        let short = e.listener.replacingOccurrences(of: "Listener", with: "")
        let summary = e.summary
        let line = "\(Self.timeFormat.string(from: time)) \(short).\(e.callback)\(summary.isEmpty ? "" : " " + summary)"
        entries.append(Entry(seq: nextSeq, time: time, listener: e.listener, event: e.callback, summary: summary,
                             json: e.jsonLine(at: time), uid: uid, line: line))
        nextSeq += 1
        counts[e.callback, default: 0] += 1
        countsByListener[e.listener, default: 0] += 1
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
    }

    /// Events seen in all (including those the log no longer holds).
    public var total: Int { nextSeq - 1 }

    /// The entries the filters let through, oldest first.
    public var visible: [Entry] {
        let q = search.lowercased()
        guard listenerFilter != nil || participantFilter != nil || !q.isEmpty else { return entries }
        return entries.filter { e in
            (listenerFilter == nil || e.listener == listenerFilter)
                && (participantFilter == nil || e.uid == participantFilter)
                && (q.isEmpty || e.line.lowercased().contains(q))  // what is shown, not the hidden payload
        }
    }

    /// Index in `visible` of the entry at the bottom of the view.
    public func bottomIndex(in v: [Entry]) -> Int? {
        guard !v.isEmpty else { return nil }
        guard let a = anchor else { return v.count - 1 }
        return v.lastIndex { $0.seq <= a } ?? 0
    }

    /// The selected entry: the anchored one when scrolled, else the newest.
    public var selected: Entry? {
        let v = visible
        return bottomIndex(in: v).map { v[$0] }
    }

    /// Entries newer than the view while scrolled back (the "N new" marker).
    public var newBelow: Int { newBelow(in: visible) }

    /// `newBelow` for an already filtered `visible` (one filter pass per frame).
    func newBelow(in v: [Entry]) -> Int {
        guard anchor != nil, let i = bottomIndex(in: v) else { return 0 }
        return v.count - 1 - i
    }

    /// Scrolls by `delta` entries (negative: back in time). Reaching the newest follows it again.
    public mutating func scroll(by delta: Int) {
        let v = visible
        guard let i = bottomIndex(in: v) else { anchor = nil; return }
        let j = min(v.count - 1, max(0, i + delta))
        anchor = j == v.count - 1 ? nil : v[j].seq
    }

    /// Home: the oldest entry (at the bottom of the view, `rows` entries shown above… none older).
    public mutating func scrollToOldest(rows: Int) {
        let v = visible
        guard !v.isEmpty else { return }
        let j = min(v.count - 1, max(0, rows - 1))
        anchor = j == v.count - 1 ? nil : v[j].seq
    }

    public mutating func scrollToNewest() { anchor = nil }

    /// The whole log as JSON lines (what export writes), oldest first.
    public var jsonl: String { entries.map(\.json).joined(separator: "\n") + (entries.isEmpty ? "" : "\n") }

    /// Callback names with how many times each fired, most frequent first.
    public var countsByEvent: [(String, Int)] {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }
}
