import CallsCore
import CallsStore

// MARK: Store receipts: what waited for the disk happens now (or is reported failed)
extension RoomCore {
    func stored(_ receipt: StoreReceipt) {
        guard let pending = pendingWrites.removeValue(forKey: receipt.id) else { return }
        switch (pending, receipt.result) {
        case let (.join(sid, pid, _), .success(out)):
            admit(session: sid, pid: pid, name: out.name)
        case let (.join(sid, pid, startsCall), .failure(why)):
            log(.error, "store failed on join", ["session": sid, "error": why.description])
            guard let room = rooms[sid], let p = room.participants[pid] else { return }
            // A call whose start failed is started again by the next join.
            if startsCall && room.order.isEmpty { room.call = nil }
            let connection = p.connection
            leave(session: sid, pid: pid, reason: .disconnected, notifySelf: false)
            if let c = connection { fail(c, .storage, why.diskFull ? "The server's disk is full: it could not record the join." : "The server could not record the join.", close: true) }
        case let (.chat(sid, pid, uid, name, text, at, _), .success(out)):
            chatKept(session: sid, id: out.chatID ?? 0, pid: pid, uid: uid, name: name, text: text, at: at)
        case let (.chat(sid, _, _, _, _, _, connection), .failure(why)):
            log(.error, "store failed on chat", ["session": sid, "error": why.description])
            fail(connection, .storage, why.diskFull ? "The message could not be kept: the server's disk is full." : "The message could not be kept.", close: false)
        case let (.leave(sid, pid, notify, reason, by, endsRoom), result):
            if case .failure(let why) = result {
                // A leave happens whatever the disk says; the failure is logged and counted.
                log(.error, "store failed on leave", ["session": sid, "pid": pid, "error": why.description])
            }
            if let c = notify {
                send(.left(reason: reason, by: by), to: c)
                effects.append(.close(c))
            }
            if endsRoom { effects.append(.roomEnded(session: sid)) }
        case let (.background(what), .success):
            if let failed = failingBackgroundWrites.removeValue(forKey: what) {
                log(.info, "store answers again: \(what)", ["failed_writes": "\(failed)"])
            }
        case let (.background(what), .failure(why)):
            let failed = failingBackgroundWrites[what, default: 0]
            failingBackgroundWrites[what] = failed + 1
            if failed == 0 { log(.error, "store failed: \(what)", ["error": why.description, "until": "it succeeds again (said then)"]) }
        }
    }
}
