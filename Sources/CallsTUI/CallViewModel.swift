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
        public var isVideoPaused = false
        /// When the hand went up (orders raised hands); nil when lowered.
        public var raisedHandAt: Int64?
        public var isPinned = false
        public var isPresenting = false
        public var isRecording = false
        /// How well their audio gets through (nil until measured).
        public var quality: ConnectionQuality?

        public init(pid: String, uid: String, name: String, isYou: Bool, isMuted: Bool, level: Float? = nil) {
            self.pid = pid; self.uid = uid; self.name = name; self.isYou = isYou; self.isMuted = isMuted; self.level = level
        }

        /// Takes the server's state for this participant.
        mutating func update(from p: Participant) {
            if let n = p.name { name = n }
            isMuted = p.isAudioMuted ?? isMuted
            isVideoPaused = p.isVideoPaused ?? isVideoPaused
            raisedHandAt = p.raisedHandTimestamp
            isPinned = p.isPinned ?? isPinned
            isPresenting = p.isPresenting ?? isPresenting
            isRecording = p.isRecording ?? isRecording
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
    /// The session's settings: which panels and buttons are hidden.
    public var settings = SessionSettingsBuilder.SessionSettings()
    public var layout: LayoutType = .tile
    public var pictureInPicture = false
    public var participantListVisible = false
    public var dominantPID: String?
    public var isVideoPaused = false
    public var isHandRaised = false
    public var chatUnread = 0
    public var chat: [ChatEntry] = []

    /// What the side panel shows (the participant list is the SDK's state and wins).
    public enum Panel: Equatable, Sendable { case log, chat, help, settings }
    public var panel: Panel = .log
    /// The chat input line being typed.
    public var chatDraft = ""
    /// Event log: only this listener (nil: all), scrolled back this many entries, or hidden.
    public var logFilter: String?
    public var logScroll = 0
    public var logHidden = false
    /// Audio modes offered in the settings panel, and the current one.
    public var audioModes: [AudioMode] = [.speaker]
    public var audioMode: AudioMode = .speaker
    /// Playback devices listed in the settings panel.
    public var playbackDevices: [String] = []
    /// The listeners the event-log filter cycles through.
    public static let logFilters: [String?] = [nil, "SessionStatusListener", "MediaEventsListener", "ParticipantEventListener",
                                               "LayoutListener", "ButtonClickListener", "CallRoom"]

    /// Participant list: search text, whether it is being typed, and the selected row.
    public var participantSearch = ""
    public var searchingParticipants = false
    public var participantSelection = 0

    /// The participants the list shows (search matches name or uid, case-insensitively).
    public var listedTiles: [Tile] {
        let q = participantSearch.lowercased()
        return q.isEmpty ? tiles : tiles.filter { $0.name.lowercased().contains(q) || $0.uid.lowercased().contains(q) }
    }

    /// The selected participant in the list, if any.
    public var selectedTile: Tile? {
        let l = listedTiles
        return l.isEmpty ? nil : l[min(max(0, participantSelection), l.count - 1)]
    }

    /// The log entries the filter lets through.
    public var visibleLog: [LogEntry] { logFilter.map { f in log.filter { $0.listener == f } } ?? log }
    public var hideControlPanel: Bool { get { settings.hideControlPanel } set { settings.hideControlPanel = newValue } }
    public var hideHeaderPanel: Bool { get { settings.hideHeaderPanel } set { settings.hideHeaderPanel = newValue } }
    public var hideToggleAudioButton: Bool { get { settings.hideToggleAudioButton } set { settings.hideToggleAudioButton = newValue } }
    public static let maxLogEntries = 500

    /// The control bar's buttons, in order, as the settings leave them visible: (button, key, label).
    public var buttons: [(BuiltInButton, Unicode.Scalar, String)] {
        let s = settings
        var out: [(BuiltInButton, Unicode.Scalar, String)] = []
        if !s.hideToggleAudioButton { out.append((.toggleAudio, "m", isMuted ? "Unmute" : "Mute")) }
        // A voice session has no video controls.
        if !s.hideToggleVideoButton && s.sessionType == .video { out.append((.toggleVideo, "v", isVideoPaused ? "Start video" : "Stop video")) }
        if !s.hideSwitchCameraButton && s.sessionType == .video { out.append((.switchCamera, "c", "Camera")) }
        if !s.hideRaiseHandButton { out.append((.raiseHand, "h", isHandRaised ? "Lower hand" : "Raise hand")) }
        if !s.hideChangeLayoutButton { out.append((.changeLayout, "y", "Layout")) }
        if !s.hideParticipantListButton { out.append((.participantList, "p", "People")) }
        if !s.hideChatButton { out.append((.chat, "t", chatUnread > 0 ? "Chat (\(chatUnread))" : "Chat")) }
        if !s.hideShareInviteButton { out.append((.shareInvite, "s", "Invite")) }
        if !s.hideRecordingButton { out.append((.recordingToggle, "r", "Record")) }
        if !s.hideLeaveSessionButton { out.append((.leaveSession, "l", "Leave")) }
        return out
    }

    /// The order (1-based) of a raised hand among all raised hands.
    public func handOrder(of tile: Tile) -> Int? {
        guard let t = tile.raisedHandAt else { return nil }
        return tiles.compactMap(\.raisedHandAt).filter { $0 < t }.count + 1
    }

    /// The participant the spotlight and sidebar layouts show large: pinned, else the dominant
    /// speaker, else the first other participant.
    public var mainTile: Tile? {
        tiles.first(where: \.isPinned) ?? tiles.first { $0.pid == dominantPID } ?? tiles.first { !$0.isYou } ?? tiles.first
    }

    public init(title: String) { self.title = title }

    /// Applies the session settings' visibility flags.
    public mutating func apply(_ s: SessionSettingsBuilder.SessionSettings) {
        if let t = s.title { title = t }
        settings = s
        layout = s.layout
        pictureInPicture = s.enableIOSPictureInPicture
        isMuted = s.startAudioMuted
        isVideoPaused = s.startVideoPaused
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
                var t = Tile(pid: pid, uid: p.uid ?? "?", name: p.name ?? p.uid ?? "?", isYou: pid == localPID,
                             isMuted: p.isAudioMuted ?? false, level: old[pid]?.level)
                t.update(from: p)
                return t
            }
        case .participantAudioMuted(let p), .participantAudioUnmuted(let p), .participantVideoPaused(let p), .participantVideoResumed(let p),
             .participantHandRaised(let p), .participantHandLowered(let p), .participantStartedScreenShare(let p),
             .participantStoppedScreenShare(let p), .participantStartedRecording(let p), .participantStoppedRecording(let p):
            if let i = tiles.firstIndex(where: { $0.pid == p.pid }) { tiles[i].update(from: p) }
            if p.pid == localPID { isHandRaised = p.raisedHandTimestamp != nil }
        case .dominantSpeakerChanged(let p): dominantPID = p.pid
        case .videoPaused: isVideoPaused = true
        case .videoResumed: isVideoPaused = false
        case .callLayoutChanged(let l): layout = l
        case .pictureInPictureLayoutEnabled: pictureInPicture = true
        case .pictureInPictureLayoutDisabled: pictureInPicture = false
        case .participantListVisible: participantListVisible = true
        case .participantListHidden: participantListVisible = false
        case .chatMessage(let m):
            chat.append(m)
            if chat.count > 200 { chat.removeFirst() }
            if panel != .chat, !m.uid.isEmpty, tiles.first(where: \.isYou)?.uid != m.uid { chatUnread += 1 }
        case .chatButtonClicked: chatUnread = 0
        case .audioModesChanged(let modes): audioModes = modes
        case .audioModeChanged(let mode): audioMode = mode
        default: break
        }
        if let i = tiles.firstIndex(where: \.isYou) { tiles[i].isMuted = isMuted }
    }

    /// Updates connection quality; returns whether anything changed.
    public mutating func updateQuality(_ q: [String: ConnectionQuality]) -> Bool {
        var changed = false
        for i in tiles.indices where tiles[i].quality != q[tiles[i].pid] {
            tiles[i].quality = q[tiles[i].pid]
            changed = true
        }
        return changed
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
