import CallsCore

// MARK: In-call chat (on the registry's queue)
extension RoomRegistry {
    func chat(_ room: Room, from pid: String, text raw: String, connection: ConnectionID) {
        guard var p = room.participants[pid] else { return }
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return fail(connection, .badMessage, "A chat message needs text.", close: false) }
        guard text.count <= limits.maxChatCharacters else {
            return fail(connection, .messageTooLong, "Chat messages are at most \(limits.maxChatCharacters) characters.", close: false)
        }
        guard p.chatLimiter.allow(now: monotonicNanoseconds()) else {
            room.participants[pid] = p
            return fail(connection, .rateLimited, "Too many chat messages; wait a moment.", close: false)
        }
        room.participants[pid] = p
        let now = scheduler.nowMilliseconds()
        var id: Int64 = 0
        if let call = room.callID {
            do { id = try store.addChatMessage(callID: call, uid: p.wire.uid, pid: pid, name: p.wire.name, text: text, at: now) } catch {
                return fail(connection, .storage, "The message could not be kept.", close: false)
            }
        }
        broadcast(room, .chat(ChatMessage(id: id, pid: pid, uid: p.wire.uid, name: p.wire.name, text: text, sentAt: now)))
    }
}
