import CallsCore
import CallsStore
import CallsTransport
import Foundation

/// A room's rules as `GET/PUT /v3/rooms/{sessionId}` show them: never the passcode.
struct RoomRulesBody: Encodable {
    var sessionId: String
    var moderation: RoomRules.Moderation
    var hasPasscode: Bool
    var allowedUids: [String]?
    var moderatorMute: RoomRules.ModeratorMute
    var access: RoomRules.Access

    init(_ sessionId: String, _ rules: RoomRules?, default moderation: RoomRules.Moderation, access: RoomRules.Access) {
        self.access = rules?.access ?? access
        self.sessionId = sessionId
        self.moderation = rules?.moderation ?? moderation
        hasPasscode = rules?.hasPasscode ?? false
        allowedUids = rules?.allowedUids
        moderatorMute = rules?.moderatorMute ?? .selfUnmute
    }
}

/// `GET /v3/rooms/{sessionId}/bans` and the answer to a ban or its lifting.
struct RoomBansBody: Encodable {
    var sessionId: String
    var bannedUids: [String]
}

// MARK: Room rules (`/v3/rooms/{sessionId}`, the operator's)
extension RESTRouter {
    /// Replaces the room's rules whole: `{moderation?, passcode?, allowedUids?, moderatorMute?}`.
    func setRoomRules(_ r: HTTPRequest, sessionId: String) throws -> HTTPResponse {
        try requireAPIKey(r)
        try validate(sessionId: sessionId)
        struct Body: Decodable { var moderation: String?; var passcode: String?; var allowedUids: [String]?; var moderatorMute: String?; var access: String? }
        let b: Body = try decode(r)
        var rules = RoomRules()
        if let m = b.moderation {
            guard let v = RoomRules.Moderation(rawValue: m) else { throw ServerError.badRequest("moderation is firstJoiner or operator.") }
            rules.moderation = v
        }
        if let m = b.moderatorMute {
            guard let v = RoomRules.ModeratorMute(rawValue: m) else { throw ServerError.badRequest("moderatorMute is selfUnmute or untilAllowed.") }
            rules.moderatorMute = v
        }
        if let a = b.access {
            guard let v = RoomRules.Access(rawValue: a) else { throw ServerError.badRequest("access is open, invited or lobby.") }
            rules.access = v
        }
        if let p = b.passcode {
            guard (4...128).contains(p.count) else { throw ServerError.badRequest("A passcode is 4–128 characters.") }
            rules.setPasscode(p)
        }
        if let uids = b.allowedUids {
            guard uids.count <= 10_000 else { throw ServerError.badRequest("At most 10,000 uids.") }
            for u in uids { try validate(uid: u) }
            rules.allowedUids = uids
        }
        // Bans are kept (they have their own endpoints).
        rules.bannedUids = roomRules.rules(sessionId)?.bannedUids
        try store.setRoomRules(sessionId, rules)
        roomRules.set(sessionId, rules)
        roomRulesChanged(sessionId, rules, nil)
        return ok(RoomRulesBody(sessionId, rules, default: roomRules.defaultModeration, access: roomRules.defaultAccess))
    }

    /// `PUT /v3/rooms/{sessionId}/bans/{uid}`: bans `uid` from the room for good (they leave it
    /// now, and no token of theirs gets in); `DELETE`: lifts that ban and a moderator's removal
    /// from the live session, so a new call token gets them in again.
    func setBan(_ r: HTTPRequest, sessionId: String, uid: String, banned: Bool) throws -> HTTPResponse {
        try requireAPIKey(r)
        try validate(sessionId: sessionId)
        try validate(uid: uid)
        if banned, (roomRules.rules(sessionId)?.bannedUids?.count ?? 0) >= 10_000 {
            throw ServerError.badRequest("At most 10,000 bans per room.")
        }
        let rules = try roomRules.setBan(uid, banned: banned, in: sessionId, store: store)
        roomRulesChanged(sessionId, rules, banned ? nil : uid)
        return ok(RoomBansBody(sessionId: sessionId, bannedUids: rules.bannedUids ?? []))
    }
}
