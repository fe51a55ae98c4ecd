import CallsCore
import CallsVideo
import CometChatCallsSDK
import Foundation

/// Everything the call screen shows, derived from listener events and polled levels.
/// A value; owned by the UI thread.
public struct CallViewModel: Equatable, Sendable {
    public typealias Tile = ParticipantTile

    /// A short message over the screen (visible above panels) that goes away by itself.
    public struct Toast: Equatable, Sendable {
        /// `prompt`: a question a pending key answers (it goes the moment it is answered).
        public enum Kind: Equatable, Sendable { case info, error, prompt }
        public var text: String
        public var kind: Kind
        public var until: Date
    }

    public var title: String
    public var joinedAt: Date?
    public var leftAt: Date?
    /// How the session ended (nil while it runs): what the summary says and the exit status.
    public var ending: SessionEnding?
    /// When the connection to the server was lost (nil: connected): the banner counts from here.
    public var connectionLostAt: Date?
    /// How long the server keeps the session for a resume (its grace period, from `joined`).
    public var reconnectGraceSeconds = 30
    public var now: Date = Date()
    public var tiles: [Tile] = []
    /// The latest video frame per pid (yours mirrored); tiles draw them.
    public var video: [String: TileVideo] = [:]
    /// Presenters' shared terminals by pid (the screen shows the first presenter's).
    public var screens: [String: TerminalGrid] = [:]
    /// How this terminal draws pictures (from its colours and NO_COLOR).
    public var pictureMode: PictureMode = .monochrome
    /// Whether video goes out as character cells or as pixels (sixel, kitty): the terminal's.
    public var graphics: TerminalGraphics = .cells
    public var isMuted = false
    /// The server is recording the session (`onRecordingStarted` … `onRecordingStopped`).
    public var serverRecording = false
    /// Recording shows in the header (and the button says stop): the server's, or anyone's own.
    public var isRecording: Bool { serverRecording || tiles.contains(where: \.isRecording) }
    /// The server is transcribing (its language), and the latest caption of each speaker, most
    /// recent last (`onCaptionReceived`; a final one stays `captionSeconds`).
    public var transcriptionLanguage: String?
    /// The room's live stream (`onStreamingStarted` … `onStreamingStopped`).
    public var streamState: StreamState?
    /// A moderator locked the room (`onRoomLockChanged`).
    public var roomLocked = false
    /// (Moderators) who waits in the lobby, oldest first (`onLobbyRequest`): `y` lets the first
    /// in, `n` sends them away.
    public var lobby: [NamedID] = []
    /// Users a moderator removed from this session (uid, name), newest last: the participant
    /// list's `R` lets the newest back (moderators).
    public var removed: [NamedID] = []
    /// (Moderators) uids banned from the room for good (`CallSession.roomBans`): `U` lifts the last.
    public var bans: [String] = []
    /// The removed who are not banned for good: `R` may let them back.
    public var rejoinable: [NamedID] { removed.filter { !bans.contains($0.id) } }
    /// Someone the screen names and the server knows by `id`: a lobby request's pid, or a
    /// removed user's uid.
    public struct NamedID: Equatable, Sendable {
        public var id: String
        public var name: String
        public init(id: String, name: String) { self.id = id; self.name = name }
    }
    /// What the server offers (`joined.features`): a button for a feature it lacks is not shown.
    public var serverFeatures: Set<SessionFeature> = [.recording, .transcription]
    public var captions: [Caption] = []
    public var captionTimes: [String: Date] = [:]
    public static let captionSeconds: TimeInterval = 6
    /// The viewer turned captions off (the CC button); they show by default while the server transcribes.
    public var captionsHidden = false
    public var captionsShown: Bool { transcriptionLanguage != nil && !captionsHidden }
    /// Captions to draw now: the newest two speakers', finals only while fresh. A final with no
    /// text (the utterance's last pass heard nothing) takes its speaker's guess off the screen.
    public func visibleCaptions(at time: Date) -> [Caption] {
        guard captionsShown else { return [] }
        return Array(captions.filter { !$0.text.isEmpty && (!$0.final || time.timeIntervalSince(captionTimes[$0.pid] ?? .distantPast) < Self.captionSeconds) }.suffix(2))
    }
    public var log = EventLog()
    /// Standing notices (no sound card, a device lost), newest last; none is dropped.
    public var notices: [String] = []
    public var toasts: [Toast] = []
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
    /// Your own view's pin (not the room's): the participant spotlight and sidebar show large.
    public var localPinPID: String?

    /// What the side panel shows (the participant list is the SDK's state and wins).
    public enum Panel: Equatable, Sendable { case log, chat, settings, counts }
    public var panel: Panel = .log
    /// Overlays over the whole screen.
    public enum Overlay: Equatable, Sendable { case help, payload(seq: Int), stats, summary, sharePicker }
    public var overlay: Overlay?
    /// Your own terminal share: what it shares (nil: not sharing), and the picker's choices and
    /// selected row.
    public var sharing: String?
    /// Whether this machine can share a terminal (tmux is installed): the button shows only then.
    public var canShareTerminal = false
    public var shareChoices: [ShareChoice] = []
    public var shareSelection = 0
    /// First line shown of a scrollable overlay.
    public var overlayScroll = 0
    /// The first row of the counts panel shown (it scrolls when the rows do not fit).
    public var countsScroll = 0
    /// Chat lines scrolled back from the newest (0: the newest at the bottom).
    public var chatScroll = 0
    /// The chat input line being typed.
    public var chatDraft = ""
    public var logHidden = false
    /// The event-log search line is being typed.
    public var editingLogSearch = false
    /// Audio modes offered in the settings panel, and the current one.
    public var audioModes: [AudioMode] = [.speaker]
    public var audioMode: AudioMode = .speaker
    /// Devices listed in the settings panel (`name — description`).
    public var playbackDevices: [String] = []
    public var captureDevices: [String] = []
    /// The microphone and speaker endpoints in use (`alsa:default`, `file:…`, `null`).
    public var audioInput = ""
    public var audioOutput = ""
    /// The selected row of the audio settings panel.
    public var settingsSelection = 0

    /// One row of the audio settings panel.
    public enum AudioChoice: Equatable, Sendable {
        case mode(AudioMode)
        case input(spec: String, label: String)
        case output(spec: String, label: String)
        case testTone
    }

    /// The rows of the audio settings panel: modes, microphones, speakers, the test tone.
    public var audioChoices: [AudioChoice] {
        func spec(_ label: String) -> String { "alsa:" + (label.components(separatedBy: " — ").first ?? label) }
        var out: [AudioChoice] = audioModes.map { .mode($0) }
        // One null (ALSA's own null device is the same thing), and the current device only as it
        // opened (a device that failed shows as null, where the call is).
        var inputs = [("null", "null (send silence)")] + captureDevices.map { (spec($0), $0) }.filter { $0.0 != "alsa:null" }
        if !audioInput.isEmpty, !inputs.contains(where: { $0.0 == audioInput }) { inputs.insert((audioInput, audioInput), at: 0) }
        out += inputs.map { .input(spec: $0.0, label: $0.1) }
        var outputs = [("null", "null (play nothing)")] + playbackDevices.map { (spec($0), $0) }.filter { $0.0 != "alsa:null" }
        if !audioOutput.isEmpty, !outputs.contains(where: { $0.0 == audioOutput }) { outputs.insert((audioOutput, audioOutput), at: 0) }
        out += outputs.map { .output(spec: $0.0, label: $0.1) }
        // A test tone needs a speaker: none with nothing playing.
        if audioOutput != "null" && audioOutput != "none" { out.append(.testTone) }
        return out
    }
    /// The listeners the event-log filter cycles through.
    public static let logFilters: [String?] = [nil, "SessionStatusListener", "MediaEventsListener", "ParticipantEventListener",
                                               "LayoutListener", "ButtonClickListener", "CallRoom"]

    /// Participant list: search text, whether it is being typed, and the selected row.
    public var participantSearch = ""
    public var searchingParticipants = false
    public var participantSelection = 0
    /// A dangerous action waiting for its second key press.
    public enum Pending: Equatable, Sendable { case leave, remove(pid: String), ban(pid: String, uid: String) }
    public var pending: Pending?
    /// Page of the tile area (tile grid, spotlight strip, sidebar column).
    public var tilePage = 0
    /// Per-participant receive statistics for the stats overlay (pid → stats).
    public var receiveStats: [String: ReceiveStatistics] = [:]
    /// The latest receive statistics of everyone heard this call, those gone too (the summary's):
    /// a sender who left, or the call's end emptying `receiveStats`, does not unsay them.
    public var heardStats: [String: ReceiveStatistics] = [:]
    /// Receive bitrate per participant id (kbit/s), from two readings of `receiveStats`.
    public var bitrates: [String: Double] = [:]
    /// Your round trip to the server (ms), when measured.
    public var roundTripMs: Double?
    /// What the media engine did (refreshed while in the call; kept for the summary).
    public var media: MediaReport?
    /// Everyone seen during the call (uid → name), for the summary.
    public var seen: [String: String] = [:]
    public var reconnects = 0

    /// The participants the list shows, you first (search matches name or uid, case-insensitively).
    public var listedTiles: [Tile] {
        let q = participantSearch.lowercased()
        let all = tiles.filter(\.isYou) + tiles.filter { !$0.isYou }
        return q.isEmpty ? all : all.filter { $0.name.lowercased().contains(q) || $0.uid.lowercased().contains(q) }
    }

    /// The selected participant in the list, if any.
    public var selectedTile: Tile? {
        let l = listedTiles
        return l.isEmpty ? nil : l[min(max(0, participantSelection), l.count - 1)]
    }

    public var you: Tile? { tiles.first(where: \.isYou) }
    public var hideControlPanel: Bool { get { settings.hideControlPanel } set { settings.hideControlPanel = newValue } }
    public var hideHeaderPanel: Bool { get { settings.hideHeaderPanel } set { settings.hideHeaderPanel = newValue } }
    public var hideToggleAudioButton: Bool { get { settings.hideToggleAudioButton } set { settings.hideToggleAudioButton = newValue } }

    /// Raised hands in the order they went up.
    public var handQueue: [Tile] { tiles.filter { $0.raisedHandAt != nil }.sorted { ($0.raisedHandAt ?? 0, $0.pid) < ($1.raisedHandAt ?? 0, $1.pid) } }

    /// The order (1-based) of a raised hand among all raised hands.
    public func handOrder(of tile: Tile) -> Int? {
        guard let t = tile.raisedHandAt else { return nil }
        return tiles.compactMap(\.raisedHandAt).filter { $0 < t }.count + 1
    }

    /// Whether `tile` is the dominant speaker now (never a muted participant).
    public func isDominant(_ tile: Tile) -> Bool { tile.pid == dominantPID && !tile.isMuted }

    /// The participant the spotlight and sidebar layouts show large: your own pin, the room's
    /// pin, someone else sharing their screen as their video (a browser's share: presenting,
    /// video on, no shared terminal of theirs — that one is drawn as text above the tiles), the
    /// dominant speaker, else the first other participant.
    public var mainTile: Tile? {
        tiles.first { $0.pid == localPinPID } ?? tiles.first(where: \.isPinned)
            ?? tiles.first { !$0.isYou && $0.isPresenting && !$0.isVideoPaused && screens[$0.pid] == nil }
            ?? tiles.first { isDominant($0) } ?? tiles.first { !$0.isYou } ?? tiles.first
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

    /// Shows a toast for `seconds`.
    public mutating func toast(_ text: String, kind: Toast.Kind = .info, seconds: TimeInterval = 5) {
        toasts.removeAll { $0.text == text }
        toasts.append(Toast(text: text, kind: kind, until: now.addingTimeInterval(seconds)))
        if toasts.count > 3 { toasts.removeFirst(toasts.count - 3) }
    }

    /// Drops toasts whose time is up; returns whether any went.
    public mutating func expireToasts() -> Bool {
        let before = toasts.count
        toasts.removeAll { $0.until <= now }
        return toasts.count != before
    }

    /// Records an event in the log and updates state that events carry.
    public mutating func apply(_ e: CallEvent, localPID: String?, at time: Date = Date()) {
        log.append(e, at: time)
        switch e {
        case .sessionJoined:
            joinedAt = time
            status = "in call"
        case .sessionLeft: status = "left"; leftAt = time; connectionLostAt = nil
        case .connectionClosed: status = "connection closed"; leftAt = time; connectionLostAt = nil
        case .connectionLost: status = "reconnecting…"; reconnects += 1; connectionLostAt = time
        case .connectionRestored: status = "in call"; connectionLostAt = nil
        case .sessionTimedOut: status = "timed out"; leftAt = time; connectionLostAt = nil
        case .audioNotice(let n): if !notices.contains(n) { notices.append(n) }
        case .error(let code, let message): toast("\(code): \(message)", kind: .error, seconds: 6)
        case .audioMuted: isMuted = true
        case .audioUnMuted: isMuted = false
        case .recordingStarted: serverRecording = true; toast("Recording started")
        case .recordingStopped: serverRecording = false; toast("Recording stopped")
        case .streamingStarted: streamState = .live; toast("Live stream started")
        case .streamingReconnecting(let reason): streamState = .reconnecting; toast("Live stream reconnecting: \(reason)", kind: .error, seconds: 6)
        case .streamingReconnected: streamState = .live; toast("Live stream back on air")
        case .streamingStopped: streamState = nil; toast("Live stream stopped")
        case .roomLockChanged(let locked):
            roomLocked = locked
            toast(locked ? "The room is locked: nobody new may join" : "The room is unlocked")
        case .waitingInLobby:
            status = "waiting for the host…"
            toast("Waiting for the host to let you in…", seconds: 30)
        case .lobbyRequest(let p):
            let pid = p.pid ?? "?", name = p.name ?? p.uid ?? "someone"
            if !lobby.contains(where: { $0.id == pid }) { lobby.append(NamedID(id: pid, name: name)) }
            toast("\(name) is waiting to join: y lets them in, n sends them away", seconds: 10)
        case .lobbyRequestResolved(let p, _):
            lobby.removeAll { $0.id == p.pid }
        case .participantLeft(let p) where p.leftReason == LeaveReason.removed.rawValue:
            if let uid = p.uid {
                removed.removeAll { $0.id == uid }
                removed.append(NamedID(id: uid, name: p.name ?? uid))
            }
        case .participantJoined(let p):
            removed.removeAll { $0.id == p.uid }
        case .transcriptionStarted(let language):
            transcriptionLanguage = language
            toast("Transcription started (\(language))" + (settings.hideClosedCaptionButton ? "" : ": a hides captions"))
        case .transcriptionStopped:
            transcriptionLanguage = nil
            captions = []
            toast("Transcription stopped")
        case .captionReceived(let c):
            captions.removeAll { $0.pid == c.pid }
            captions.append(c)
            captionTimes[c.pid] = time
            if captions.count > 8 { captions.removeFirst() }
        case .participantListChanged(let ps):
            let old = Dictionary(tiles.map { ($0.pid, $0) }, uniquingKeysWith: { a, _ in a })
            tiles = ps.map { p in
                let pid = p.pid ?? p.uid ?? "?"
                var t = Tile(pid: pid, uid: p.uid ?? "?", name: p.name ?? p.uid ?? "?", isYou: pid == localPID,
                             isMuted: p.isAudioMuted ?? false, level: old[pid]?.level)
                t.levelHistory = old[pid]?.levelHistory ?? []
                t.quality = old[pid]?.quality
                t.update(from: p)
                return t
            }
            for t in tiles { seen[t.uid] = t.name }
            if let l = localPinPID, !tiles.contains(where: { $0.pid == l }) { localPinPID = nil }
        case .participantAudioMuted(let p), .participantAudioUnmuted(let p), .participantVideoPaused(let p), .participantVideoResumed(let p),
             .participantHandRaised(let p), .participantHandLowered(let p), .participantStartedScreenShare(let p),
             .participantStoppedScreenShare(let p), .participantStartedRecording(let p), .participantStoppedRecording(let p):
            if let i = tiles.firstIndex(where: { $0.pid == p.pid }) { tiles[i].update(from: p) }
            if p.pid == localPID { isHandRaised = p.raisedHandTimestamp != nil }
        case .dominantSpeakerChanged(let p):
            // A muted participant is never shown as the dominant speaker.
            if p.isAudioMuted == true || tiles.first(where: { $0.pid == p.pid })?.isMuted == true { dominantPID = nil } else { dominantPID = p.pid }
        case .videoPaused: isVideoPaused = true
        case .videoResumed: isVideoPaused = false
        case .callLayoutChanged(let l): layout = l; tilePage = 0
        case .pictureInPictureLayoutEnabled: pictureInPicture = true
        case .pictureInPictureLayoutDisabled: pictureInPicture = false
        case .participantListVisible: participantListVisible = true
        case .participantListHidden: participantListVisible = false
        case .chatMessage(let m):
            chat.append(m)
            if chat.count > 1000 { chat.removeFirst() }
            if chatScroll > 0 { chatScroll += 1 }  // reading back: the view stays where it is
            if panel != .chat, !m.uid.isEmpty, you?.uid != m.uid { chatUnread += 1 }
        case .chatButtonClicked: chatUnread = 0
        case .audioModesChanged(let modes): audioModes = modes
        case .audioModeChanged(let mode): audioMode = mode
        case .connectionQualityChanged(let p, let q):
            if let i = tiles.firstIndex(where: { $0.pid == p.pid }) { tiles[i].quality = q }
        default: break
        }
        // Your own tile shows your state at once (not only after the next roster update).
        if let i = tiles.firstIndex(where: \.isYou) {
            tiles[i].isMuted = isMuted
            tiles[i].isVideoPaused = isVideoPaused
        }
        if let d = dominantPID, tiles.first(where: { $0.pid == d })?.isMuted == true { dominantPID = nil }
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
            if CallScreenRenderer.meterCells(new, width: 20) != CallScreenRenderer.meterCells(tiles[i].level, width: 20) || (new == nil) != (tiles[i].level == nil) {
                changed = true
            }
            tiles[i].level = new
        }
        return changed
    }

    /// Adds the current levels to every tile's history (about ten times a second).
    public mutating func sampleLevelHistory() {
        for i in tiles.indices { tiles[i].sampleLevel() }
    }
}
