import CallsCore
import CallsSecurity
import Foundation

/// Every live room and participant: the single source of truth for room state.
///
/// Thread rules: all state lives on `queue` (a serial queue); public entry points hop onto it.
/// Messages leave through the `SignalOutbox`; membership changes publish a new `RelayTable`.
/// Store writes happen on this queue, so a committed join/leave precedes its broadcast.
final class RoomRegistry: @unchecked Sendable {
    struct Participant {
        var wire: WireParticipant
        var connection: UInt64
        var bindToken: [UInt8]
        var key: UInt64
        var storeRowID: Int64?
    }

    final class Room {
        let sessionId: String
        let index: Int
        var callID: Int64?
        var participants: [String: Participant] = [:]  // by pid
        var order: [String] = []  // pids in join order
        init(sessionId: String, index: Int) { self.sessionId = sessionId; self.index = index }
        var roster: [WireParticipant] { order.compactMap { participants[$0]?.wire } }
    }

    let queue = DispatchQueue(label: "callroom.rooms")
    private let store: CallStore
    private let signer: CallTokenSigner
    private let appID: String
    private let relay: MediaRelay
    private let log: ServerLog
    private weak var outboxRef: (any SignalOutbox)?
    private var rooms: [String: Room] = [:]
    private var byConnection: [UInt64: (session: String, pid: String)] = [:]
    private var nextRoomIndex = 1
    private var nextKey: UInt64 = 1
    private var usedSSRCs: Set<UInt32> = []
    private var heartbeat: DispatchSourceTimer?
    let maxParticipants: Int

    init(store: CallStore, signer: CallTokenSigner, appID: String, relay: MediaRelay, log: ServerLog, maxParticipants: Int = 50) {
        self.store = store
        self.signer = signer
        self.appID = appID
        self.relay = relay
        self.log = log
        self.maxParticipants = maxParticipants
    }

    func attach(outbox: any SignalOutbox) { outboxRef = outbox }

    /// Starts the store heartbeat that bounds how much end time a crash can lose.
    func startHeartbeat(every seconds: Double = 5) {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + seconds, repeating: seconds)
        t.setEventHandler { [weak self] in self?.beat() }
        t.resume()
        heartbeat = t
    }

    func stopHeartbeat() { heartbeat?.cancel(); heartbeat = nil }

    var roomCount: Int { queue.sync { rooms.count } }
    var participantCount: Int { queue.sync { rooms.values.reduce(0) { $0 + $1.participants.count } } }

    // MARK: Entry points (any thread)

    func received(_ message: ClientMessage, from connection: UInt64) {
        queue.async { self.handle(message, from: connection) }
    }

    func rejected(_ error: SignalDecodeError, from connection: UInt64) {
        queue.async {
            let (code, text): (String, String)
            switch error {
            case .unknownType(let t): (code, text) = ("SIGNAL_UNKNOWN_TYPE", "Unknown message type '\(t.prefix(40))'.")
            case .notJSON: (code, text) = ("SIGNAL_BAD_MESSAGE", "The message is not a JSON object.")
            case .missingType: (code, text) = ("SIGNAL_BAD_MESSAGE", "The message has no type.")
            case .badFields: (code, text) = ("SIGNAL_BAD_MESSAGE", "The message's fields are not valid.")
            }
            self.outboxRef?.send(.error(code: code, message: text), to: connection)
        }
    }

    func connectionClosed(_ connection: UInt64) {
        queue.async { self.leave(connection: connection, reason: "disconnected", notifySelf: false) }
    }

    /// Ends every call (server shutdown) with the current time.
    func closeAll(reason: String) {
        queue.sync {
            for c in Array(byConnection.keys) { leave(connection: c, reason: reason, notifySelf: true) }
        }
    }

    // MARK: Queue-confined handling

    private func handle(_ message: ClientMessage, from connection: UInt64) {
        switch message {
        case .join(let j): join(j, connection: connection)
        case .setAudioMuted(let muted): setMuted(muted, connection: connection)
        case .leave: leave(connection: connection, reason: "left", notifySelf: true)
        case .ping(let id): outboxRef?.send(.pong(id), to: connection)
        }
    }

    private func fail(_ connection: UInt64, _ code: String, _ message: String, close: Bool) {
        outboxRef?.send(.error(code: code, message: message), to: connection)
        if close { outboxRef?.close(connection) }
    }

    private func join(_ j: ClientMessage.Join, connection: UInt64) {
        guard byConnection[connection] == nil else {
            return fail(connection, "SIGNAL_ALREADY_JOINED", "This connection has joined already.", close: false)
        }
        guard j.v == signallingProtocolVersion else {
            return fail(connection, "SIGNAL_UNSUPPORTED_VERSION", "Protocol version \(j.v) is not supported; use \(signallingProtocolVersion).", close: true)
        }
        let claims: CallTokenClaims
        do {
            claims = try signer.verify(j.callToken)
        } catch {
            let reason = error == .expired ? "The call token has expired." : "The call token is not valid."
            return fail(connection, error == .expired ? "AUTH_ERR_TOKEN_EXPIRED" : "AUTH_ERR_TOKEN_INVALID", reason, close: true)
        }
        guard claims.app == appID else {
            return fail(connection, "AUTH_ERR_APPID_MISMATCH", "The call token was issued for another app.", close: true)
        }
        let now = epochMilliseconds()
        let room = rooms[claims.sid] ?? {
            let r = Room(sessionId: claims.sid, index: nextRoomIndex)
            nextRoomIndex += 1
            rooms[claims.sid] = r
            return r
        }()
        guard room.participants.count < maxParticipants else {
            if room.participants.isEmpty { rooms[claims.sid] = nil }
            return fail(connection, "ERR_ROOM_FULL", "The session already has \(maxParticipants) participants.", close: true)
        }
        var name = claims.sub
        do {
            if let u = try store.user(uid: claims.sub) { name = u.name }
            if room.callID == nil {
                room.callID = try store.startCall(sessionId: claims.sid, type: j.sessionType == "video" ? "video" : "audio",
                                                  mode: "meet", at: now)
            }
        } catch {
            log.error("store failed on join", ["session": claims.sid, "error": "\(error)"])
            if room.participants.isEmpty { rooms[claims.sid] = nil }
            return fail(connection, "ERR_STORAGE", "The server could not record the join.", close: true)
        }
        if let dn = j.displayName?.trimmingCharacters(in: .whitespacesAndNewlines), !dn.isEmpty { name = String(dn.prefix(100)) }
        let pid = Crypto.randomHex(6)
        var ssrc: UInt32 = 0
        repeat { ssrc = Crypto.randomBytes(4).reduce(0) { $0 << 8 | UInt32($1) } } while ssrc == 0 || usedSSRCs.contains(ssrc)
        usedSSRCs.insert(ssrc)
        let role = claims.role ?? (room.participants.isEmpty ? "moderator" : "participant")
        let wire = WireParticipant(uid: claims.sub, name: name, pid: pid, ssrc: ssrc, role: role,
                                   isAudioMuted: j.audioMuted, isVideoPaused: j.videoPaused, joinedAt: now)
        let token = Crypto.randomBytes(MediaBinding.tokenLength)
        var p = Participant(wire: wire, connection: connection, bindToken: token, key: nextKey, storeRowID: nil)
        nextKey += 1
        if let callID = room.callID {
            p.storeRowID = try? store.participantJoined(callID: callID, uid: wire.uid, pid: pid, name: name, at: now)
        }
        let others = room.roster
        room.participants[pid] = p
        room.order.append(pid)
        byConnection[connection] = (claims.sid, pid)
        publishRelayTable()
        outboxRef?.send(.joined(.init(sessionId: claims.sid, you: wire, participants: room.roster, mediaPort: relay.port,
                                      bindToken: Hex.encode(token))), to: connection)
        for o in others { if let c = room.participants[o.pid]?.connection { outboxRef?.send(.participantJoined(wire), to: c) } }
        log.info("participant joined", ["session": claims.sid, "uid": wire.uid, "pid": pid, "participants": "\(room.participants.count)"])
    }

    private func setMuted(_ muted: Bool, connection: UInt64) {
        guard let (sid, pid) = byConnection[connection], let room = rooms[sid], var p = room.participants[pid] else {
            return fail(connection, "SIGNAL_NOT_JOINED", "Join a session first.", close: false)
        }
        guard p.wire.isAudioMuted != muted else { return }
        p.wire.isAudioMuted = muted
        room.participants[pid] = p
        broadcast(room, .participantUpdated(p.wire, change: muted ? "audioMuted" : "audioUnmuted"))
    }

    private func leave(connection: UInt64, reason: String, notifySelf: Bool) {
        guard let (sid, pid) = byConnection.removeValue(forKey: connection) else {
            if notifySelf {
                outboxRef?.send(.left(reason: reason), to: connection)
                outboxRef?.close(connection)
            }
            return
        }
        guard let room = rooms[sid], let p = room.participants.removeValue(forKey: pid) else { return }
        room.order.removeAll { $0 == pid }
        usedSSRCs.remove(p.wire.ssrc)
        let now = epochMilliseconds()
        if let row = p.storeRowID { try? store.participantLeft(rowID: row, at: now) }
        publishRelayTable()
        if notifySelf {
            outboxRef?.send(.left(reason: reason), to: connection)
            outboxRef?.close(connection)
        }
        broadcast(room, .participantLeft(p.wire, reason: reason))
        log.info("participant left", ["session": sid, "uid": p.wire.uid, "pid": pid, "reason": reason])
        if room.participants.isEmpty {
            if let id = room.callID { try? store.endCall(id: id, at: now) }
            rooms[sid] = nil
            log.info("call ended", ["session": sid])
        }
    }

    private func broadcast(_ room: Room, _ message: ServerMessage) {
        for p in room.participants.values { outboxRef?.send(message, to: p.connection) }
    }

    private func publishRelayTable() {
        var t = RelayTable()
        for room in rooms.values {
            var keys: [UInt64] = []
            for p in room.participants.values {
                t.members[p.key] = .init(key: p.key, room: room.index, ssrc: p.wire.ssrc)
                if let bt = BindToken(p.bindToken) { t.byToken[bt] = p.key }
                keys.append(p.key)
            }
            t.rooms[room.index] = keys
        }
        relay.update(t)
    }

    private func beat() {
        let ids = rooms.values.compactMap(\.callID)
        do { try store.heartbeat(callIDs: ids, at: epochMilliseconds()) } catch {
            log.error("store heartbeat failed", ["error": "\(error)"])
        }
    }
}
