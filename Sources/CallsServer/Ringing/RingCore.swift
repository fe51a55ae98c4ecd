import CallsCore
import CallsStore
import Foundation

/// Presence and ringing calls, as pure logic (like `RoomCore`): `handle(_:now:)` takes one
/// input and returns effects. It knows each user's online devices (connections that said
/// `hello`) and every call not yet over; the runner (`CallRegistry`) reads users and groups
/// from the store for it, performs the effects, and feeds back store receipts and timers.
///
/// ```
///  initiateCall ─▶ [initiated] ──accept──▶ [ongoing] ──endCall / room empties──▶ ended
///                      │ reject ─▶ rejected     busy ─▶ busy     cancel (initiator) ─▶ cancelled
///                      ├ the caller offline for callerGoneSeconds ─▶ cancelled (callerOffline)
///                      └ timeout ─▶ unanswered
/// ```
/// Every transition is written before anyone hears of it: the store receipt releases the
/// messages and the `CallTrigger` event. The first accept wins: other devices of that user
/// are told `cancelled` (`answeredElsewhere`); a second accept, or one after a cancel or the
/// timeout, is `ERR_CALL_NOT_RINGING`. In a group every online member rings; the call is
/// ongoing from the first accept, members who have not answered may still accept until the
/// timeout or until the initiator ends it.
///
/// Thread rules: confined to its runner's queue.
final class RingCore {
    final class Ring {
        var call: WireCall
        /// The device each accepted member answered on.
        var answeredOn: [String: ConnectionID] = [:]
        /// The device the initiator called from.
        var initiatorDevice: ConnectionID?
        init(_ call: WireCall) { self.call = call }

        func outcome(_ uid: String) -> CallMemberOutcome? { call.members.first { $0.uid == uid }?.outcome }
        func set(_ uid: String, _ outcome: CallMemberOutcome) {
            if let i = call.members.firstIndex(where: { $0.uid == uid }) { call.members[i].outcome = outcome }
        }
        var ringing: [String] { call.members.filter { $0.outcome == .ringing }.map(\.uid) }
        var accepted: [String] { call.members.filter { $0.outcome == .accepted }.map(\.uid) }
        /// The initiator and every member who accepted.
        var participants: [String] { [call.initiator.id] + accepted }
    }

    /// What a store receipt releases.
    enum PendingWrite {
        case started(sessionId: String)
        case accepted(sessionId: String, uid: String, device: ConnectionID, first: Bool)
        case declined(sessionId: String, uid: String, device: ConnectionID, status: CallStatus, callOver: Bool)
        case cancelled(sessionId: String, reason: CallCancelReason)
        case unanswered(sessionId: String, callOver: Bool, members: [String])
        case ended(sessionId: String, by: String?, callOver: Bool)
    }

    let defaultTimeoutSeconds: Int
    /// How long a ringing call waits for its caller to come back online (the chat SDK
    /// reconnects within 0.5 + 1 + 2 + 4 s) before it stops ringing (`callerOffline`).
    static let callerGoneSeconds = 10.0
    let identities: RoomIdentities
    /// Who hears of each transition (written with it).
    let outbox: WebhookOutbox
    /// Push services configured: ringing pushes the members' phones through them (none: no pushes).
    let pushPlatforms: [PushPlatform]
    private(set) var calls: [String: Ring] = [:]
    /// How often calls may ring (per caller, callee, group).
    var limits = RingLimits()
    private(set) var devices: [String: Set<ConnectionID>] = [:]
    /// Online devices one user has at once: each ring of theirs is a message to every one, and a
    /// connection that said `hello` stays for as long as it is kept alive. Another is refused
    /// until one goes (a dropped one goes when the server notices: the SDK's retries get in then).
    static let maxDevicesPerUser = 20
    private var users: [ConnectionID: RingUser] = [:]
    private var pending: [UInt64: PendingWrite] = [:]
    private var nextRequest: UInt64 = 1
    private var effects: [RingEffect] = []
    private var now: Int64 = 0

    init(defaultTimeoutSeconds: Int = 45, identities: RoomIdentities = .random, outbox: WebhookOutbox = .none,
         pushPlatforms: [PushPlatform] = [], limits: RingLimits = RingLimits()) {
        self.defaultTimeoutSeconds = defaultTimeoutSeconds
        self.limits = limits
        self.identities = identities
        self.outbox = outbox
        self.pushPlatforms = pushPlatforms
    }

    /// Pushes to the phones of `uids` (an incoming call, or its end), for the transition's request.
    private func pushes(_ action: PushEvent.Action, _ reason: PushEvent.Reason?, to uids: [String], _ call: WireCall) -> [StoreCommand] {
        guard !pushPlatforms.isEmpty, !uids.isEmpty else { return [] }
        return [.push(uids.map {
            PushEvent(action: action, reason: reason, sessionId: call.sessionId, uid: $0, caller: call.initiator, callType: call.type,
                      receiverType: call.receiverType, guid: call.receiverType == .group ? call.receiver.id : nil, at: now,
                      platforms: pushPlatforms)
        })]
    }

    /// The webhook deliveries of a transition, for its store request.
    private func hooks(_ trigger: CallTrigger, _ call: WireCall) -> [StoreCommand] {
        let rows = outbox.rows(trigger, call, at: now) { "dlv_" + Hex.encode(identities.randomBytes(10)) }
        return rows.isEmpty ? [] : [.outbox(rows)]
    }

    var pendingWrites: Int { pending.count }

    /// The user a connection said hello as.
    func user(of connection: ConnectionID) -> RingUser? { users[connection] }

    func handle(_ input: RingInput, now: Int64) -> [RingEffect] {
        self.now = now
        effects = []
        switch input {
        case .hello(let c, let user): hello(c, user)
        case let .initiate(c, receiverId, receiverType, type, timeout, receiver):
            initiate(c, receiverId: receiverId, receiverType: receiverType, type: type, timeout: timeout, receiver: receiver)
        case .message(let m, let c): received(m, from: c)
        case .storeUnavailable(let c, let read):
            fail(c, .storage, "The server could not read its database for \(read.rawValue); try again.")
        case .connectionClosed(let c):
            if let u = users.removeValue(forKey: c) {
                devices[u.uid]?.remove(c)
                if devices[u.uid]?.isEmpty == true {
                    devices[u.uid] = nil
                    // Their last device: a call they are ringing out waits a while for them.
                    for r in calls.values where r.call.initiator.id == u.uid && r.call.status == .initiated {
                        effects.append(.scheduleCallerCheck(sessionId: r.call.sessionId, afterSeconds: Self.callerGoneSeconds))
                    }
                }
            }
        case .timedOut(let sid): timedOut(sid)
        case .callerGone(let sid):
            guard let r = calls[sid], r.call.status == .initiated, devices[r.call.initiator.id] == nil else { break }
            log(.info, "the caller went offline: the call stops ringing", ["session": sid, "caller": r.call.initiator.id])
            cancel(r, reason: .callerOffline)
        case .stored(let receipt): stored(receipt)
        case .roomEnded(let sid):
            guard let ring = calls[sid], ring.call.status == .ongoing else { break }
            // The room already wrote the end; the webhooks are what is left to record.
            ring.call.status = .ended
            ring.call.endedAt = now
            finish(ring, status: .ended, trigger: .callEnded, persist: hooks(.callEnded, ring.call))
        case .restore(let list): restore(list)
        case .revoked(let r):
            guard let uid = r.uid else { break }  // (an invite opens no presence)
            for d in devices[uid] ?? [] where r.covers(uid: uid, tokenId: users[d]?.tokenId) {
                users[d] = nil
                devices[uid]?.remove(d)
                effects.append(.close(d))
            }
            if devices[uid]?.isEmpty == true { devices[uid] = nil }
        }
        defer { effects = [] }
        return effects
    }

    // MARK: Effects

    private func send(_ m: ServerMessage, to c: ConnectionID) { effects.append(.send(m, to: c)) }

    private func fail(_ c: ConnectionID, _ code: SignalErrorCode, _ message: String) {
        send(.error(code: code, message: message), to: c)
    }

    /// Sends to every online device of `uid` (but `except`).
    private func tell(_ uid: String, _ m: ServerMessage, except: ConnectionID? = nil) {
        for d in devices[uid] ?? [] where d != except { send(m, to: d) }
    }

    private func persist(_ commands: [StoreCommand], _ then: PendingWrite) {
        let id = nextRequest
        nextRequest += 1
        pending[id] = then
        effects.append(.persist(StoreRequest(id: id, commands: commands)))
    }

    private func callMessage(_ event: CallEventKind, _ ring: Ring, _ reason: CallCancelReason? = nil) -> ServerMessage {
        .call(event: event, call: ring.call, reason: reason)
    }

    // MARK: Presence

    private func hello(_ c: ConnectionID, _ user: RingUser?) {
        guard let user else { return fail(c, .authTokenInvalid, "The auth token is not valid.") }
        if let old = users[c], old.uid != user.uid {
            devices[old.uid]?.remove(c)
        }
        if let mine = devices[user.uid], !mine.contains(c), mine.count >= Self.maxDevicesPerUser {
            users[c] = nil
            fail(c, .tooManyDevices, "You are online on \(Self.maxDevicesPerUser) devices already: close one first.")
            effects.append(.close(c))
            return
        }
        users[c] = user
        devices[user.uid, default: []].insert(c)
        send(.welcome(uid: user.uid, name: user.name), to: c)
        // What is ringing for (or from) this user now.
        for ring in calls.values.sorted(by: { $0.call.initiatedAt < $1.call.initiatedAt }) {
            if ring.call.status.isFinal { continue }
            if ring.outcome(user.uid) == .ringing { send(callMessage(.incoming, ring), to: c) }
            if ring.call.initiator.id == user.uid && ring.call.status == .initiated { send(callMessage(.initiated, ring), to: c) }
        }
    }

    /// Whether `uid` is on a call now: calling someone, or in an accepted call.
    private func isBusy(_ uid: String) -> Bool {
        calls.values.contains { r in
            !r.call.status.isFinal && (r.call.initiator.id == uid || r.outcome(uid) == .accepted)
        }
    }

    // MARK: Initiate

    private func initiate(_ c: ConnectionID, receiverId: String, receiverType: CallReceiverType, type: CallMediaType, timeout: Int?,
                          receiver: RingReceiver) {
        guard let me = users[c] else { return fail(c, .notOnline, "Say hello (log in) before calling.") }
        let seconds = timeout ?? defaultTimeoutSeconds
        guard (5...300).contains(seconds) else { return fail(c, .badMessage, "timeoutSeconds is 5…300.") }
        guard !isBusy(me.uid) else { return fail(c, .alreadyInCall, "You are in another call; end it first.") }
        let party: CallPartyWire
        var members: [CallMemberWire]
        switch receiverType {
        case .user:
            guard receiverId != me.uid else { return fail(c, .callSelf, "You cannot call yourself.") }
            guard let u = receiver.user else { return fail(c, .receiverNotFound, "No user '\(receiverId.prefix(100))'.") }
            party = CallPartyWire(id: u.uid, name: u.name)
            members = [CallMemberWire(uid: u.uid, name: u.name, outcome: isBusy(u.uid) ? .busy : .ringing)]
        case .group:
            guard let g = receiver.group else { return fail(c, .receiverNotFound, "No group '\(receiverId.prefix(100))'.") }
            guard g.members.contains(where: { $0.uid == me.uid }) else {
                return fail(c, .notGroupMember, "You are not a member of '\(g.guid.prefix(100))'.")
            }
            party = CallPartyWire(id: g.guid, name: g.name)
            // Each member once, however the list came.
            var seen: Set<String> = [me.uid]
            members = g.members.filter { seen.insert($0.uid).inserted }.map { CallMemberWire(uid: $0.uid, name: $0.name, outcome: isBusy($0.uid) ? .busy : .ringing) }
            guard !members.isEmpty else { return fail(c, .receiverNotFound, "The group has nobody else to call.") }
        }
        if let refusal = limits.admit(caller: me.uid, receiver: party.id, isGroup: receiverType == .group, now: UInt64(max(0, now)) &* 1_000_000) {
            log(.info, "a call refused: ringing limit", ["caller": me.uid, "receiver": party.id])
            return fail(c, .rateLimited, refusal)
        }
        let busy = !members.contains { $0.outcome == .ringing }
        let call = WireCall(sessionId: "call_" + Hex.encode(identities.randomBytes(8)), initiator: CallPartyWire(id: me.uid, name: me.name),
                            receiverType: receiverType, receiver: party, type: type, status: busy ? .busy : .initiated,
                            members: members, timeoutSeconds: seconds, initiatedAt: now, endedAt: busy ? now : nil)
        let ring = Ring(call)
        ring.initiatorDevice = c
        calls[call.sessionId] = ring
        persist([.ringStarted(call)] + hooks(.callInitiated, call) + (busy ? hooks(.callBusy, call) : [])
                + pushes(.initiated, nil, to: ring.ringing, call), .started(sessionId: call.sessionId))
    }

    // MARK: Answers

    private func received(_ m: ClientMessage, from c: ConnectionID) {
        guard let me = users[c] else { return fail(c, .notOnline, "Say hello (log in) first.") }
        switch m {
        case .acceptCall(let sid): accept(sid, me, c)
        case .rejectCall(let sid, let status): reject(sid, status, me, c)
        case .endCall(let sid): end(sid, me, c)
        default: break
        }
    }

    private func ring(_ sid: String, _ c: ConnectionID) -> Ring? {
        guard let r = calls[sid] else {
            fail(c, .callNotFound, "No call '\(sid.prefix(100))' (over, or never was).")
            return nil
        }
        return r
    }

    private func accept(_ sid: String, _ me: RingUser, _ c: ConnectionID) {
        guard let r = ring(sid, c) else { return }
        guard let outcome = r.outcome(me.uid) else { return fail(c, .notAllowed, "Only someone the call rings may accept it.") }
        guard outcome == .ringing, !r.call.status.isFinal else {
            return fail(c, .callNotRinging, "The call is no longer ringing for you (\(outcome == .ringing ? r.call.status.rawValue : outcome.rawValue)).")
        }
        let first = r.call.status == .initiated
        r.set(me.uid, .accepted)  // at once: a second accept (another device) is refused
        r.answeredOn[me.uid] = c
        // The user's phones stop ringing (the call was answered on this device).
        var commands: [StoreCommand] = [.ringMember(sessionId: sid, uid: me.uid, outcome: .accepted, at: now)]
            + pushes(.ended, .answered, to: [me.uid], r.call)
        if first {
            r.call.status = .ongoing
            r.call.startedAt = now
            commands.append(.ringStatus(sessionId: sid, status: .ongoing, startedAt: now, endedAt: nil))
            commands += hooks(.callStarted, r.call)
            if r.call.receiverType == .user { effects.append(.cancel(sessionId: sid)) }
        }
        persist(commands, .accepted(sessionId: sid, uid: me.uid, device: c, first: first))
    }

    private func reject(_ sid: String, _ status: CallStatus, _ me: RingUser, _ c: ConnectionID) {
        guard let r = ring(sid, c) else { return }
        switch status {
        case .cancelled:
            guard r.call.initiator.id == me.uid else { return fail(c, .notAllowed, "Only the caller may cancel the call.") }
            guard r.call.status == .initiated else { return fail(c, .callNotRinging, "The call is \(r.call.status.rawValue), not ringing.") }
            cancel(r, reason: .cancelledByInitiator)
        case .rejected, .busy:
            guard let outcome = r.outcome(me.uid) else { return fail(c, .notAllowed, "Only someone the call rings may reject it.") }
            guard outcome == .ringing, !r.call.status.isFinal else {
                return fail(c, .callNotRinging, "The call is no longer ringing for you.")
            }
            r.set(me.uid, status == .busy ? .busy : .rejected)
            // The call is over when nobody rings any more and nobody accepted.
            let over = r.ringing.isEmpty && r.accepted.isEmpty
            var commands: [StoreCommand] = [.ringMember(sessionId: sid, uid: me.uid, outcome: status == .busy ? .busy : .rejected, at: now)]
                + pushes(.ended, .declined, to: [me.uid], r.call)
            if over {
                // A group ends `rejected` unless every member said busy.
                let allBusy = r.call.members.allSatisfy { $0.outcome == .busy }
                r.call.status = r.call.receiverType == .user ? status : (allBusy ? .busy : .rejected)
                r.call.endedAt = now
                effects.append(.cancel(sessionId: sid))
                commands.append(.ringStatus(sessionId: sid, status: r.call.status, startedAt: nil, endedAt: now))
                commands += hooks(r.call.status == .busy ? .callBusy : .callRejected, r.call)
            }
            persist(commands, .declined(sessionId: sid, uid: me.uid, device: c, status: status, callOver: over))
        default:
            fail(c, .badMessage, "rejectCall status is rejected, busy or cancelled.")
        }
    }

    /// A ringing call stops ringing for good: the caller gave up, or went offline.
    private func cancel(_ r: Ring, reason: CallCancelReason) {
        let sid = r.call.sessionId
        let members = r.ringing
        for m in members { r.set(m, .cancelled) }
        r.call.status = .cancelled
        r.call.endedAt = now
        effects.append(.cancel(sessionId: sid))
        persist([.ringStatus(sessionId: sid, status: .cancelled, startedAt: nil, endedAt: now)]
                + members.map { .ringMember(sessionId: sid, uid: $0, outcome: .cancelled, at: now) } + hooks(.callCancelled, r.call)
                + pushes(.ended, .cancelled, to: members, r.call),
                .cancelled(sessionId: sid, reason: reason))
    }

    private func end(_ sid: String, _ me: RingUser, _ c: ConnectionID) {
        guard let r = ring(sid, c) else { return }
        guard r.participants.contains(me.uid) else { return fail(c, .notAllowed, "Only the call's participants may end it.") }
        guard r.call.status == .ongoing else { return fail(c, .callNotRinging, "The call is \(r.call.status.rawValue); only an ongoing call ends.") }
        // In a group a member leaves; the initiator (or the last member) ends it for everyone.
        let over = r.call.receiverType == .user || me.uid == r.call.initiator.id || r.accepted == [me.uid]
        if over {
            r.call.status = .ended
            r.call.endedAt = now
            effects.append(.cancel(sessionId: sid))
            let ringing = r.ringing
            for m in ringing { r.set(m, .cancelled) }
            persist([.ringStatus(sessionId: sid, status: .ended, startedAt: nil, endedAt: now)]
                    + ringing.map { .ringMember(sessionId: sid, uid: $0, outcome: .cancelled, at: now) } + hooks(.callEnded, r.call)
                    + pushes(.ended, .ended, to: ringing, r.call),
                    .ended(sessionId: sid, by: me.uid, callOver: true))
        } else {
            r.set(me.uid, .left)
            persist([.ringMember(sessionId: sid, uid: me.uid, outcome: .left, at: now)], .ended(sessionId: sid, by: me.uid, callOver: false))
        }
    }

    private func timedOut(_ sid: String) {
        guard let r = calls[sid], !r.call.status.isFinal else { return }
        let members = r.ringing
        for m in members { r.set(m, .unanswered) }
        let over = r.call.status == .initiated
        var commands: [StoreCommand] = members.map { .ringMember(sessionId: sid, uid: $0, outcome: .unanswered, at: now) }
            + pushes(.ended, .unanswered, to: members, r.call)
        if over {
            r.call.status = .unanswered
            r.call.endedAt = now
            commands.append(.ringStatus(sessionId: sid, status: .unanswered, startedAt: nil, endedAt: now))
            commands += hooks(.callUnanswered, r.call)
        }
        guard !commands.isEmpty else { return }
        persist(commands, .unanswered(sessionId: sid, callOver: over, members: members))
    }

    private func restore(_ list: [WireCall]) {
        // (Rings this node holds already stay as they are: a node taking over ringing restores what it lacks.)
        for call in list where calls[call.sessionId] == nil {
            let ring = Ring(call)
            calls[call.sessionId] = ring
            let remaining = Double(call.initiatedAt + Int64(call.timeoutSeconds) * 1000 - now) / 1000
            if remaining <= 0 {
                timedOut(call.sessionId)
            } else {
                effects.append(.schedule(sessionId: call.sessionId, afterSeconds: remaining))
                log(.info, "ringing call restored", ["session": call.sessionId, "remaining_s": "\(Int(remaining.rounded(.up)))"])
            }
        }
    }

    private func log(_ level: ServerLog.Level, _ message: String, _ fields: [String: String]) {
        effects.append(.log(level, message, fields))
    }

    // MARK: Receipts: announce what is on disk

    private func stored(_ receipt: StoreReceipt) {
        guard let p = pending.removeValue(forKey: receipt.id) else { return }
        if case .failure(let why) = receipt.result {
            log(.error, "store failed on a ringing call", ["error": why.description])
            if case .started(let sid) = p, let r = calls.removeValue(forKey: sid), let d = r.initiatorDevice {
                fail(d, .storage, why.diskFull ? "The server's disk is full: it could not record the call." : "The server could not record the call.")
            }
            // Later transitions stay as decided in memory (they happen whatever the disk says).
            if case .started = p { return }
        }
        switch p {
        case .started(let sid):
            guard let r = calls[sid] else { return }
            if let d = r.initiatorDevice { send(callMessage(.initiated, r), to: d) }
            effects.append(.event(.callInitiated, r.call))
            if r.call.status == .busy {
                tell(r.call.initiator.id, callMessage(.busy, r))
                effects.append(.event(.callBusy, r.call))
                calls[sid] = nil
                return
            }
            for m in r.ringing { tell(m, callMessage(.incoming, r)) }
            effects.append(.schedule(sessionId: sid, afterSeconds: Double(r.call.timeoutSeconds)))
        case let .accepted(sid, uid, device, first):
            guard let r = calls[sid] else { return }
            let m = callMessage(.accepted, r)
            send(m, to: device)
            tell(uid, callMessage(.cancelled, r, .answeredElsewhere), except: device)
            tell(r.call.initiator.id, m)
            for other in r.accepted where other != uid { if let d = r.answeredOn[other] { send(m, to: d) } }
            if first { effects.append(.event(.callStarted, r.call)) }
        case let .declined(sid, uid, device, status, over):
            guard let r = calls[sid] else { return }
            let kind: CallEventKind = status == .busy ? .busy : .rejected
            send(callMessage(kind, r), to: device)
            tell(uid, callMessage(.cancelled, r, .rejectedElsewhere), except: device)
            if over {
                tell(r.call.initiator.id, callMessage(r.call.status == .busy ? .busy : .rejected, r))
                effects.append(.event(r.call.status == .busy ? .callBusy : .callRejected, r.call))
                calls[sid] = nil
            }
        case let .cancelled(sid, reason):
            guard let r = calls.removeValue(forKey: sid) else { return }
            for m in r.call.members where m.outcome == .cancelled { tell(m.uid, callMessage(.cancelled, r, reason)) }
            tell(r.call.initiator.id, callMessage(.cancelled, r, reason))
            effects.append(.event(.callCancelled, r.call))
        case let .unanswered(sid, over, members):
            guard let r = calls[sid] else { return }
            for m in members { tell(m, callMessage(.unanswered, r)) }
            if over {
                tell(r.call.initiator.id, callMessage(.unanswered, r))
                effects.append(.event(.callUnanswered, r.call))
                calls[sid] = nil
            }
        case let .ended(sid, by, over):
            guard let r = calls[sid] else { return }
            if over {
                finish(r, status: .ended, trigger: .callEnded, persist: nil)
            } else if let by {
                tell(by, callMessage(.ended, r))
            }
        }
    }

    /// Tells every participant (and members still ringing) the call is over, and forgets it.
    /// `persist`: commands to write first (nil: already written).
    private func finish(_ r: Ring, status: CallStatus, trigger: CallTrigger, persist commands: [StoreCommand]?) {
        if r.call.endedAt == nil { r.call.endedAt = now }
        r.call.status = status
        if let commands, !commands.isEmpty { persist(commands, .ended(sessionId: r.call.sessionId, by: nil, callOver: true)); return }
        effects.append(.cancel(sessionId: r.call.sessionId))
        let m = callMessage(.ended, r)
        for uid in Set(r.participants) { tell(uid, m) }
        // Members still ringing when it ended stop ringing.
        for member in r.call.members where member.outcome == .cancelled { tell(member.uid, callMessage(.cancelled, r, .cancelledByInitiator)) }
        effects.append(.event(trigger, r.call))
        calls[r.call.sessionId] = nil
    }
}
