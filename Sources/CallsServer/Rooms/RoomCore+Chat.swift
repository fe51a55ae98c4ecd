import CallsCore

// MARK: In-call chat
extension RoomCore {
    /// Checks and keeps a chat message; it is broadcast once kept (`+Store`).
    func chat(_ room: Room, from pid: String, text raw: String, connection: ConnectionID) {
        guard var p = room.participants[pid] else { return }
        let text = DisplayText.message(raw).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return fail(connection, .badMessage, "A chat message needs text.", close: false) }
        guard text.count <= limits.maxChatCharacters else {
            return fail(connection, .messageTooLong, "Chat messages are at most \(limits.maxChatCharacters) characters.", close: false)
        }
        let allowed = p.chatLimiter.allow(now: UInt64(max(0, now)) &* 1_000_000)
        room.participants[pid] = p
        guard allowed else { return fail(connection, .rateLimited, "Too many chat messages; wait a moment.", close: false) }
        guard room.chatMessages < limits.maxChatMessagesPerCall else {
            return fail(connection, .chatFull, "This call's chat holds \(limits.maxChatMessagesPerCall) messages; no more are kept.", close: false)
        }
        guard let call = room.call else { return }  // (an admitted participant's room always has one)
        room.chatMessages += 1
        persist([.chat(call: call, uid: p.wire.uid, pid: pid, name: p.wire.name, text: text, at: now)],
                .chat(session: room.sessionId, pid: pid, uid: p.wire.uid, name: p.wire.name, text: text, at: now, connection: connection))
    }

    /// The message is kept: everyone in the room sees it (its sender included).
    func chatKept(session sid: String, id: Int64, pid: String, uid: String, name: String, text: String, at: Int64) {
        guard let room = rooms[sid] else { return }
        broadcast(room, .chat(ChatMessage(id: id, pid: pid, uid: uid, name: name, text: text, sentAt: at)))
    }
}
