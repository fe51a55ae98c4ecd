import CallsCore
import CallsSecurity
import Foundation

/// Every live room and participant: the single source of truth for room state.
///
/// Thread rules: all state lives on `queue` (a serial queue); entry points hop onto it.
/// Messages leave through the `SignalOutbox`; membership changes publish a new `RelayTable`.
/// Store writes happen on this queue, so a committed join/leave precedes its broadcast.
/// Facets: `+State` (participant state, moderation), `+Chat`, `+Presence` (reconnection,
/// idle timeout, dominant speaker).
final class RoomRegistry: SignalHandler, @unchecked Sendable {
    struct Participant {
        var wire: WireParticipant
        /// The signalling connection; nil while held after a drop (see `+Presence`).
        var connection: ConnectionID?
        var bindToken: [UInt8]
        var resumeToken: String
        var key: UInt64
        var storeRowID: Int64?
        var idleTimeoutSeconds: Int
        var chatLimiter: RateLimiter
        var grace: ScheduledWork?
    }

    final class Room {
        let sessionId: String
        let index: Int
        var callID: Int64?
        var participants: [String: Participant] = [:]  // by pid
        var order: [String] = []  // pids in join order
        var idleTimer: ScheduledWork?
        var dominant: String?
        init(sessionId: String, index: Int) { self.sessionId = sessionId; self.index = index }
        var roster: [WireParticipant] { order.compactMap { participants[$0]?.wire } }
    }

    let queue = DispatchQueue(label: "callroom.rooms")
    let store: CallStore
    private let signer: CallTokenSigner
    private let appID: String
    let relay: MediaRelay
    let log: ServerLog
    let limits: RoomLimits
    /// Time and timers (grace periods, idle timeouts): real, or virtual in tests.
    let scheduler: any Scheduler
    weak var outboxRef: (any SignalOutbox)?
    var rooms: [String: Room] = [:]
    /// Which participant each connection speaks for.
    var byConnection: [ConnectionID: (session: String, pid: String)] = [:]
    var byResumeToken: [String: (session: String, pid: String)] = [:]
    var roomsByIndex: [Int: String] = [:]
    private var nextRoomIndex = 1
    private var nextKey: UInt64 = 1
    private var usedSSRCs: Set<UInt32> = []
    private var heartbeat: DispatchSourceTimer?

    init(store: CallStore, signer: CallTokenSigner, appID: String, relay: MediaRelay, log: ServerLog, limits: RoomLimits = RoomLimits(),
         scheduler: any Scheduler = DispatchScheduler.shared) {
        self.scheduler = scheduler
        self.store = store
        self.signer = signer
        self.appID = appID
        self.relay = relay
        self.log = log
        self.limits = limits
    }

    func attach(outbox: any SignalOutbox) {
        outboxRef = outbox
        relay.onDominantSpeaker = { [weak self] room, key in
            guard let registry = self else { return }
            registry.queue.async { registry.dominantSpeakerChanged(roomIndex: room, key: key) }
        }
    }

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

    /// A room-family message from the router (rate-limited there already).
    func received(_ message: ClientMessage, from connection: ConnectionID) {
        queue.async { self.handle(message, from: connection) }
    }

    func connectionClosed(_ connection: ConnectionID) {
        queue.async { self.connectionDropped(connection) }
    }

    /// Ends every call (server shutdown) with the current time.
    func closeAll(reason: LeaveReason) {
        queue.sync {
            for room in Array(rooms.values) {
                for pid in room.order { leave(session: room.sessionId, pid: pid, reason: reason, notifySelf: true) }
            }
        }
    }

    // MARK: Queue-confined handling

    private func handle(_ message: ClientMessage, from connection: ConnectionID) {
        dispatchPrecondition(condition: .onQueue(queue))
        if case .join(let j) = message { return join(j, connection: connection) }
        if case .resume(let token) = message { return resume(token: token, connection: connection) }
        guard let (sid, pid) = byConnection[connection], let room = rooms[sid], room.participants[pid] != nil else {
            return fail(connection, .notJoined, "Join a session first.", close: false)
        }
        switch message {
        case .leave: leave(session: sid, pid: pid, reason: .left, notifySelf: true)
        case .setAudioMuted(let v): update(room, pid, change: v ? .audioMuted : .audioUnmuted) { $0.isAudioMuted = v }
        case .setVideoPaused(let v): update(room, pid, change: v ? .videoPaused : .videoResumed) { $0.isVideoPaused = v }
        case .setHandRaised(let v):
            update(room, pid, change: v ? .handRaised : .handLowered) { $0.raisedHandTimestamp = v ? ($0.raisedHandTimestamp ?? scheduler.nowMilliseconds()) : nil }
        case .setPresenting(let v): update(room, pid, change: v ? .presentingStarted : .presentingStopped) { $0.isPresenting = v }
        case .setRecording(let v): update(room, pid, change: v ? .recordingStarted : .recordingStopped) { $0.isRecording = v }
        case .setCameraFacing(let v):
            guard v == "FRONT" || v == "REAR" else { return fail(connection, .badMessage, "cameraFacing is FRONT or REAR.", close: false) }
            update(room, pid, change: .cameraFacingChanged) { $0.cameraFacing = v }
        case .setSessionFeature(let feature, _):
            // (An unknown feature does not decode: SIGNAL_BAD_MESSAGE.)
            fail(connection, .featureUnavailable, "\(feature.title) is not available on this server.", close: false)
        case .pin(let target): pin(room, by: pid, target: target, connection: connection)
        case .muteParticipant(let target): moderate(room, by: pid, target: target, connection: connection, action: .mute)
        case .pauseParticipantVideo(let target): moderate(room, by: pid, target: target, connection: connection, action: .pauseVideo)
        case .removeParticipant(let target): moderate(room, by: pid, target: target, connection: connection, action: .remove)
        case .chat(let text): chat(room, from: pid, text: text, connection: connection)
        case .receiverReport(let reports):
            // Forward each report to the sender it is about (bounded: at most one per member).
            for r in reports.prefix(limits.maxParticipants) {
                guard r.lossPercent.isFinite, let sender = room.participants.values.first(where: { $0.wire.ssrc == r.ssrc }),
                      sender.wire.pid != pid, let c = sender.connection else { continue }
                outboxRef?.send(.lossReport(fromPid: pid, lossPercent: min(100, max(0, r.lossPercent))), to: c)
            }
        case .join, .resume: break
        case .ping: break  // (answered by the router)
        }
    }

    func fail(_ connection: ConnectionID, _ code: SignalErrorCode, _ message: String, close: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        outboxRef?.send(.error(code: code, message: message), to: connection)
        if close { outboxRef?.close(connection) }
    }

    private func join(_ j: ClientMessage.Join, connection: ConnectionID) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard byConnection[connection] == nil else {
            return fail(connection, .alreadyJoined, "This connection has joined already.", close: false)
        }
        guard j.v == signallingProtocolVersion else {
            return fail(connection, .unsupportedVersion, "Protocol version \(j.v) is not supported; use \(signallingProtocolVersion).", close: true)
        }
        let claims: CallTokenClaims
        do {
            claims = try signer.verify(j.callToken, now: scheduler.nowMilliseconds() / 1000)
        } catch {
            let reason = error == .expired ? "The call token has expired." : "The call token is not valid."
            return fail(connection, error == .expired ? .tokenExpired : .tokenInvalid, reason, close: true)
        }
        guard claims.app == appID else {
            return fail(connection, .appIdMismatch, "The call token was issued for another app.", close: true)
        }
        if let s = j.sessionId, s != claims.sid {
            return fail(connection, .tokenSessionMismatch, "The call token is for another session.", close: true)
        }
        if let t = j.idleTimeoutSeconds, t < 0 {
            return fail(connection, .badMessage, "idleTimeoutSeconds must be 0 or more.", close: true)
        }
        let now = scheduler.nowMilliseconds()
        let room = rooms[claims.sid] ?? makeRoom(claims.sid)
        guard room.participants.count < limits.maxParticipants else {
            if room.participants.isEmpty { removeRoom(room) }
            return fail(connection, .roomFull, "The session already has \(limits.maxParticipants) participants.", close: true)
        }
        var name = claims.sub
        do {
            if let u = try store.user(uid: claims.sub) { name = u.name }
            if room.callID == nil {
                room.callID = try store.startCall(sessionId: claims.sid, type: j.sessionType == .video ? "video" : "audio",
                                                  mode: "meet", at: now)
            }
        } catch {
            log.error("store failed on join", ["session": claims.sid, "error": "\(error)"])
            if room.participants.isEmpty { removeRoom(room) }
            return fail(connection, .storage, "The server could not record the join.", close: true)
        }
        if let dn = j.displayName?.trimmingCharacters(in: .whitespacesAndNewlines), !dn.isEmpty { name = String(dn.prefix(100)) }
        let pid = Crypto.randomHex(6)
        var ssrc: UInt32 = 0
        repeat { ssrc = Crypto.randomBytes(4).reduce(0) { $0 << 8 | UInt32($1) } } while ssrc == 0 || usedSSRCs.contains(ssrc)
        usedSSRCs.insert(ssrc)
        let hasModerator = room.participants.values.contains { $0.wire.role == .moderator }
        // A token's role is the operator's word; otherwise the first in is the moderator.
        let role = claims.role.flatMap(ParticipantRole.init(rawValue:)) ?? (hasModerator ? .participant : .moderator)
        let wire = WireParticipant(uid: claims.sub, name: name, pid: pid, ssrc: ssrc, role: role,
                                   isAudioMuted: j.audioMuted, isVideoPaused: j.videoPaused, joinedAt: now)
        var p = Participant(wire: wire, connection: connection, bindToken: Crypto.randomBytes(MediaBinding.tokenLength),
                            resumeToken: Crypto.randomHex(24), key: nextKey, storeRowID: nil,
                            idleTimeoutSeconds: j.idleTimeoutSeconds ?? limits.defaultIdleTimeoutSeconds,
                            chatLimiter: RateLimiter(capacity: limits.chatBurst, perSecond: limits.chatPerSecond), grace: nil)
        nextKey += 1
        if let callID = room.callID {
            // The join is on disk before anyone hears of it, or it is refused.
            do { p.storeRowID = try store.participantJoined(callID: callID, uid: wire.uid, pid: pid, name: name, at: now) } catch {
                log.error("store failed on join", ["session": claims.sid, "error": "\(error)"])
                usedSSRCs.remove(ssrc)
                if room.participants.isEmpty { removeRoom(room) }
                return fail(connection, .storage, "The server could not record the join.", close: true)
            }
        }
        let others = room.roster
        room.participants[pid] = p
        room.order.append(pid)
        byConnection[connection] = (claims.sid, pid)
        byResumeToken[p.resumeToken] = (claims.sid, pid)
        publishRelayTable()
        outboxRef?.send(.joined(joinedPayload(room, p)), to: connection)
        for o in others { if let c = room.participants[o.pid]?.connection { outboxRef?.send(.participantJoined(wire), to: c) } }
        rescheduleIdleTimer(room)
        log.info("participant joined", ["session": claims.sid, "uid": wire.uid, "pid": pid, "participants": "\(room.participants.count)"])
    }

    func joinedPayload(_ room: Room, _ p: Participant) -> ServerMessage.Joined {
        .init(sessionId: room.sessionId, you: p.wire, participants: room.roster, mediaPort: relay.port,
              bindToken: Hex.encode(p.bindToken), resumeToken: p.resumeToken,
              gracePeriodSeconds: Int(limits.gracePeriodSeconds), dominantSpeaker: room.dominant)
    }

    private func makeRoom(_ sid: String) -> Room {
        dispatchPrecondition(condition: .onQueue(queue))
        let r = Room(sessionId: sid, index: nextRoomIndex)
        nextRoomIndex += 1
        rooms[sid] = r
        roomsByIndex[r.index] = sid
        return r
    }

    private func removeRoom(_ room: Room) {
        dispatchPrecondition(condition: .onQueue(queue))
        room.idleTimer?.cancel()
        rooms[room.sessionId] = nil
        roomsByIndex[room.index] = nil
    }

    /// Removes a participant: store, relay, broadcast; ends the call when the room empties.
    func leave(session sid: String, pid: String, reason: LeaveReason, notifySelf: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let room = rooms[sid], let p = room.participants.removeValue(forKey: pid) else { return }
        room.order.removeAll { $0 == pid }
        p.grace?.cancel()
        byResumeToken[p.resumeToken] = nil
        usedSSRCs.remove(p.wire.ssrc)
        if let c = p.connection {
            byConnection[c] = nil
            if notifySelf {
                outboxRef?.send(.left(reason: reason), to: c)
                outboxRef?.close(c)
            }
        }
        let now = scheduler.nowMilliseconds()
        // A leave happens whatever the disk says; a failed write is logged and counted (store metrics).
        if let row = p.storeRowID {
            do { try store.participantLeft(rowID: row, at: now) } catch {
                log.error("store failed on leave", ["session": sid, "pid": pid, "error": "\(error)"])
            }
        }
        publishRelayTable()
        broadcast(room, .participantLeft(p.wire, reason: reason))
        log.info("participant left", ["session": sid, "uid": p.wire.uid, "pid": pid, "reason": reason.rawValue])
        if room.participants.isEmpty {
            if let id = room.callID {
                do { try store.endCall(id: id, at: now) } catch {
                    log.error("store failed to end the call", ["session": sid, "error": "\(error)"])
                }
            }
            removeRoom(room)
            log.info("call ended", ["session": sid])
            return
        }
        if p.wire.role == .moderator && !room.participants.values.contains(where: { $0.wire.role == .moderator }),
           let heir = room.order.first {
            update(room, heir, change: .roleChanged) { $0.role = .moderator }
        }
        if room.dominant == pid { room.dominant = nil; broadcast(room, .dominantSpeaker(pid: nil)) }
        rescheduleIdleTimer(room)
    }

    func broadcast(_ room: Room, _ message: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        for p in room.participants.values { if let c = p.connection { outboxRef?.send(message, to: c) } }
    }

    func publishRelayTable() {
        dispatchPrecondition(condition: .onQueue(queue))
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
        dispatchPrecondition(condition: .onQueue(queue))
        let ids = rooms.values.compactMap(\.callID)
        do { try store.heartbeat(callIDs: ids, at: scheduler.nowMilliseconds()) } catch {
            log.error("store heartbeat failed", ["error": "\(error)"])
        }
    }
}
