import CallsCore
import CallsSecurity
import Foundation

/// What the operator says about one room (`PUT /v3/rooms/{sessionId}`): who becomes moderator,
/// a passcode, an allow-list of uids. A value.
public struct RoomRules: Sendable, Equatable, Codable {
    /// `firstJoiner`: the first one in (and, when the moderator leaves, the longest present one
    /// whose role the operator did not set) moderates; `operator`: only roles in call tokens.
    public enum Moderation: String, Sendable, Codable { case firstJoiner, `operator` }

    /// After a moderator mutes someone: `selfUnmute` — they may unmute themselves (the vendor
    /// SDK's behaviour, the default); `untilAllowed` — their own unmute is refused
    /// (`ERR_MUTED_BY_MODERATOR`) until a moderator allows it (`allowUnmute`).
    public enum ModeratorMute: String, Sendable, Codable { case selfUnmute, untilAllowed }

    /// Who gets into the room: `open` — anyone of the app with a call token for it (the vendor's
    /// model); `invited` — only `allowedUids` and call tokens with the moderator role; `lobby` —
    /// the same get in at once, everyone else waits until a moderator admits or denies them.
    public enum Access: String, Sendable, Codable, CaseIterable { case open, invited, lobby }

    public var moderation: Moderation?
    public var moderatorMute: ModeratorMute?
    /// nil: the server's `roomAccess`.
    public var access: Access?
    /// SHA-256 of salt ‖ passcode (hex), and the salt; the passcode itself is never kept.
    package var passcodeHash: String?
    package var passcodeSalt: String?
    /// nil: anyone with a call token; else only these uids.
    public var allowedUids: [String]?
    /// Users banned from the room for good (`/v3/rooms/{sessionId}/bans`).
    public var bannedUids: [String]?

    public var hasPasscode: Bool { passcodeHash != nil }

    public init(moderation: Moderation? = nil, passcode: String? = nil, allowedUids: [String]? = nil, moderatorMute: ModeratorMute? = nil) {
        self.moderation = moderation
        self.moderatorMute = moderatorMute
        self.allowedUids = allowedUids
        if let passcode { setPasscode(passcode) }
    }

    package mutating func setPasscode(_ passcode: String) {
        let salt = Crypto.randomHex(16)
        passcodeSalt = salt
        passcodeHash = Crypto.sha256Hex(salt + passcode)
    }

    /// Whether `given` is the room's passcode (constant time).
    package func passcodeMatches(_ given: String?) -> Bool {
        guard let hash = passcodeHash, let salt = passcodeSalt else { return true }
        guard let given else { return false }
        return Crypto.constantTimeEqual(Array(Crypto.sha256Hex(salt + given).utf8), Array(hash.utf8))
    }
}
