import CallsCore
import CallsRelay
import CallsSecurity
import CallsSignalling
import CallsStore
import Foundation

/// Every live room and participant, as pure logic: `handle(_:now:)` takes one input and
/// returns the effects (messages, closes, durable writes, relay patches, timers, log lines)
/// in the order they must happen. No I/O, no clock, no queue: the runner (`RoomRegistry`)
/// does the effects, and tests drive the core with inputs and a time of their choosing.
///
/// The promise about the disk: a join is announced (to the joiner and the room) only after
/// its row committed, a chat message is broadcast only once kept, and the `left` answer
/// follows the committed leave; a failed write is reported (an error to the client, a log
/// line, `callroom_store_write_failures_total`), never swallowed.
///
/// Thread rules: confined to its runner's queue (not thread-safe by itself).
/// Facets: `+State` (participant state, moderation), `+Chat`, `+Presence` (reconnection,
/// idle timeout, dominant speaker), `+Store` (receipts).
final class RoomCore {
    struct Participant {
        var wire: WireParticipant
        /// The signalling connection; nil while held after a drop (see `+Presence`).
        var connection: ConnectionID?
        var bindToken: [UInt8]
        var resumeToken: String
        /// The relay's member key.
        var key: UInt64
        var ref: ParticipantRef
        var idleTimeoutSeconds: Int
        var chatLimiter: RateLimiter
        /// False until the join is on disk: counted for capacity and the moderator role, seen
        /// by nobody, not in the relay.
        var admitted: Bool
        /// The call token it joined with (`jti`): removed tokens stay out, one token one participant.
        var tokenID: String = ""
        var tokenExpires: Int64 = 0
        /// The auth token its call token was minted with (`atid`; nil: the operator's token).
        var authTokenID: String?
        /// The invite grant its call token was redeemed from (`gid`).
        var grantID: String?
        /// The operator set this role in the call token: succession never changes it.
        var roleFromToken = false
        /// A moderator muted it: the relay forwards nothing it sends until it unmutes itself.
        var serverMuted = false
        /// …and, where the room says `untilAllowed`, it may not until a moderator allows it.
        var unmuteHeld = false
        /// Its SRTP master key and epoch (handed to every member; renewed when anyone leaves).
        var mediaKey: [UInt8] = []
        var keyEpoch: UInt8 = 0
        /// Its media travels over its signalling connection (UDP is blocked for it), or through
        /// the WebRTC gateway (a browser: `viaWebRTC` too).
        var mediaOverSignalling = false
        var viaWebRTC = false
        /// When its last `webrtcOffer` came (ms): offers are parsed on this queue, so they are rationed.
        var lastOfferAt: Int64 = .min
        /// The pids whose video it shows (`subscribeVideo`): the relay sends it only theirs.
        var videoSubscriptions: Set<String> = []

        var wireKey: WireMediaKey { WireMediaKey(ssrc: wire.ssrc, epoch: keyEpoch, key: Base64URL.encode(mediaKey), videoSsrc: wire.videoSsrc) }
    }

    final class Room {
        let sessionId: String
        let index: Int
        /// The call in the store; nil until the first join asks for it (again after a failure).
        var call: CallRef?
        var participants: [String: Participant] = [:]  // by pid, admitted or not
        var order: [String] = []  // admitted pids in join order
        var idleArmed = false
        var dominant: String?
        /// Each presenter's shared terminal since its last full frame (`+ScreenShare`): what a
        /// late joiner is sent to see it at once.
        var shares: [String: [ScreenShareFrame]] = [:]
        /// The bytes each presenter's kept frames take (bounded by `maxKeptShareBytes`).
        var shareBytes: [String: Int] = [:]
        /// A moderator locked it: no new joins (those inside stay; resumes still come back).
        var locked = false
        /// Who waits to be let in (`+Lobby`), by their pending pid, in arrival order.
        var lobby: [String: Waiting] = [:]
        var lobbyOrder: [String] = []
        /// Features run by server members (recording, transcription, streaming; `+ServerMembers`).
        var runs: [SessionFeature: FeatureRun] = [:]
        /// Chat messages this call took here (a room that moves to another node counts again there).
        var chatMessages = 0
        /// Joins this call took here, in all and by uid (`RoomLimits.maxJoinsPerUserPerCall`).
        var joins = 0
        var joinsByUid: [String: Int] = [:]
        /// Times each server feature started in this call here (`RoomLimits.maxFeatureStartsPerCall`).
        var featureStarts: [SessionFeature: Int] = [:]
        /// The server's members of the room, in a fixed order.
        var members: [Participant] { SessionFeature.allCases.compactMap { runs[$0]?.member } }
        init(sessionId: String, index: Int) { self.sessionId = sessionId; self.index = index }
        var roster: [WireParticipant] { order.compactMap { participants[$0]?.wire } }
        var admitted: some Sequence<Participant> { order.lazy.compactMap { self.participants[$0] } }
    }

    /// A write whose receipt the core waits for, and what to do then.
    enum PendingWrite {
        case join(session: String, pid: String, startsCall: Bool)
        case chat(session: String, pid: String, uid: String, name: String, text: String, at: Int64, connection: ConnectionID)
        /// Answer `left` (and close) once the leave is on disk; a leave that emptied the room
        /// ends it then (so the ring registry's `call_ended` follows the room's own rows and hooks).
        /// `by`: the moderator's name, when one removed them.
        case leave(session: String, pid: String, notify: ConnectionID?, reason: LeaveReason, by: String?, endsRoom: Bool)
        /// Nobody waits; a failure is logged.
        case background(String)
    }

    let signer: CallTokenSigner
    let appID: String
    let limits: RoomLimits
    let mediaPort: Int
    /// The configured public URL: invite links in `joined` use it (nil: clients use their own address).
    let publicURL: String?
    /// Where clients send media (`mediaPublicAddress`): host, and the port when it differs.
    let mediaHost: String?
    let mediaPublicPort: Int?
    /// Users whose earlier tokens no longer count (shared with the REST router, which revokes).
    let revocations: TokenRevocations
    /// The operator's rules per room (moderation, passcode, allow-list); shared with REST.
    let roomRules: RoomRulesDirectory
    /// Tokens a moderator removed, per session, until they expire (seconds): they stay out even
    /// after the room empties and starts again.
    var removedTokens: [String: [String: Int64]] = [:]
    /// Users a moderator removed, per live session: no token of theirs gets back in until the
    /// room ends (or a moderator or the operator lets them back: `liftRemoval`).
    var sessionBans: [String: Set<String>] = [:]
    /// Wrong passcodes, per session and uid (`+Passcode`).
    var passcodeGuesses: [String: RateLimiter] = [:]
    /// The invites removed users came in with, per session and uid (lifted with them).
    var removedGrants: [String: [String: Set<String>]] = [:]
    /// The `sessionBans` entry of a removed participant's invite grant (a uid has no ':').
    static func grantBanKey(_ gid: String) -> String { "grant:" + gid }
    /// Users a moderator muted where the room holds mutes (`untilAllowed`), per live session:
    /// they come back muted (at the relay too) after leaving, until a moderator allows them.
    var heldMutes: [String: Set<String>] = [:]
    let identities: RoomIdentities
    /// Webhooks for room events (the writer names each trigger); none configured: no rows.
    let outbox: WebhookOutbox

    var rooms: [String: Room] = [:]
    /// Which participant each connection speaks for (admitted or joining).
    var byConnection: [ConnectionID: (session: String, pid: String)] = [:]
    /// The rooms each user is in, with how many of their participants each holds (for
    /// `maxRoomsPerUser`, which a scan of every room's participants answered at every join).
    /// Kept where participants come (`join`) and go (`leave`).
    var roomsOfUser: [String: [String: Int]] = [:]
    /// Connections refused with a close (a join's refusal): what they sent behind it is not
    /// looked at (a client could send joins one behind the other, each checked — passcodes
    /// guessed faster than their answers came). Forgotten when the close arrives; bounded.
    var refusedConnections: Set<ConnectionID> = []
    static let maxRefusedConnections = 100_000
    /// Which lobby entry each waiting connection is (`+Lobby`).
    var lobbyByConnection: [ConnectionID: (session: String, pid: String)] = [:]
    var byResumeToken: [String: (session: String, pid: String)] = [:]
    var roomsByIndex: [Int: String] = [:]
    var pendingWrites: [UInt64: PendingWrite] = [:]
    /// Background writes (the heartbeat every 5 s, a moderator's row, a feature's start) failing
    /// since the last that succeeded, by kind: an outage is logged when it starts and ends, not
    /// at every heartbeat while the disk stays full.
    var failingBackgroundWrites: [String: Int] = [:]
    private var nextRoomIndex = 1
    private var nextKey: UInt64 = 1
    /// Recorders' connections (they are not in `byConnection`: no participant of the roster).
    var memberConnections: [ConnectionID: (session: String, feature: SessionFeature)] = [:]
    /// What `joined.features` announces (the server sets it before it listens).
    var offeredFeatures: Set<SessionFeature> = [.recording]
    /// Whether this server runs a WebRTC gateway (browsers' `webrtcOffer` is answered).
    var webrtcAvailable = false
    func nextMemberKey() -> UInt64 { defer { nextKey += 1 }; return nextKey }
    private var nextRef: UInt64 = 1
    private var nextRequest: UInt64 = 1
    var usedSSRCs: Set<UInt32> = []
    /// The effects of the input being handled, and its time.
    var effects: [RoomEffect] = []
    var now: Int64 = 0
    /// Sessions whose recording a crash cut, until when it starts again on a moderator's return.
    var recordingsToResume: [String: Int64] = [:]
    /// How long after a restart a cut recording may still start again (s).
    static let recordingResumeSeconds: Int64 = 600

    init(signer: CallTokenSigner, appID: String, limits: RoomLimits, mediaPort: Int, publicURL: String? = nil,
         mediaHost: String? = nil, mediaPublicPort: Int? = nil,
         revocations: TokenRevocations = TokenRevocations(), roomRules: RoomRulesDirectory = RoomRulesDirectory(defaultModeration: .firstJoiner),
         identities: RoomIdentities = .random,
         outbox: WebhookOutbox = .none) {
        self.signer = signer
        self.appID = appID
        self.limits = limits
        self.mediaPort = mediaPort
        self.publicURL = publicURL
        self.mediaHost = mediaHost
        self.mediaPublicPort = mediaPublicPort
        self.revocations = revocations
        self.roomRules = roomRules
        self.identities = identities
        self.outbox = outbox
    }

    /// A room event's webhook command, when any webhook is configured.
    func hook(_ kind: RoomHook.Kind, _ call: CallRef, _ sid: String, uid: String? = nil, pid: String? = nil) -> [StoreCommand] {
        outbox.isEmpty ? [] : [.roomHook(RoomHook(kind: kind, call: call, sessionId: sid, uid: uid, pid: pid, at: now, outbox: outbox))]
    }

    var participantCount: Int { rooms.values.reduce(0) { $0 + $1.participants.count } }

    /// Handles one input at `now` (epoch milliseconds); returns what must happen, in order.
    func handle(_ input: RoomInput, now: Int64) -> [RoomEffect] {
        self.now = now
        effects = []
        switch input {
        case .message(let m, let c): received(m, from: c)
        case .connectionClosed(let c):
            refusedConnections.remove(c)
            connectionDropped(c)
        case .timerFired(let t): timerFired(t)
        case .dominantSpeaker(let room, let key): dominantSpeakerChanged(roomIndex: room, key: key)
        case .stored(let receipt): stored(receipt)
        case .resumeRecordings(let sessions):
            for sid in sessions { recordingsToResume[sid] = now + Self.recordingResumeSeconds * 1000 }
        case .memberFailed(let sid, let f, let id, let code, let reason):
            memberFailed(session: sid, feature: f, id: id, code: code, reason: reason)
        case .heartbeat:
            let calls = rooms.values.compactMap(\.call)
            if !calls.isEmpty { persist([.heartbeat(calls, at: now)], .background("heartbeat")) }
        case .shutdown(let reason):
            for room in Array(rooms.values) {
                for pid in Array(room.participants.keys) { leave(session: room.sessionId, pid: pid, reason: reason, notifySelf: true) }
            }
        case .rulesChanged(let sid, let lifted):
            if let lifted { liftRemoval(sid, lifted) }
            guard let room = rooms[sid] else { break }
            // Moderators see the bans as they stand; the banned leave.
            let banned = roomRules.rules(sid)?.bannedUids ?? []
            for m in moderators(room) { send(.roomBans(banned), to: m) }
            if !banned.isEmpty {
                let out = Set(banned)
                for (pid, p) in room.participants where out.contains(p.wire.uid) {
                    log(.info, "participant removed: banned by the operator", ["session": sid, "uid": p.wire.uid, "pid": pid])
                    leave(session: sid, pid: pid, reason: .removed, notifySelf: true)
                }
            }
        case .revoked(let r):
            for room in Array(rooms.values) {
                for (pid, p) in room.participants where r.covers(uid: p.wire.uid, tokenId: p.authTokenID, grantId: p.grantID) {
                    log(.info, "participant removed: tokens revoked", ["session": room.sessionId, "uid": p.wire.uid, "pid": pid])
                    leave(session: room.sessionId, pid: pid, reason: .revoked, notifySelf: true)
                }
            }
        }
        defer { effects = [] }
        return effects
    }

    // MARK: Messages

    private func received(_ message: ClientMessage, from connection: ConnectionID) {
        guard !refusedConnections.contains(connection) else { return }
        if lobbyByConnection[connection] != nil {
            // Waiting: nothing but leaving (which closes and so takes them out of the lobby).
            if case .leave = message { _ = lobbyDropped(connection); return effects.append(.close(connection)) }
            return fail(connection, .notJoined, "You are waiting in the lobby for a moderator to let you in.", close: false)
        }
        if case .join(let j) = message { return join(j, connection: connection) }
        if case .resume(let token) = message { return resume(token: token, connection: connection) }
        if memberMessage(message, from: connection) { return }
        guard let (sid, pid) = byConnection[connection], let room = rooms[sid], let me = room.participants[pid], me.admitted else {
            return fail(connection, .notJoined, "Join a session first.", close: false)
        }
        switch message {
        case .leave: leave(session: sid, pid: pid, reason: .left, notifySelf: true)
        case .setAudioMuted(let v):
            if !v, room.participants[pid]?.unmuteHeld == true {
                return fail(connection, .mutedByModerator, "A moderator muted you; a moderator must allow you to unmute.", close: false)
            }
            update(room, pid, change: v ? .audioMuted : .audioUnmuted) { $0.isAudioMuted = v }
            // Unmuting yourself (everyone sees it) lifts a moderator's mute at the relay.
            if !v, room.participants[pid]?.serverMuted == true {
                room.participants[pid]?.serverMuted = false
                patchRelay(room)
            }
        case .setVideoPaused(let v): update(room, pid, change: v ? .videoPaused : .videoResumed) { $0.isVideoPaused = v }
        case .setHandRaised(let v):
            let t = now
            update(room, pid, change: v ? .handRaised : .handLowered) { $0.raisedHandTimestamp = v ? ($0.raisedHandTimestamp ?? t) : nil }
        case .setPresenting(let v): update(room, pid, change: v ? .presentingStarted : .presentingStopped) { $0.isPresenting = v }
        case .setRecording(let v): update(room, pid, change: v ? .recordingStarted : .recordingStopped) { $0.isRecording = v }
        case .setCameraFacing(let v):
            guard v == "FRONT" || v == "REAR" else { return fail(connection, .badMessage, "cameraFacing is FRONT or REAR.", close: false) }
            update(room, pid, change: .cameraFacingChanged) { $0.cameraFacing = v }
        case .setSessionFeature(let feature, let on, let language, let target):
            // (An unknown feature does not decode: SIGNAL_BAD_MESSAGE.)
            setFeature(room, feature, on: on, language: language, target: target, by: pid, connection: connection)
        case .caption, .streamStatus, .memberStopped:
            fail(connection, .badMessage, "Only the server's own members send that.", close: false)
        case .pin(let target): pin(room, by: pid, target: target, connection: connection)
        case .muteParticipant(let target): moderate(room, by: pid, target: target, connection: connection, action: .mute)
        case .pauseParticipantVideo(let target): moderate(room, by: pid, target: target, connection: connection, action: .pauseVideo)
        case .allowUnmute(let target): moderate(room, by: pid, target: target, connection: connection, action: .allowUnmute)
        case .removeParticipant(let target): moderate(room, by: pid, target: target, connection: connection, action: .remove)
        case .chat(let text): chat(room, from: pid, text: text, connection: connection)
        case .receiverReport(let reports):
            // Forward each report to the sender it is about (bounded: at most one per member).
            for r in reports.prefix(2 * limits.maxParticipants) {
                guard r.lossPercent.isFinite, let sender = room.admitted.first(where: { $0.wire.ssrc == r.ssrc || $0.wire.videoSsrc == r.ssrc }),
                      sender.wire.pid != pid, let c = sender.connection else { continue }
                let loss = min(100, max(0, r.lossPercent))
                if r.ssrc == sender.wire.ssrc {
                    send(.lossReport(fromPid: pid, lossPercent: loss, redundancy: r.red == true,
                                     burst: r.burst.map { min(1000, max(0, $0)) }, redBlocks: r.redBlocks.map { min(64, max(0, $0)) }), to: c)
                } else {
                    let fps = r.framesPerSecond.map { $0.isFinite ? min(120, max(0, $0)) : 0 } ?? 0
                    send(.videoReport(fromPid: pid, lossPercent: loss, framesPerSecond: fps), to: c)
                }
            }
        case .subscribeVideo(let pids): subscribeVideo(room, pid, pids, connection: connection)
        case .screenShare(let frame): screenShare(room, from: pid, frame, connection: connection)
        case .requestKeyframe(let target): requestKeyframe(room, from: pid, of: target)
        case .setRoomLocked(let v): setLocked(room, v, by: pid, connection: connection)
        case .admitFromLobby(let target): admitFromLobby(room, by: pid, waiting: target, admit: true, connection: connection)
        case .denyFromLobby(let target): admitFromLobby(room, by: pid, waiting: target, admit: false, connection: connection)
        case .allowRejoin(let uid): allowRejoin(room, uid, by: pid, connection: connection)
        case .setBan(let uid, let banned): setBan(room, uid, banned: banned, by: pid, connection: connection)
        case .setMediaOverSignalling(let v):
            guard room.participants[pid]?.mediaOverSignalling != v else { return }
            room.participants[pid]?.mediaOverSignalling = v
            patchRelay(room)
            log(.info, v ? "media over signalling (UDP blocked)" : "media back on UDP", ["session": sid, "pid": pid])
        case .webrtcOffer(let sdp): webrtcOffer(room, pid, sdp: sdp, connection: connection)
        case .join, .resume: break
        case .ping, .hello, .initiateCall, .acceptCall, .rejectCall, .endCall: break  // (other families: never routed here)
        }
    }

    // MARK: Effects

    func send(_ message: ServerMessage, to connection: ConnectionID) { effects.append(.send(message, to: connection)) }

    func fail(_ connection: ConnectionID, _ code: SignalErrorCode, _ message: String, close: Bool) {
        effects.append(.send(.error(code: code, message: message), to: connection))
        guard close else { return }
        effects.append(.close(connection))
        if refusedConnections.count >= Self.maxRefusedConnections { refusedConnections.removeAll() }
        refusedConnections.insert(connection)
    }

    func log(_ level: ServerLog.Level, _ message: String, _ fields: [String: String]) { effects.append(.log(level, message, fields)) }

    /// Sends to every admitted participant with a connection.
    /// To every admitted participant, and the room's server members (which follow the roster and keys).
    func broadcast(_ room: Room, _ message: ServerMessage) {
        for p in room.admitted { if let c = p.connection { send(message, to: c) } }
        for m in room.members { if let c = m.connection { send(message, to: c) } }
    }

    func persist(_ commands: [StoreCommand], _ then: PendingWrite) {
        let id = nextRequest
        nextRequest += 1
        pendingWrites[id] = then
        effects.append(.persist(StoreRequest(id: id, commands: commands)))
    }

    /// The relay's tunnel id of a tunnelled member: a browser leg's is its member key with the top
    /// bit set (unique on this node, wherever its WebSocket is — in a cluster that may be another
    /// node, whose connection ids can equal ours); media over signalling's is its WebSocket here.
    func tunnel(of p: Participant) -> UInt64? {
        if p.viaWebRTC { return Self.webrtcTunnel(p.key) }
        return p.mediaOverSignalling ? p.connection?.local : nil
    }

    static func webrtcTunnel(_ key: UInt64) -> UInt64 { key | 1 << 63 }

    /// The room's media membership: its admitted participants, each video going to those
    /// whose subscriptions name it (and to the recorder, while one runs).
    func patchRelay(_ room: Room) {
        let admitted = Array(room.admitted)
        var subscribers: [String: Set<UInt64>] = [:]
        for p in admitted { for s in p.videoSubscriptions { subscribers[s, default: []].insert(p.key) } }
        // The recorder takes everyone's video (each sender's file is a WebM).
        if let recorder = room.runs[.recording]?.member {
            for p in admitted where p.wire.videoSsrc != nil { subscribers[p.wire.pid, default: []].insert(recorder.key) }
        }
        let members = (admitted + room.members).map { p -> RelayTable.Member in
            var m = RelayTable.Member(key: p.key, room: room.index, ssrc: p.wire.ssrc, consent: MediaConsent(ssrc: p.wire.ssrc, token: p.bindToken),
                                      muted: p.serverMuted, tunnel: tunnel(of: p))
            m.videoSSRC = p.wire.videoSsrc ?? 0
            m.videoPaused = p.wire.isVideoPaused
            m.videoSubscribers = subscribers[p.wire.pid] ?? []
            return m
        }
        effects.append(.relay(RelayPatch(room: room.index, members: members)))
    }

    func randomHex(_ n: Int) -> String { Hex.encode(identities.randomBytes(n)) }

    /// A fresh SSRC no one on this server sends with (reserved until released on leave).
    func allocateSSRC() -> UInt32 {
        var ssrc: UInt32 = 0
        repeat { ssrc = identities.randomBytes(4).reduce(0) { $0 << 8 | UInt32($1) } } while ssrc == 0 || usedSSRCs.contains(ssrc)
        usedSSRCs.insert(ssrc)
        return ssrc
    }

    // MARK: Join and leave

    private func join(_ j: ClientMessage.Join, connection: ConnectionID) {
        guard byConnection[connection] == nil, lobbyByConnection[connection] == nil else {
            return fail(connection, .alreadyJoined, "This connection has joined already.", close: false)
        }
        guard j.v == signallingProtocolVersion else {
            return fail(connection, .unsupportedVersion, "Protocol version \(j.v) is not supported; use \(signallingProtocolVersion).", close: true)
        }
        let claims: CallTokenClaims
        do {
            claims = try signer.verify(j.callToken, now: now / 1000, audience: CallTokenClaims.audience(appId: appID))
        } catch {
            let reason = error == .expired ? "The call token has expired."
                : error == .wrongAudience ? "The call token is not for this server." : "The call token is not valid."
            return fail(connection, error == .expired ? .tokenExpired : .tokenInvalid, reason, close: true)
        }
        guard revocations.allows(claims) else {
            return fail(connection, .tokenRevoked, "The call token was revoked (the user was deleted or their tokens revoked).", close: true)
        }
        if let f = Self.feature(ofRole: claims.role) { return joinMember(f, claims, connection: connection) }
        if claims.sid.hasPrefix(CallTokenClaims.ringingSessionPrefix) && claims.party != true {
            return fail(connection, .notCallParty, "This is a ringing call's room: only the call's parties may join it.", close: true)
        }
        let tokenID = claims.jti ?? Hex.encode(Array(j.callToken.utf8.suffix(16)))
        removedTokens[claims.sid] = removedTokens[claims.sid]?.filter { $0.value > now / 1000 }
        if removedTokens[claims.sid]?[tokenID] != nil || sessionBans[claims.sid]?.contains(claims.sub) == true
            || claims.gid.map({ sessionBans[claims.sid]?.contains(Self.grantBanKey($0)) == true }) == true {
            return fail(connection, .removedFromSession,
                        "A moderator removed you from this session; you cannot rejoin it, with any token, until it ends or a moderator lets you back in.",
                        close: true)
        }
        let rules = roomRules.rules(claims.sid)
        if rules?.bannedUids?.contains(claims.sub) == true {
            return fail(connection, .bannedFromRoom, "You are banned from this room.", close: true)
        }
        let tokenRole = claims.role.flatMap(ParticipantRole.init(rawValue:))
        let invited = tokenRole == .moderator || rules?.allowedUids?.contains(claims.sub) == true || claims.gid != nil
        let access = roomRules.access(claims.sid)
        if let allowed = rules?.allowedUids, !allowed.contains(claims.sub), access == .open {
            return fail(connection, .notOnAllowList, "This session admits only the people on its list.", close: true)
        }
        if access == .invited && !invited {
            return fail(connection, .notOnAllowList, "This session admits only the people invited to it.", close: true)
        }
        if rooms[claims.sid]?.locked == true && tokenRole != .moderator {
            return fail(connection, .roomLocked, "A moderator locked this session: nobody new may join.", close: true)
        }
        if let rules, let (code, why) = passcodeRefusal(rules, session: claims.sid, uid: claims.sub, given: j.passcode) {
            return fail(connection, code, why, close: true)
        }
        if rooms[claims.sid]?.participants.values.contains(where: { $0.tokenID == tokenID }) == true
            || rooms[claims.sid]?.lobby.values.contains(where: { $0.tokenID == tokenID }) == true {
            return fail(connection, .tokenInUse, "Someone is in this session with this call token already; each participant needs their own.", close: true)
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
        if rooms[claims.sid] == nil && rooms.count >= limits.maxRooms {
            return fail(connection, .tooManyRooms, "The server has \(limits.maxRooms) rooms open; try later.", close: true)
        }
        if let mine = roomsOfUser[claims.sub], mine[claims.sid] == nil, mine.count >= limits.maxRoomsPerUser {
            return fail(connection, .tooManyRooms, "You are in \(limits.maxRoomsPerUser) rooms already; leave one first.", close: true)
        }
        let room = rooms[claims.sid] ?? makeRoom(claims.sid)
        guard room.participants.count < limits.maxParticipants else {
            return fail(connection, .roomFull, "The session already has \(limits.maxParticipants) participants.", close: true)
        }
        if room.joinsByUid[claims.sub, default: 0] >= limits.maxJoinsPerUserPerCall {
            return fail(connection, .rateLimited, "You have joined this call \(limits.maxJoinsPerUserPerCall) times; no more joins of yours are taken until it ends.", close: true)
        }
        let maxJoins = max(limits.maxJoinsPerCall, 10 * limits.maxParticipants)
        if room.joins >= maxJoins {
            return fail(connection, .roomFull, "This call has taken \(maxJoins) joins; no more are taken until it ends.", close: true)
        }
        // A lobby room: the invited get in; so does the first one in where the first joiner
        // hosts; everyone else waits for a moderator (`+Lobby`).
        let firstIn = room.participants.isEmpty && room.lobby.isEmpty && roomRules.moderation(claims.sid) == .firstJoiner
        if access == .lobby && !invited && !firstIn {
            return wait(in: room, claims: claims, join: j, tokenID: tokenID, connection: connection)
        }
        enter(room, claims: claims, join: j, tokenID: tokenID, connection: connection)
    }

    /// The joiner is in: a participant (admitted once its row commits).
    func enter(_ room: Room, claims: CallTokenClaims, join j: ClientMessage.Join, tokenID: String, connection: ConnectionID) {
        var displayName: String?
        if let dn = j.displayName { displayName = DisplayText.name(dn) }
        let pid = randomHex(6)
        let ssrc = allocateSSRC()
        let hasModerator = room.participants.values.contains { $0.wire.role == .moderator }
        // A token's role is the operator's word; otherwise, where the room says so, the first in moderates.
        let tokenRole = claims.role.flatMap(ParticipantRole.init(rawValue:))
        let firstJoiner = roomRules.moderation(claims.sid) == .firstJoiner
        let role = tokenRole ?? (hasModerator || !firstJoiner ? .participant : .moderator)
        let muteHeld = heldMutes[claims.sid]?.contains(claims.sub) == true
        var wire = WireParticipant(uid: claims.sub, name: displayName ?? claims.sub, pid: pid, ssrc: ssrc, role: role,
                                   isAudioMuted: j.audioMuted || muteHeld, isVideoPaused: j.videoPaused, joinedAt: now)
        if muteHeld { wire.mutedByModerator = true }
        wire.videoSsrc = allocateSSRC()
        let ref = ParticipantRef(value: nextRef)
        nextRef += 1
        let p = Participant(wire: wire, connection: connection, bindToken: identities.randomBytes(MediaBinding.tokenLength),
                            resumeToken: ResumeToken.make(secret: randomHex(24), session: claims.sid), key: nextKey, ref: ref,
                            idleTimeoutSeconds: j.idleTimeoutSeconds ?? limits.defaultIdleTimeoutSeconds,
                            chatLimiter: RateLimiter(capacity: limits.chatBurst, perSecond: limits.chatPerSecond), admitted: false,
                            tokenID: tokenID, tokenExpires: claims.exp, authTokenID: claims.atid, grantID: claims.gid, roleFromToken: tokenRole != nil,
                            serverMuted: muteHeld, unmuteHeld: muteHeld,
                            mediaKey: identities.randomBytes(SRTPProfile.aeadAES128GCM.masterKeyLength))
        nextKey += 1
        room.participants[pid] = p
        roomsOfUser[claims.sub, default: [:]][claims.sid, default: 0] += 1
        room.joins += 1
        room.joinsByUid[claims.sub, default: 0] += 1
        byConnection[connection] = (claims.sid, pid)
        // The join is on disk before anyone hears of it, or it is refused (`+Store`).
        var commands: [StoreCommand] = []
        let startsCall = room.call == nil
        if startsCall {
            let call = CallRef(value: nextRef)
            nextRef += 1
            room.call = call
            commands.append(.startCall(call, sessionId: claims.sid, type: j.sessionType == .video ? "video" : "audio", mode: "meet", at: now))
            commands += hook(.started, call, claims.sid)
        }
        if let call = room.call {
            commands.append(.participantJoined(ref, call: call, uid: claims.sub, pid: pid, displayName: displayName, at: now))
            if role == .moderator { commands.append(.participantModerates(ref)) }
            commands += hook(.joined, call, claims.sid, uid: claims.sub, pid: pid)
        }
        persist(commands, .join(session: claims.sid, pid: pid, startsCall: startsCall))
        cancelIdleTimer(room)  // not alone any more (or not yet)
    }

    /// The join's row committed: the participant enters the room.
    func admit(session sid: String, pid: String, name: String?) {
        guard let room = rooms[sid], var p = room.participants[pid], !p.admitted else { return }
        if let name { p.wire.name = name }
        p.admitted = true
        room.participants[pid] = p
        let others = room.roster
        room.order.append(pid)
        byResumeToken[p.resumeToken] = (sid, pid)
        patchRelay(room)
        if let c = p.connection {
            send(.joined(joinedPayload(room, p)), to: c)
            // A late joiner hears what already runs: the recording, the captions, the stream, shares.
            for f in SessionFeature.allCases { if let run = room.runs[f], run.member != nil { send(Self.stateMessage(f, active: true, run: run), to: c) } }
            for (presenter, frames) in room.shares.sorted(by: { $0.key < $1.key }) { for f in frames { send(.screenShare(pid: presenter, frame: f), to: c) } }
            if p.wire.role == .moderator {
                resumeRecordingIfCut(room, by: pid, connection: c)
                lobbyRequests(room, to: c)
                if let bans = roomRules.rules(sid)?.bannedUids, !bans.isEmpty { send(.roomBans(bans), to: c) }
            }
        }
        for c in others.compactMap({ room.participants[$0.pid]?.connection }) + room.members.compactMap(\.connection) {
            send(.mediaKeys([p.wireKey]), to: c)  // before the roster change: its first packets verify
            send(.participantJoined(p.wire), to: c)
        }
        rescheduleIdleTimer(room)
        log(.info, "participant joined", ["session": sid, "uid": p.wire.uid, "pid": pid, "participants": "\(room.order.count)"])
    }

    /// A member left: every remaining sender gets a new key (the next epoch) and every member
    /// the new set, so what is said from now on is unreadable with anything the leaver held.
    func rotateMediaKeys(_ room: Room) {
        guard !room.participants.isEmpty else { return }
        for pid in Array(room.participants.keys) {
            room.participants[pid]?.mediaKey = identities.randomBytes(SRTPProfile.aeadAES128GCM.masterKeyLength)
            room.participants[pid]?.keyEpoch &+= 1
        }
        broadcast(room, .mediaKeys(room.admitted.map(\.wireKey)))
    }

    func joinedPayload(_ room: Room, _ p: Participant) -> ServerMessage.Joined {
        .init(sessionId: room.sessionId, you: p.wire, participants: room.roster, mediaPort: mediaPublicPort ?? mediaPort,
              bindToken: Hex.encode(p.bindToken), resumeToken: p.resumeToken,
              gracePeriodSeconds: Int(limits.gracePeriodSeconds), dominantSpeaker: room.dominant,
              inviteLink: publicURL.map { InvitePage.link(publicURL: $0, sessionId: room.sessionId) }, mediaHost: mediaHost,
              srtpProfile: .aeadAES128GCM, mediaKeys: [p.wireKey] + room.admitted.filter { $0.key != p.key }.map(\.wireKey),
              features: SessionFeature.allCases.filter(offeredFeatures.contains), locked: room.locked ? true : nil)
    }

    private func makeRoom(_ sid: String) -> Room {
        let r = Room(sessionId: sid, index: nextRoomIndex)
        nextRoomIndex += 1
        rooms[sid] = r
        roomsByIndex[r.index] = sid
        return r
    }

    /// Takes a participant out of its room at once (relay, peers); the store hears of it and
    /// `left` follows the commit (with `by`, the name of the moderator who removed them). An
    /// empty room ends its call and goes.
    func leave(session sid: String, pid: String, reason: LeaveReason, by: String? = nil, notifySelf: Bool) {
        guard let room = rooms[sid], let p = room.participants.removeValue(forKey: pid) else { return }
        let uid = p.wire.uid
        if let n = roomsOfUser[uid]?[sid] { roomsOfUser[uid]?[sid] = n > 1 ? n - 1 : nil }
        if roomsOfUser[uid]?.isEmpty == true { roomsOfUser[uid] = nil }
        room.order.removeAll { $0 == pid }
        room.shares[pid] = nil
        room.shareBytes[pid] = nil
        effects.append(.cancel(.grace(session: sid, pid: pid)))
        byResumeToken[p.resumeToken] = nil
        usedSSRCs.remove(p.wire.ssrc)
        if let v = p.wire.videoSsrc { usedSSRCs.remove(v) }
        if let c = p.connection { byConnection[c] = nil }
        var commands: [StoreCommand] = [.participantLeft(p.ref, at: now)]
        if let call = room.call { commands += hook(.left, call, sid, uid: p.wire.uid, pid: pid) }
        let empties = room.participants.isEmpty
        if empties { endFeatures(room) }  // nobody left to record, transcribe or stream
        if empties, let call = room.call { commands += hook(.ended, call, sid) + [.endCall(call, at: now)] }
        persist(commands, .leave(session: sid, pid: pid, notify: notifySelf ? p.connection : nil, reason: reason, by: by,
                                   endsRoom: empties && p.admitted))
        if p.admitted {
            patchRelay(room)
            broadcast(room, .participantLeft(p.wire, reason: reason))
            rotateMediaKeys(room)
            log(.info, "participant left", ["session": sid, "uid": p.wire.uid, "pid": pid, "reason": reason.rawValue])
        }
        if empties {
            cancelIdleTimer(room)
            // The session is over: its removals and held mutes with it, and nobody is left to
            // let anyone in from the lobby.
            sessionBans[sid] = nil
            removedGrants[sid] = nil
            heldMutes[sid] = nil
            // Removed tokens stay out until they expire, this session's and others' alike; the
            // expired ones go here (a room ending is rare beside joins, common beside removals).
            let seconds = now / 1000
            removedTokens = removedTokens.compactMapValues { tokens in
                let live = tokens.filter { $0.value > seconds }
                return live.isEmpty ? nil : live
            }
            closeLobby(room, reason: "Everyone left the session; join again later.")
            rooms[sid] = nil
            roomsByIndex[room.index] = nil
            if p.admitted { log(.info, "call ended", ["session": sid]) }
            return
        }
        // Succession, only where the first joiner moderates, and never over a role the operator set.
        if p.wire.role == .moderator && roomRules.moderation(sid) == .firstJoiner
            && !room.participants.values.contains(where: { $0.wire.role == .moderator }) {
            if let heir = room.order.first(where: { room.participants[$0]?.roleFromToken == false }) {
                update(room, heir, change: .roleChanged) { $0.role = .moderator }
            } else if let joining = room.participants.filter({ !$0.value.roleFromToken }).keys.min(), let ref = room.participants[joining]?.ref {
                room.participants[joining]?.wire.role = .moderator  // announced with its join
                persist([.participantModerates(ref)], .background("moderator"))
            }
        }
        if room.dominant == pid { room.dominant = nil; broadcast(room, .dominantSpeaker(pid: nil)) }
        rescheduleIdleTimer(room)
    }
}
