import CallsCore
import CallsSecurity

// MARK: Recording: the server's recorder is a member of the room that holds keys
extension RoomCore {
    /// The call-token role of the server's recorder (the server mints these; REST never does).
    static let recorderRole = "recorder"
    static let recorderUID = "callroom-recorder"

    /// A room's recording: who asked, and its recorder once joined. The recorder is kept out
    /// of the roster and the participant count; it is a relay member (so both relay paths
    /// deliver to it), gets every broadcast (roster, keys) and never sends media.
    struct Recording {
        var rid: String
        var by: String
        var startedAt: Int64
        var recorder: Participant?
    }

    func startRecording(_ room: Room, by pid: String, connection: ConnectionID) {
        guard room.participants[pid]?.wire.role == .moderator else {
            return fail(connection, .notModerator, "Only the session's moderators may start a recording.", close: false)
        }
        guard room.recording == nil else {
            return fail(connection, .alreadyRecording, "The session is being recorded already.", close: false)
        }
        let rid = "rec_" + randomHex(8)
        room.recording = Recording(rid: rid, by: pid, startedAt: now)
        let claims = CallTokenClaims(app: appID, sub: Self.recorderUID, sid: room.sessionId, iat: now / 1000, exp: now / 1000 + 300,
                                     role: Self.recorderRole, jti: rid, aud: CallTokenClaims.audience(appId: appID))
        effects.append(.startRecorder(session: room.sessionId, rid: rid, callToken: signer.sign(claims)))
        effects.append(.schedule(.recorderStart(session: room.sessionId), afterSeconds: 10))
        log(.info, "recording requested", ["session": room.sessionId, "rid": rid, "by": pid])
    }

    func stopRecording(_ room: Room, by pid: String, connection: ConnectionID) {
        guard room.participants[pid]?.wire.role == .moderator else {
            return fail(connection, .notModerator, "Only the session's moderators may stop a recording.", close: false)
        }
        guard room.recording != nil else { return fail(connection, .notRecording, "The session is not being recorded.", close: false) }
        endRecording(room, reason: .recordingStopped)
    }

    /// Stops the recording: its recorder is told to leave (it finishes its files as its
    /// connection closes) and the room hears it stopped.
    func endRecording(_ room: Room, reason: LeaveReason, failed: String? = nil) {
        guard let rec = room.recording else { return }
        room.recording = nil
        effects.append(.cancel(.recorderStart(session: room.sessionId)))
        if let r = rec.recorder {
            if let c = r.connection {
                recorderConnections[c] = nil
                send(.left(reason: reason), to: c)
                effects.append(.close(c))
            }
            usedSSRCs.remove(r.wire.ssrc)
            patchRelay(room)
        }
        broadcast(room, .recording(active: false, by: nil, rid: rec.rid))
        if let failed, let c = room.participants[rec.by]?.connection { fail(c, .recordingFailed, failed, close: false) }
        log(failed == nil ? .info : .warn, "recording stopped", ["session": room.sessionId, "rid": rec.rid, "reason": failed ?? reason.rawValue])
    }

    /// The recorder's `join`: admitted at once (no participant row: it is not a participant of
    /// the call), its keys and the roster in `joined`, its recording's row written.
    func joinRecorder(_ claims: CallTokenClaims, connection: ConnectionID) {
        guard let room = rooms[claims.sid], var rec = room.recording, rec.recorder == nil, claims.jti == rec.rid else {
            return fail(connection, .notRecording, "No recording is starting in this session.", close: true)
        }
        let wire = WireParticipant(uid: Self.recorderUID, name: "Recorder", pid: randomHex(6), ssrc: allocateSSRC(), role: .participant,
                                   isAudioMuted: true, isVideoPaused: true, joinedAt: now)
        let p = Participant(wire: wire, connection: connection, bindToken: identities.randomBytes(MediaBinding.tokenLength),
                            resumeToken: randomHex(24), key: nextRecorderKey(), ref: ParticipantRef(value: 0), idleTimeoutSeconds: 0,
                            chatLimiter: RateLimiter(capacity: 1, perSecond: 1), admitted: true, tokenID: rec.rid, tokenExpires: claims.exp,
                            roleFromToken: true, mediaKey: identities.randomBytes(SRTPProfile.aeadAES128GCM.masterKeyLength))
        rec.recorder = p
        room.recording = rec
        recorderConnections[connection] = claims.sid
        effects.append(.cancel(.recorderStart(session: room.sessionId)))
        patchRelay(room)
        send(.joined(joinedPayload(room, p)), to: connection)
        if let call = room.call {
            persist([.recordingStarted(rid: rec.rid, call: call, sessionId: room.sessionId, at: now)], .background("recording start"))
        }
        broadcast(room, .recording(active: true, by: rec.by, rid: rec.rid))
        log(.info, "recording started", ["session": room.sessionId, "rid": rec.rid])
    }

    /// The recorder's connection closed by itself (it failed: a full disk, a crash).
    func recorderDropped(_ connection: ConnectionID) -> Bool {
        guard let sid = recorderConnections.removeValue(forKey: connection) else { return false }
        if let room = rooms[sid], room.recording?.recorder?.connection == connection {
            room.recording?.recorder?.connection = nil
            endRecording(room, reason: .recordingStopped, failed: "The recording stopped: the recorder ended (see the server log).")
        }
        return true
    }

    /// The recorder did not join in time.
    func recorderStartTimedOut(_ sid: String) {
        guard let room = rooms[sid], let rec = room.recording, rec.recorder == nil else { return }
        endRecording(room, reason: .recordingStopped, failed: "The recording could not start (see the server log).")
    }
}
