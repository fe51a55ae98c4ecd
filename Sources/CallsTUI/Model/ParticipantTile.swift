import CallsCore
import CometChatCallsSDK

/// One participant as the call screen shows it: the server's state plus what this device
/// measures (level, level history, connection quality). A value; owned by the UI thread.
public struct ParticipantTile: Equatable, Sendable {
    public var pid: String
    public var uid: String
    public var name: String { didSet { if name != oldValue { initials = Self.initials(of: name) } } }
    /// Initials of the display name (up to two letters; CJK names keep their first character).
    public private(set) var initials: String
    public var isYou: Bool
    public var isMuted: Bool
    /// dBFS, or nil when no audio has been measured.
    public var level: Float?
    /// Recent levels (dBFS, oldest first), sampled about ten times a second.
    public var levelHistory: [Float] = []
    public var isVideoPaused = false
    /// When the hand went up (orders raised hands); nil when lowered.
    public var raisedHandAt: Int64?
    public var isPinned = false
    public var isPresenting = false
    public var isRecording = false
    public var isModerator = false
    /// How well their audio gets through (nil until measured).
    public var quality: ConnectionQuality?
    public static let historyLength = 48

    public init(pid: String, uid: String, name: String, isYou: Bool, isMuted: Bool, level: Float? = nil) {
        self.pid = pid; self.uid = uid; self.name = name; self.isYou = isYou; self.isMuted = isMuted; self.level = level
        initials = Self.initials(of: name)
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
        if let r = p.role { isModerator = r == ParticipantRole.moderator.rawValue }
    }

    /// Speaking when louder than -40 dBFS and not muted.
    public var isSpeaking: Bool { !isMuted && (level ?? -127) > -40 }

    static func initials(of name: String) -> String {
        let words = name.split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "_" })
        let letters = words.prefix(2).compactMap(\.first).filter { $0.isLetter || $0.isNumber }.map { String($0).uppercased() }
        return letters.isEmpty ? "?" : letters.joined()
    }

    /// Appends the current level to the history (nil and muted count as silence).
    mutating func sampleLevel() {
        levelHistory.append(isMuted ? -127 : (level ?? -127))
        if levelHistory.count > Self.historyLength { levelHistory.removeFirst(levelHistory.count - Self.historyLength) }
    }
}
