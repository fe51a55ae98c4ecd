import CallsCore
import CallsDatabase

/// A group: a guid, a name, an owner, and its members (uids, in joining order).
public struct StoredGroup: Sendable, Equatable, Codable {
    public var guid: String
    public var name: String
    public var owner: String
    public var createdAt: Int64
    public var members: [String]
}

/// Members one group holds: ringing a group rings (and pushes to) every one of them, and each
/// ring writes a row per member — a user could grow their group to every account of the app.
package let maxGroupMembers = 1_000

extension CallStore {
    /// What `createGroup` did.
    package enum GroupCreation: Sendable {
        case created(StoredGroup)
        case guidTaken
        /// The owner owns `ownedLimit` groups already.
        case ownerFull
    }

    /// Creates a group owned by `owner` (a member) with `members`, unless the guid is taken or
    /// the owner owns `ownedLimit` groups already (nil: no limit).
    package func createGroup(guid: String, name: String, owner: String, members: [String], ownedLimit: Int?,
                             now: Int64 = epochMilliseconds()) throws(DatabaseError) -> GroupCreation {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) -> GroupCreation in
                if try !db.query("SELECT 1 FROM groups WHERE guid = ?", [.text(guid)]).isEmpty { return .guidTaken }
                if let ownedLimit, (try db.query("SELECT COUNT(*) FROM groups WHERE owner_uid = ?", [.text(owner)]).first?[0].int ?? 0) >= Int64(ownedLimit) {
                    return .ownerFull
                }
                try db.execute("INSERT INTO groups(guid, name, owner_uid, created_at) VALUES (?, ?, ?, ?)",
                               [.text(guid), .text(name), .text(owner), .int(now)])
                var all = [owner]
                for m in members where !all.contains(m) { all.append(m) }
                for (i, m) in all.enumerated() {
                    try db.execute("INSERT INTO group_members(guid, uid, joined_at) VALUES (?, ?, ?)", [.text(guid), .text(m), .int(now + Int64(i))])
                }
                guard let g = try loadGroup(guid) else { return .guidTaken }
                return .created(g)
            }
        }
    }

    public func group(guid: String) throws(DatabaseError) -> StoredGroup? {
        try locked { () throws(DatabaseError) in try loadGroup(guid) }
    }

    /// Groups in creation order; with `member`, only the groups they are in.
    public func groups(member: String?, page: Int, perPage: Int) throws(DatabaseError) -> Page<StoredGroup> {
        try locked { () throws(DatabaseError) in
            let filter = member == nil ? "" : "WHERE guid IN (SELECT guid FROM group_members WHERE uid = ?)"
            let params: [DatabaseValue] = member.map { [.text($0)] } ?? []
            let total = Int(try db.query("SELECT COUNT(*) FROM groups \(filter)", params).first?.first?.int ?? 0)
            let guids = try db.query("SELECT guid FROM groups \(filter) ORDER BY created_at, guid LIMIT ? OFFSET ?",
                                     params + [.int(Int64(perPage)), .int(Int64((page - 1) * perPage))]).compactMap { $0.first?.text }
            var items: [StoredGroup] = []
            for g in guids { if let group = try loadGroup(g) { items.append(group) } }
            return Page(items: items, total: total, page: page, perPage: perPage)
        }
    }

    /// What adding members came to.
    package enum GroupAddition: Sendable {
        case added(StoredGroup)
        case noGroup
        /// The group would pass `maxGroupMembers`: nobody was added.
        case full
    }

    /// Adds members (those in it already stay as they are), all or none within `maxGroupMembers`.
    package func addGroupMembers(guid: String, uids: [String], now: Int64 = epochMilliseconds()) throws(DatabaseError) -> GroupAddition {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) -> GroupAddition in
                guard try !db.query("SELECT 1 FROM groups WHERE guid = ?", [.text(guid)]).isEmpty else { return .noGroup }
                let present = Set(try db.query("SELECT uid FROM group_members WHERE guid = ?", [.text(guid)]).compactMap { $0[0].text })
                guard present.union(uids).count <= maxGroupMembers else { return .full }
                for (i, u) in uids.enumerated() {
                    try db.execute("INSERT INTO group_members(guid, uid, joined_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   [.text(guid), .text(u), .int(now + Int64(i))])
                }
                return try loadGroup(guid).map(GroupAddition.added) ?? .noGroup
            }
        }
    }

    /// Removes one member; false when they were not in it (or there is no such group).
    public func removeGroupMember(guid: String, uid: String) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.execute("DELETE FROM group_members WHERE guid = ? AND uid = ?", [.text(guid), .text(uid)])
            return db.changes > 0
        }
    }

    public func deleteGroup(guid: String) throws(DatabaseError) -> Bool {
        try locked { () throws(DatabaseError) in
            try db.transaction { () throws(DatabaseError) -> Bool in
                try db.execute("DELETE FROM group_members WHERE guid = ?", [.text(guid)])
                try db.execute("DELETE FROM groups WHERE guid = ?", [.text(guid)])
                return db.changes > 0
            }
        }
    }

    /// (Caller holds the lock.)
    package func loadGroup(_ guid: String) throws(DatabaseError) -> StoredGroup? {
        guard let r = try db.query("SELECT guid, name, owner_uid, created_at FROM groups WHERE guid = ?", [.text(guid)]).first else { return nil }
        let members = try db.query("SELECT uid FROM group_members WHERE guid = ? ORDER BY joined_at, uid", [.text(guid)]).compactMap { $0.first?.text }
        return StoredGroup(guid: r[0].text ?? guid, name: r[1].text ?? guid, owner: r[2].text ?? "", createdAt: r[3].int ?? 0, members: members)
    }
}

extension CallStore {
    /// Ringing calls not yet answered or ended (mode `call`, status `initiated`), for the ring
    /// registry to restore after a restart.
    package func ringingCalls() throws(DatabaseError) -> [WireCall] {
        try locked { () throws(DatabaseError) in
            let rows = try db.query("""
                SELECT c.id, c.session_id, c.type, c.initiated_at, c.initiator_uid, c.receiver_id, c.receiver_type, c.ring_timeout_s
                FROM calls c WHERE c.mode = 'call' AND c.status = 'initiated' ORDER BY c.id
                """)
            var out: [WireCall] = []
            for r in rows {
                guard let id = r[0].int, let sid = r[1].text, let initiator = r[4].text, let receiver = r[5].text,
                      let rtype = r[6].text.flatMap(CallReceiverType.init(rawValue:)) else { continue }
                let members = try db.query("""
                    SELECT m.uid, COALESCE(u.name, m.uid), m.outcome FROM call_members m LEFT JOIN users u ON u.uid = m.uid
                    WHERE m.call_id = ? ORDER BY m.rowid
                    """, [.int(id)]).map {
                    CallMemberWire(uid: $0[0].text ?? "", name: $0[1].text ?? "", outcome: $0[2].text.flatMap(CallMemberOutcome.init(rawValue:)) ?? .ringing)
                }
                let initiatorName = try db.query("SELECT name FROM users WHERE uid = ?", [.text(initiator)]).first?.first?.text ?? initiator
                let receiverName = rtype == .group
                    ? try db.query("SELECT name FROM groups WHERE guid = ?", [.text(receiver)]).first?.first?.text ?? receiver
                    : try db.query("SELECT name FROM users WHERE uid = ?", [.text(receiver)]).first?.first?.text ?? receiver
                out.append(WireCall(sessionId: sid, initiator: CallPartyWire(id: initiator, name: initiatorName), receiverType: rtype,
                                    receiver: CallPartyWire(id: receiver, name: receiverName),
                                    type: r[2].text.flatMap(CallMediaType.init(rawValue:)) ?? .audio, status: .initiated, members: members,
                                    timeoutSeconds: Int(r[7].int ?? 45), initiatedAt: r[3].int ?? 0))
            }
            return out
        }
    }
}
