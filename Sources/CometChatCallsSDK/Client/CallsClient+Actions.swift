import CallsAudio
import CallsCore
import Foundation

// MARK: Requests to the server (CallRoom API; any thread)
extension CallsClient {
    /// Sends one signalling request if in a session (also while reconnecting: the socket
    /// queues it for the resumed connection only if it is already open, else it is dropped and
    /// the state is re-sent by the caller's next action).
    func request(_ message: ClientMessage) {
        state.async {
            guard self.phase == .joined else {
                return self.emit(.error(code: "SESSION_NOT_ACTIVE", message: "Join a session first."))
            }
            self.socket?.send(text: message.json())
        }
    }

    /// Pauses or resumes your video (server state; `videoPaused`/`videoResumed` on confirmation).
    /// The camera stops at once (pausing); the server's confirmation resumes it.
    public func setVideoPaused(_ paused: Bool) {
        if paused { state.async { self.engine?.video?.setPaused(true) } }
        request(.setVideoPaused(paused))
    }
    /// Raises or lowers your hand; the server stamps the time so hands have an order.
    public func setHandRaised(_ raised: Bool) { request(.setHandRaised(raised)) }
    /// Screen share state.
    public func setPresenting(_ presenting: Bool) { request(.setPresenting(presenting)) }
    /// Whether you are recording on your side (participant state, not server recording).
    public func setRecording(_ recording: Bool) { request(.setRecording(recording)) }
    /// Sets which camera you use (`cameraFacingChanged` on confirmation).
    public func setCameraFacing(_ facing: CameraFacing) { request(.setCameraFacing(facing.rawValue)) }
    /// Asks the server for recording, transcription or streaming; refusals arrive as `.error`
    /// events. Transcription runs in `language` (default: the session's `setCaptionLanguage`).
    public func setSessionFeature(_ feature: SessionFeature, enabled: Bool, language: String? = nil) {
        state.async {
            let lang = feature == .transcription && enabled ? (language ?? self.settings.captionLanguage) : nil
            let target = feature == .streaming && enabled ? self.settings.streamingURL : nil
            self.request(.setSessionFeature(feature: feature, enabled: enabled, language: lang, target: target))
        }
    }
    /// Moderators: pin a participant (by pid or uid) for the room; nil unpins.
    public func pin(_ participantID: String?) { request(.pin(pid: participantID.map(resolvePID))) }
    /// Moderators: mute a participant (by pid or uid).
    public func muteParticipant(_ participantID: String) { request(.muteParticipant(pid: resolvePID(participantID))) }
    /// CallRoom: lets a participant you muted unmute themselves again (moderators; rooms whose
    /// rules hold a moderator's mute, `moderatorMute: untilAllowed`).
    public func allowUnmute(_ participantID: String) { request(.allowUnmute(pid: resolvePID(participantID))) }
    /// Moderators: pause a participant's video (by pid or uid).
    public func pauseParticipantVideo(_ participantID: String) { request(.pauseParticipantVideo(pid: resolvePID(participantID))) }
    /// Moderators: remove a participant (by pid or uid).
    public func removeParticipant(_ participantID: String) { request(.removeParticipant(pid: resolvePID(participantID))) }
    /// CallRoom, moderators: locks the room (nobody new may join; those inside stay) or unlocks it.
    public func setRoomLocked(_ locked: Bool) { request(.setRoomLocked(locked)) }
    /// CallRoom, moderators: lets someone waiting in the lobby in (`onLobbyRequest`'s participant pid).
    public func admitFromLobby(_ pid: String) { request(.admitFromLobby(pid: pid)) }
    /// CallRoom, moderators: sends someone waiting in the lobby away (`ERR_LOBBY_DENIED` for them).
    public func denyFromLobby(_ pid: String) { request(.denyFromLobby(pid: pid)) }
    /// CallRoom, moderators: lets a user removed from this session join it again (by uid).
    public func allowRejoin(_ uid: String) { request(.allowRejoin(uid: uid)) }
    /// CallRoom, moderators: bans a user from the room for good (they leave now; `roomBans`
    /// lists them), or lifts the ban — the same as the operator's `/v3/rooms/{sid}/bans`.
    public func setBan(_ uid: String, banned: Bool) { request(.setBan(uid: uid, banned: banned)) }
    /// Sends a chat message to the room.
    public func sendChat(_ text: String) { request(.chat(text: text)) }

    /// A participant id given as a pid, or as a uid (its first device).
    func resolvePID(_ id: String) -> String {
        let roster = participants
        if roster.contains(where: { $0.pid == id }) { return id }
        return roster.first { $0.uid == id }?.pid ?? id
    }

    /// Your own participant as the server last described it.
    public var localParticipant: Participant? {
        published.withLock { p in p.roster.first { $0.pid == p.localPID } }
    }
}

// MARK: Local audio (any thread)
extension CallsClient {
    /// Push-to-talk: when on, the microphone is sent only while `setTalking(true)`.
    public func setPushToTalk(_ enabled: Bool) { state.sync { engine }?.setPushToTalk(enabled) }
    /// Push-to-talk key down / up.
    public func setTalking(_ talking: Bool) { state.sync { engine }?.setTalking(talking) }
    /// Whether your microphone is being sent now (not muted, and talking under push-to-talk).
    public var isTransmitting: Bool { state.sync { engine }?.isTransmitting ?? false }
    /// Playback volume of one participant (pid or uid): 1 as received, 0 silent, up to 4.
    public func setVolume(_ gain: Float, for participantID: String) {
        let pid = resolvePID(participantID)
        guard let ssrc = participants.first(where: { $0.pid == pid })?.ssrc else { return }
        state.sync { engine }?.setVolume(gain, ssrc: ssrc)
    }
}

// MARK: Audio routing (any thread)
extension CallsClient {
    /// The audio modes this machine can route to now, with the endpoint each uses.
    func audioRoutes() -> [(AudioMode, String)] {
        let configured = state.sync { settings.audioOutput }
        return AudioModeRouter.routes(configuredOutput: configured, devices: ALSADeviceList.devices())
    }

    /// Moves playback to `spec` (falling back to null when an ALSA device is missing). The
    /// speaker output (the configured one) is parked, not closed, while another route plays,
    /// and comes back as it was: `speaker` says `spec` is that route.
    func switchOutput(to spec: String, speaker: Bool) throws(CometChatCallException) {
        let frameSamples = AudioFormat.samples(ms: state.sync { settings.audioFrameMs })
        guard let engine = state.sync(execute: { self.engine }) else { return }
        if speaker, let parked = state.sync(execute: { () -> (any AudioOutput)? in defer { parkedSpeaker = nil }; return parkedSpeaker }) {
            engine.devices.swapOutput(parked)?.close()
            return
        }
        do {
            let (output, notice) = try AudioEndpoint(spec: spec).openOutputFallingBack(frameSamples: frameSamples,
                                                                                       periodMs: engine.currentPlaybackPeriodMs)
            let old = engine.devices.swapOutput(output)
            let wasSpeaker = state.sync { parkedSpeaker == nil }
            if wasSpeaker, let old { state.sync { parkedSpeaker = old } } else { old?.close() }
            if let notice { published.withLock { $0.notices.append(notice) } }
        } catch {
            throw CometChatCallException(errorCode: CometChatCallException.audioError, errorDescription: error.description)
        }
    }
}

// MARK: Devices (CallRoom: the settings panel)
extension CallsClient {
    /// Moves capture to `spec` now (an ALSA device that is missing falls back to null, with a
    /// notice); later joins use it too.
    public func setAudioInput(_ spec: String) throws(CometChatCallException) {
        let frameSamples = AudioFormat.samples(ms: state.sync { settings.audioFrameMs })
        do {
            let (input, notice) = try AudioEndpoint(spec: spec).openInputFallingBack(frameSamples: frameSamples)
            guard let engine = state.sync(execute: { self.engine }) else { return input.close() }
            engine.devices.replaceInput(input)
            state.sync { settings.audioInput = spec }
            published.withLock { $0.inUse?.input = notice == nil ? spec : "null" }
            if let notice { published.withLock { $0.notices.append(notice) }; emit(.audioNotice(notice)) }
        } catch {
            throw CometChatCallException(errorCode: CometChatCallException.audioError, errorDescription: error.description)
        }
    }

    /// Makes `spec` the speaker output (the SPEAKER audio mode) and plays to it now.
    public func setAudioOutput(_ spec: String) throws(CometChatCallException) {
        let frameSamples = AudioFormat.samples(ms: state.sync { settings.audioFrameMs })
        do {
            let period = state.sync(execute: { self.engine })?.currentPlaybackPeriodMs
            let (output, notice) = try AudioEndpoint(spec: spec).openOutputFallingBack(frameSamples: frameSamples, periodMs: period)
            guard let engine = state.sync(execute: { self.engine }) else { return output.close() }
            engine.devices.swapOutput(output)?.close()
            state.sync { settings.audioOutput = spec; parkedSpeaker?.close(); parkedSpeaker = nil }
            published.withLock { $0.inUse?.output = notice == nil ? spec : "null" }
            if let notice { published.withLock { $0.notices.append(notice) }; emit(.audioNotice(notice)) }
        } catch {
            throw CometChatCallException(errorCode: CometChatCallException.audioError, errorDescription: error.description)
        }
    }

    /// Plays a short local test tone (440 Hz, not sent to anyone).
    public func playTestTone(seconds: Double = 1) { state.sync { engine }?.playTestTone(seconds: seconds) }

    /// The capture and playback endpoints in use (`alsa:NAME`, `file:PATH`, …).
    /// The audio endpoints in use: what opened (`null` where a device failed and the call went
    /// on without it), else the settings' before a join.
    public var audioEndpoints: (input: String, output: String) {
        published.withLock { $0.inUse } ?? state.sync { (settings.audioInput, settings.audioOutput) }
    }
}

// MARK: Benchmarks (CallRoom diagnostics)
extension CallsClient {
    /// Replaces the playback endpoint with a custom one (benchmarks, QA rigs).
    public func replaceOutputForBenchmark(_ output: any AudioOutput) {
        state.sync { engine }?.devices.replaceOutput(output)
    }

    /// Replaces the capture endpoint with a custom one (benchmarks, QA rigs).
    public func replaceInputForBenchmark(_ input: any AudioInput) {
        state.sync { engine }?.devices.replaceInput(input)
    }
}

/// CallRoom: how this session's media travels.
public enum MediaTransport: String, Sendable, Equatable {
    /// UDP to the server's media relay (the normal path).
    case udp
    /// Over the signalling connection (TLS when the server has it): UDP to the relay is blocked.
    case signalling
}

/// CallRoom: how well a participant's audio is getting through.
public enum ConnectionQuality: String, Sendable, Equatable {
    /// Under 2 % of packets lost recently.
    case good
    /// 2–8 % lost: FEC and concealment still cover it.
    case fair
    /// More than 8 % lost.
    case poor

    init(lossPercent: Double) { self = lossPercent < 2 ? .good : (lossPercent <= 8 ? .fair : .poor) }
}

extension CallsClient {
    /// Connection quality per participant id: for others, the loss of their audio as we
    /// receive it; for you, the worst loss your receivers report (reports of the last 6 s: none
    /// once they have all gone). Updated every 2 s; absent until measured.
    public func connectionQuality() -> [String: ConnectionQuality] { state.sync { qualities() } }

    /// `connectionQuality()` on the state queue.
    func qualities() -> [String: ConnectionQuality] {
        let now = Date()
        let reports = lossReports.values.filter { $0.isFresh(at: now) }.map(\.lossPercent)
        let (loss, me) = (engine?.lossBySender() ?? [:], self.me?.pid)
        var out: [String: ConnectionQuality] = [:]
        for p in participants {
            guard let pid = p.pid else { continue }
            if pid == me {
                if let worst = reports.max() { out[pid] = ConnectionQuality(lossPercent: worst) }
            } else if let s = p.ssrc, let l = loss[s] {
                out[pid] = ConnectionQuality(lossPercent: l)
            }
        }
        return out
    }
}
