import CallsCore
import CallsSecurity
import CallsSignalling
import CallsStore

// MARK: Server members: the recorder, the transcriber, the streamer (members that hold keys)
extension RoomCore {
    /// A session feature run by a member of the room that the server starts: who asked, and the
    /// member once joined. Members are kept out of the roster and the participant count; each
    /// is a relay member (so both relay paths deliver to it), gets every broadcast (roster,
    /// keys) and never sends media.
    struct FeatureRun {
        var feature: SessionFeature
        var id: String
        var by: String
        var startedAt: Int64
        /// Transcription's language.
        var language: String?
        var member: Participant?
        /// Why the member stopped on its own (`memberStopped`), for the moderator's error.
        var failure: String?
    }

    /// The call-token role of each feature's member (the server mints these; REST never does).
    static func memberRole(_ f: SessionFeature) -> String {
        switch f {
        case .recording: return "recorder"
        case .transcription: return "transcriber"
        case .streaming: return "streamer"
        }
    }
    static func feature(ofRole role: String?) -> SessionFeature? { SessionFeature.allCases.first { memberRole($0) == role } }
    static let memberUID = "callroom-server"

    /// The error codes of a feature: already running, not running, failed.
    static func codes(_ f: SessionFeature) -> (already: SignalErrorCode, not: SignalErrorCode, failed: SignalErrorCode) {
        switch f {
        case .recording: return (.alreadyRecording, .notRecording, .recordingFailed)
        case .transcription: return (.alreadyTranscribing, .notTranscribing, .transcriptionFailed)
        case .streaming: return (.alreadyStreaming, .notStreaming, .streamingFailed)
        }
    }

    func setFeature(_ room: Room, _ f: SessionFeature, on: Bool, language: String?, target: String?, by pid: String, connection: ConnectionID) {
        guard requireModerator(room, pid, connection, to: "\(on ? "start" : "stop") \(f.noun)") else {
            return audit(room, by: pid, "\(on ? "start" : "stop") \(f.rawValue)", target: "", result: SignalErrorCode.notModerator.rawValue)
        }
        audit(room, by: pid, "\(on ? "start" : "stop") \(f.rawValue)", target: "")
        let codes = Self.codes(f)
        if !on {
            guard room.runs[f] != nil else { return fail(connection, codes.not, "The session has no \(f.noun) running.", close: false) }
            return endFeature(room, f, reason: f == .recording ? .recordingStopped : .featureStopped)
        }
        guard room.runs[f] == nil else { return fail(connection, codes.already, "The session's \(f.noun) is running already.", close: false) }
        guard room.featureStarts[f, default: 0] < limits.maxFeatureStartsPerCall else {
            return fail(connection, .rateLimited, "This call has started its \(f.noun) \(limits.maxFeatureStartsPerCall) times; no more until it ends.", close: false)
        }
        var lang: String?
        if f == .transcription {
            let l = (language ?? "en-US").trimmingCharacters(in: .whitespaces)
            guard !l.isEmpty, l.count <= 35, l.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                return fail(connection, .badMessage, "language must be a BCP 47 tag such as en-US.", close: false)
            }
            lang = l
        }
        if let target, f != .streaming || target.count > 2000 {
            return fail(connection, .badMessage, "target is streaming's Icecast URL (at most 2000 characters).", close: false)
        }
        let prefix = f == .recording ? "rec_" : f == .transcription ? "tr_" : "st_"
        let id = prefix + randomHex(8)
        room.runs[f] = FeatureRun(feature: f, id: id, by: pid, startedAt: now, language: lang)
        room.featureStarts[f, default: 0] += 1
        let claims = CallTokenClaims(app: appID, sub: Self.memberUID, sid: room.sessionId, iat: now / 1000, exp: now / 1000 + 300,
                                     role: Self.memberRole(f), jti: id, aud: CallTokenClaims.audience(appId: appID))
        effects.append(.startMember(.init(feature: f, session: room.sessionId, id: id, callToken: signer.sign(claims), language: lang, target: target)))
        effects.append(.schedule(.memberStart(session: room.sessionId, feature: f), afterSeconds: 10))
        log(.info, "\(f.rawValue) requested", ["session": room.sessionId, "id": id, "by": pid])
    }

    /// The session's recording was cut by a crash and a moderator is back: it starts again (a
    /// new recording of the same call; the room hears `recording` started), once, within
    /// `recordingResumeSeconds` of the restart.
    func resumeRecordingIfCut(_ room: Room, by pid: String, connection: ConnectionID) {
        guard let until = recordingsToResume.removeValue(forKey: room.sessionId), now <= until, room.runs[.recording] == nil else { return }
        log(.info, "recording resumed after a restart", ["session": room.sessionId, "by": pid])
        setFeature(room, .recording, on: true, language: nil, target: nil, by: pid, connection: connection)
    }

    /// Stops a feature: its member is told to leave (it finishes its files as its connection
    /// closes) and the room hears it stopped.
    func endFeature(_ room: Room, _ f: SessionFeature, reason: LeaveReason, failed: (code: SignalErrorCode, message: String)? = nil) {
        guard let run = room.runs.removeValue(forKey: f) else { return }
        effects.append(.cancel(.memberStart(session: room.sessionId, feature: f)))
        if let m = run.member {
            if let c = m.connection {
                memberConnections[c] = nil
                send(.left(reason: reason), to: c)
                effects.append(.close(c))
            }
            usedSSRCs.remove(m.wire.ssrc)
            patchRelay(room)
        }
        // The room heard it start only once its member joined: a start that failed ends quietly
        // (the one who asked gets the error).
        if run.member != nil { broadcast(room, Self.stateMessage(f, active: false, run: run)) }
        if let failed, let c = room.participants[run.by]?.connection { fail(c, failed.code, failed.message, close: false) }
        log(failed == nil ? .info : .warn, "\(f.rawValue) stopped", ["session": room.sessionId, "id": run.id, "reason": failed?.message ?? reason.rawValue])
    }

    /// Every feature of a room ends (it emptied, the server stops).
    func endFeatures(_ room: Room) {
        for f in Array(room.runs.keys) { endFeature(room, f, reason: f == .recording ? .recordingStopped : .featureStopped) }
    }

    static func stateMessage(_ f: SessionFeature, active: Bool, run: FeatureRun) -> ServerMessage {
        switch f {
        case .recording: return .recording(active: active, by: active ? run.by : nil, rid: run.id)
        case .transcription: return .transcription(active: active, by: active ? run.by : nil, tid: run.id, language: run.language)
        case .streaming: return .streaming(state: active ? .live : .stopped, by: active ? run.by : nil, detail: nil)
        }
    }

    /// A member's `join`: admitted at once (no participant row: it is not a participant of the
    /// call), its keys and the roster in `joined`, its feature's row written.
    func joinMember(_ f: SessionFeature, _ claims: CallTokenClaims, connection: ConnectionID) {
        guard let room = rooms[claims.sid], var run = room.runs[f], run.member == nil, claims.jti == run.id else {
            return fail(connection, Self.codes(f).not, "No \(f.noun) is starting in this session.", close: true)
        }
        let wire = WireParticipant(uid: Self.memberUID, name: f.title, pid: randomHex(6), ssrc: allocateSSRC(), role: .participant,
                                   isAudioMuted: true, isVideoPaused: true, joinedAt: now)
        let p = Participant(wire: wire, connection: connection, bindToken: identities.randomBytes(MediaBinding.tokenLength),
                            resumeToken: ResumeToken.make(secret: randomHex(24), session: claims.sid), key: nextMemberKey(), ref: ParticipantRef(value: 0), idleTimeoutSeconds: 0,
                            chatLimiter: RateLimiter(capacity: 1, perSecond: 1), admitted: true, tokenID: run.id, tokenExpires: claims.exp,
                            roleFromToken: true, mediaKey: identities.randomBytes(SRTPProfile.aeadAES128GCM.masterKeyLength))
        run.member = p
        room.runs[f] = run
        memberConnections[connection] = (claims.sid, f)
        effects.append(.cancel(.memberStart(session: room.sessionId, feature: f)))
        patchRelay(room)
        send(.joined(joinedPayload(room, p)), to: connection)
        if let call = room.call {
            switch f {
            case .recording:
                persist([.recordingStarted(rid: run.id, call: call, sessionId: room.sessionId, at: now)], .background("recording start"))
            case .transcription:
                persist([.transcriptionStarted(tid: run.id, call: call, language: run.language ?? "en-US", at: now)], .background("transcription start"))
            case .streaming:
                break
            }
        }
        broadcast(room, Self.stateMessage(f, active: true, run: run))
        // The recorder's video files start at a keyframe: every sender is asked for one now.
        if f == .recording {
            for s in room.admitted where s.wire.videoSsrc != nil { if let c = s.connection { send(.keyframeRequest(fromPid: p.wire.pid), to: c) } }
        }
        log(.info, "\(f.rawValue) started", ["session": room.sessionId, "id": run.id])
    }

    /// A message from a member's connection (captions, stream status): true when it was one.
    func memberMessage(_ m: ClientMessage, from connection: ConnectionID) -> Bool {
        guard let (sid, f) = memberConnections[connection] else { return false }
        guard let room = rooms[sid], let run = room.runs[f] else { return true }
        switch (f, m) {
        case (.transcription, .caption(var c)):
            guard room.participants[c.pid] != nil else { return true }
            c.tid = run.id
            c.text = DisplayText.name(c.text, limit: 2000) ?? ""
            for p in room.admitted { if let pc = p.connection { send(.caption(c), to: pc) } }
        case (.streaming, .streamStatus(let state, let detail)):
            guard state != .stopped else { return true }
            broadcast(room, .streaming(state: state, by: run.by, detail: detail.map { String($0.prefix(300)) }))
        case (.recording, .requestKeyframe(let target)):
            // (The recorder lost frames of `target`'s video, or has none yet: it asks at most once a second.)
            guard let member = run.member, let t = room.participants[target], t.admitted, t.wire.videoSsrc != nil, let c = t.connection else { return true }
            send(.keyframeRequest(fromPid: member.wire.pid), to: c)
        case (_, .memberStopped(let reason)):
            room.runs[f]?.failure = DisplayText.name(reason, limit: 300)
        default:
            break  // (a member's join is handled before this; anything else it sends is ignored)
        }
        return true
    }

    /// A member's connection closed by itself (it failed: a full disk, a crash).
    func memberDropped(_ connection: ConnectionID) -> Bool {
        guard let (sid, f) = memberConnections.removeValue(forKey: connection) else { return false }
        if let room = rooms[sid], room.runs[f]?.member?.connection == connection {
            room.runs[f]?.member?.connection = nil
            let why = room.runs[f]?.failure.map { ": \($0)." } ?? ": the server's \(Self.memberRole(f)) ended (see the server log)."
            endFeature(room, f, reason: .featureStopped, failed: (Self.codes(f).failed, "The \(f.noun) stopped" + why))
        }
        return true
    }

    /// The server could not start a member (a full quota, no model for the language).
    func memberFailed(session sid: String, feature f: SessionFeature, id: String, code: SignalErrorCode?, reason: String) {
        guard let room = rooms[sid], let run = room.runs[f], run.id == id, run.member == nil else { return }
        endFeature(room, f, reason: .featureStopped, failed: (code ?? Self.codes(f).failed, reason))
    }

    /// A member did not join in time.
    func memberStartTimedOut(_ sid: String, _ f: SessionFeature) {
        guard let room = rooms[sid], let run = room.runs[f], run.member == nil else { return }
        endFeature(room, f, reason: .featureStopped, failed: (Self.codes(f).failed, "The \(f.noun) could not start (see the server log)."))
    }
}

extension SessionFeature {
    /// `recording`, `transcription`, `live stream`: for messages.
    var noun: String { self == .streaming ? "live stream" : rawValue }
}
