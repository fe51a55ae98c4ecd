import CometChatCallsSDK
import Foundation

/// Everything the call screen shows, derived from listener events and polled levels.
/// A value; owned by the UI thread.
public struct CallViewModel: Equatable, Sendable {
    public struct Tile: Equatable, Sendable {
        public var pid: String
        public var uid: String
        public var name: String
        public var isYou: Bool
        public var isMuted: Bool
        /// dBFS, or nil when no audio has been measured.
        public var level: Float?

        public init(pid: String, uid: String, name: String, isYou: Bool, isMuted: Bool, level: Float? = nil) {
            self.pid = pid; self.uid = uid; self.name = name; self.isYou = isYou; self.isMuted = isMuted; self.level = level
        }

        /// Speaking when louder than -40 dBFS and not muted.
        public var isSpeaking: Bool { !isMuted && (level ?? -127) > -40 }
        /// Initials of the display name (up to two letters).
        public var initials: String {
            let words = name.split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "_" })
            let letters = words.prefix(2).compactMap(\.first).map { String($0).uppercased() }
            return letters.isEmpty ? "?" : letters.joined()
        }
    }

    public struct LogEntry: Equatable, Sendable {
        public var time: Date
        public var listener: String
        public var event: String
        public var summary: String
    }

    public var title: String
    public var joinedAt: Date?
    public var now: Date = Date()
    public var tiles: [Tile] = []
    public var isMuted = false
    public var log: [LogEntry] = []
    public var notice: String?
    public var status = "connecting…"
    public var hideControlPanel = false
    public var hideHeaderPanel = false
    public var hideSessionTimer = false
    public var hideLeaveSessionButton = false
    public var hideToggleAudioButton = false
    public static let maxLogEntries = 500

    public init(title: String) { self.title = title }

    /// Applies the session settings' visibility flags.
    public mutating func apply(_ s: SessionSettingsBuilder.SessionSettings) {
        if let t = s.title { title = t }
        hideControlPanel = s.hideControlPanel
        hideHeaderPanel = s.hideHeaderPanel
        hideSessionTimer = s.hideSessionTimer
        hideLeaveSessionButton = s.hideLeaveSessionButton
        hideToggleAudioButton = s.hideToggleAudioButton
        isMuted = s.startAudioMuted
    }

    /// Records an event in the log and updates state that events carry.
    public mutating func apply(_ e: CallEvent, localPID: String?, at time: Date = Date()) {
        log.append(LogEntry(time: time, listener: e.listener, event: e.callback, summary: e.summary))
        if log.count > Self.maxLogEntries { log.removeFirst(log.count - Self.maxLogEntries) }
        switch e {
        case .sessionJoined:
            joinedAt = time
            status = "in call"
        case .sessionLeft: status = "left"
        case .connectionClosed: status = "connection closed"
        case .connectionLost: status = "reconnecting…"
        case .connectionRestored: status = "in call"
        case .sessionTimedOut: status = "timed out"
        case .audioNotice(let n): notice = n
        case .audioMuted: isMuted = true
        case .audioUnMuted: isMuted = false
        case .participantListChanged(let ps):
            let old = Dictionary(tiles.map { ($0.pid, $0) }, uniquingKeysWith: { a, _ in a })
            tiles = ps.map { p in
                let pid = p.pid ?? p.uid ?? "?"
                return Tile(pid: pid, uid: p.uid ?? "?", name: p.name ?? p.uid ?? "?", isYou: pid == localPID,
                            isMuted: p.isAudioMuted ?? false, level: old[pid]?.level)
            }
        case .participantAudioMuted(let p), .participantAudioUnmuted(let p):
            if let i = tiles.firstIndex(where: { $0.pid == p.pid }) { tiles[i].isMuted = p.isAudioMuted ?? false }
        default: break
        }
        if let i = tiles.firstIndex(where: \.isYou) { tiles[i].isMuted = isMuted }
    }

    /// Updates tile levels; returns whether anything visible changed.
    public mutating func updateLevels(_ levels: [String: Float]) -> Bool {
        var changed = false
        for i in tiles.indices {
            let new = levels[tiles[i].pid]
            if CallScreenRenderer.meterCells(new) != CallScreenRenderer.meterCells(tiles[i].level) || (new == nil) != (tiles[i].level == nil) {
                changed = true
            }
            tiles[i].level = new
        }
        return changed
    }
}
