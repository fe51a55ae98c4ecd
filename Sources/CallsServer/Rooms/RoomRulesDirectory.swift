import CallsCore
import CallsDatabase
import CallsStore

/// The rules of every room that has some (shared by the REST router, which changes them, and
/// the room core, which reads them on each join), and the server's default moderation.
///
/// Thread rules: any thread (a lock).
final class RoomRulesDirectory: Sendable {
    let defaultModeration: RoomRules.Moderation
    let defaultAccess: RoomRules.Access
    private let rules: Locked<[String: RoomRules]>

    init(defaultModeration: RoomRules.Moderation, defaultAccess: RoomRules.Access = .open, rules: [String: RoomRules] = [:]) {
        self.defaultModeration = defaultModeration
        self.defaultAccess = defaultAccess
        self.rules = Locked(rules)
    }

    func access(_ sessionId: String) -> RoomRules.Access { rules(sessionId)?.access ?? defaultAccess }

    /// Bans `uid` from room `sessionId` for good (or lifts it): the rules stored, then in force
    /// here. Returns the new rules. (The REST endpoint and moderators both come through here.)
    func setBan(_ uid: String, banned: Bool, in sessionId: String, store: CallStore) throws(DatabaseError) -> RoomRules {
        var r = rules(sessionId) ?? RoomRules()
        var bans = r.bannedUids ?? []
        if banned { if !bans.contains(uid) { bans.append(uid) } } else { bans.removeAll { $0 == uid } }
        r.bannedUids = bans.isEmpty ? nil : bans
        try store.setRoomRules(sessionId, r)
        set(sessionId, r)
        return r
    }

    func rules(_ sessionId: String) -> RoomRules? { rules.withLock { $0[sessionId] } }
    func set(_ sessionId: String, _ r: RoomRules?) { rules.withLock { $0[sessionId] = r } }
    func moderation(_ sessionId: String) -> RoomRules.Moderation { rules(sessionId)?.moderation ?? defaultModeration }
    func moderatorMute(_ sessionId: String) -> RoomRules.ModeratorMute { rules(sessionId)?.moderatorMute ?? .selfUnmute }
}
