import CallsAudio
import Foundation

/// State of the built-in call surface that is local to this device (not the server's):
/// layout, picture-in-picture, panels, chat badge and audio route.
struct SurfaceState {
    var layout: LayoutType = .tile
    var pictureInPicture = false
    var participantListVisible = false
    var settingsPanelVisible = false
    var chatUnreadCount = 0
    var audioMode: AudioMode = .speaker
    var audioModes: [AudioMode] = [.speaker]
}

// MARK: Actions on CallSession.shared (any thread; results arrive as listener callbacks)
extension CallSession {
    /// Pauses your video; `onVideoPaused` when the server confirms.
    public func pauseVideo() { currentClient?.setVideoPaused(true) ?? notActive() }
    /// Resumes your video; `onVideoResumed` when the server confirms.
    public func resumeVideo() { currentClient?.setVideoPaused(false) ?? notActive() }

    /// Switches between the front and rear camera; `onCameraFacingChanged` when confirmed.
    public func switchCamera() {
        guard let c = currentClient else { return notActive() }
        let now = c.localParticipant?.cameraFacing ?? .FRONT
        c.setCameraFacing(now == .FRONT ? .REAR : .FRONT)
    }

    /// Raises your hand; `onParticipantHandRaised` (you included) when confirmed.
    public func raiseHand() { currentClient?.setHandRaised(true) ?? notActive() }
    /// Lowers your hand; `onParticipantHandLowered` when confirmed.
    public func lowerHand() { currentClient?.setHandRaised(false) ?? notActive() }

    /// Asks the server to record. Until a server offers recording, an `.error` event
    /// (`ERR_FEATURE_UNAVAILABLE`) says so — never a silent no-op.
    public func startRecording() { currentClient?.setSessionFeature(.recording, enabled: true) ?? notActive() }
    public func stopRecording() { currentClient?.setSessionFeature(.recording, enabled: false) ?? notActive() }
    /// Transcribes in the session's `setCaptionLanguage` (moderators; `ERR_LANGUAGE_UNAVAILABLE`
    /// names the languages the server has models for).
    public func startTranscription() { currentClient?.setSessionFeature(.transcription, enabled: true) ?? notActive() }
    public func stopTranscription() { currentClient?.setSessionFeature(.transcription, enabled: false) ?? notActive() }
    public func startStreaming() { currentClient?.setSessionFeature(.streaming, enabled: true) ?? notActive() }
    public func stopStreaming() { currentClient?.setSessionFeature(.streaming, enabled: false) ?? notActive() }

    /// Pins a participant (pid or uid) for the whole room — moderators only; others get an
    /// `ERR_NOT_MODERATOR` error event. `type` is accepted for compatibility and ignored.
    public func pinParticipant(participantId: String, type: String = "human") { currentClient?.pin(participantId) ?? notActive() }
    /// Removes the room's pin (moderators).
    public func unpinParticipant() { currentClient?.pin(nil) ?? notActive() }
    /// Mutes a participant (pid or uid) — moderators only.
    public func muteParticipant(participantId: String) { currentClient?.muteParticipant(participantId) ?? notActive() }
    /// CallRoom: lets a participant you muted unmute themselves (pid or uid) — moderators only;
    /// needed where the room holds a moderator's mute (`moderatorMute: untilAllowed`).
    public func allowParticipantToUnmute(participantId: String) { currentClient?.allowUnmute(participantId) ?? notActive() }
    /// CallRoom, moderators: lock the room (nobody new may join; `onRoomLockChanged`).
    public func lockRoom() { currentClient?.setRoomLocked(true) ?? notActive() }
    /// CallRoom, moderators: unlock it.
    public func unlockRoom() { currentClient?.setRoomLocked(false) ?? notActive() }
    /// CallRoom, moderators: let someone waiting in the lobby in (`onLobbyRequest`'s participant pid).
    public func admitFromLobby(participantId: String) { currentClient?.admitFromLobby(participantId) ?? notActive() }
    /// CallRoom, moderators: send someone waiting in the lobby away.
    public func denyFromLobby(participantId: String) { currentClient?.denyFromLobby(participantId) ?? notActive() }
    /// CallRoom, moderators: let a user removed from this session join it again (their uid).
    public func allowRejoin(uid: String) { currentClient?.allowRejoin(uid) ?? notActive() }
    /// CallRoom, moderators: ban a user from the room for good, or lift it (`roomBans` lists them).
    public func setBan(uid: String, banned: Bool) { currentClient?.setBan(uid, banned: banned) ?? notActive() }
    /// CallRoom (moderators): the uids banned from the room for good.
    public var roomBans: [String] { currentClient?.roomBans ?? [] }
    /// Pauses a participant's video (pid or uid) — moderators only.
    public func pauseParticipantVideo(participantId: String) { currentClient?.pauseParticipantVideo(participantId) ?? notActive() }

    /// Sets the layout: `"TILE"`, `"SPOTLIGHT"` or `"SIDEBAR"`; `onCallLayoutChanged`.
    public func setLayout(_ layout: String) {
        guard let l = LayoutType(rawValue: layout.lowercased()) else {
            return report("INVALID_LAYOUT", "'\(layout)' is not a layout; use TILE, SPOTLIGHT or SIDEBAR.")
        }
        setLayout(l)
    }

    /// Enum form of `setLayout(_:)`.
    public func setLayout(_ layout: LayoutType) {
        guard isCallSessionActive() else { return notActive() }
        let changed = surface { s -> Bool in defer { s.layout = layout }; return s.layout != layout }
        if changed { deliver(.callLayoutChanged(layoutType: layout)) }
    }

    /// Sets the audio route: `"SPEAKER"`, `"EARPIECE"`, `"BLUETOOTH"` or `"HEADPHONES"`;
    /// `onAudioModeChanged`. Modes this machine lacks are refused with an error event.
    public func setAudioMode(_ mode: String) {
        guard let m = AudioMode(rawValue: mode.lowercased()) else {
            return report("INVALID_AUDIO_MODE", "'\(mode)' is not an audio mode; use SPEAKER, EARPIECE, BLUETOOTH or HEADPHONES.")
        }
        setAudioMode(m)
    }

    /// Enum form of `setAudioMode(_:)`. Picking the current mode changes nothing and fires no
    /// event; the speaker output (your configured `setAudioOutput`) is kept open while another
    /// mode plays, so switching back continues it (a `file:` output is never rewritten).
    public func setAudioMode(_ mode: AudioMode) {
        guard let c = currentClient, c.isSessionActive else { return notActive() }
        if surface({ $0.audioMode }) == mode { return }
        let routes = c.audioRoutes()
        guard let spec = routes.first(where: { $0.0 == mode })?.1 else {
            return report("AUDIO_MODE_UNAVAILABLE", "No \(mode.value.lowercased()) device on this machine (available: \(routes.map { $0.0.value }.joined(separator: ", "))).")
        }
        do { try c.switchOutput(to: spec, speaker: mode == .speaker) } catch { return report(error.errorCode, error.errorDescription) }
        surface { $0.audioMode = mode }
        deliver(.audioModeChanged(audioMode: mode))
    }

    /// Switches to the compact picture-in-picture layout; `onPictureInPictureLayoutEnabled`.
    public func enablePictureInPictureLayout() { setPictureInPicture(true) }
    /// Leaves picture-in-picture; `onPictureInPictureLayoutDisabled`.
    public func disablePictureInPictureLayout() { setPictureInPicture(false) }

    private func setPictureInPicture(_ on: Bool) {
        guard isCallSessionActive() else { return notActive() }
        let changed = surface { s -> Bool in defer { s.pictureInPicture = on }; return s.pictureInPicture != on }
        if changed { deliver(on ? .pictureInPictureLayoutEnabled : .pictureInPictureLayoutDisabled) }
    }

    /// Sets the unread badge on the built-in chat button.
    public func setChatButtonUnreadCount(_ count: Int) { surface { $0.chatUnreadCount = max(0, count) } }

    /// Hides the built-in settings panel if it is showing.
    public func hideSettingsPanel() { surface { $0.settingsPanelVisible = false } }

    // MARK: CallRoom: the built-in surface's state, for front ends that render it

    public var layout: LayoutType { surface { $0.layout } }
    public var isPictureInPictureLayoutEnabled: Bool { surface { $0.pictureInPicture } }
    public var isParticipantListVisible: Bool { surface { $0.participantListVisible } }
    public var isSettingsPanelVisible: Bool { surface { $0.settingsPanelVisible } }
    public var chatButtonUnreadCount: Int { surface { $0.chatUnreadCount } }
    public var audioMode: AudioMode { surface { $0.audioMode } }
    public var availableAudioModes: [AudioMode] { surface { $0.audioModes } }
    /// Your own participant, as the server last described it.
    public var localParticipant: Participant? { currentClient?.localParticipant }
    /// The session's chat so far.
    public var chatMessages: [ChatEntry] { currentClient?.chatMessages ?? [] }

    /// Push-to-talk: when on, your microphone is sent only while `setTalking(true)`.
    public func setPushToTalk(_ enabled: Bool) { currentClient?.setPushToTalk(enabled) ?? notActive() }
    /// Push-to-talk key down (true) / up (false).
    public func setTalking(_ talking: Bool) { currentClient?.setTalking(talking) }
    /// Whether your microphone is being sent now.
    public var isTransmitting: Bool { currentClient?.isTransmitting ?? false }
    /// Playback volume of one participant (pid or uid): 1 as received, 0 silent, up to 4.
    public func setParticipantVolume(participantId: String, volume: Float) { currentClient?.setVolume(volume, for: participantId) ?? notActive() }

    /// CallRoom: moves your microphone to `spec` (`alsa:NAME`, `file:PATH.wav`, `tone:HZ`,
    /// `null`) during the call; a refusal comes as an error event. Any thread.
    public func setAudioInputDevice(_ spec: String) {
        guard let c = currentClient, c.isSessionActive else { return notActive() }
        do { try c.setAudioInput(spec) } catch { report(error.errorCode, error.errorDescription) }
    }

    /// CallRoom: makes `spec` your speaker (`alsa:NAME`, `file:PATH.wav`, `null`) and switches
    /// the SPEAKER mode to it; a refusal comes as an error event. Any thread.
    public func setAudioOutputDevice(_ spec: String) {
        guard let c = currentClient, c.isSessionActive else { return notActive() }
        do { try c.setAudioOutput(spec) } catch { return report(error.errorCode, error.errorDescription) }
        let changed = surface { s -> Bool in defer { s.audioMode = .speaker }; return s.audioMode != .speaker }
        if changed { deliver(.audioModeChanged(audioMode: .speaker)) }
    }

    /// CallRoom: plays a one-second local test tone through your speaker (nobody else hears it).
    public func playTestTone() { currentClient?.playTestTone() ?? notActive() }

    /// CallRoom: the microphone and speaker endpoints in use now.
    public var audioEndpoints: (input: String, output: String)? { currentClient?.audioEndpoints }

    /// CallRoom: the ALSA capture devices present (`name — description`), for settings views.
    public var captureDevices: [String] {
        ALSADeviceList.devices().filter(\.canCapture).map { $0.description.isEmpty ? $0.name : "\($0.name) — \($0.description)" }
    }

    /// CallRoom: the ALSA playback devices present (`name — description`), for settings views.
    public var playbackDevices: [String] {
        ALSADeviceList.devices().filter(\.canPlay).map { $0.description.isEmpty ? $0.name : "\($0.name) — \($0.description)" }
    }

    /// Connection quality per participant id (updated every 2 s from receiver reports).
    public func connectionQuality() -> [String: ConnectionQuality] { currentClient?.connectionQuality() ?? [:] }

    /// Sends a chat message to the room; it comes back as a `.chatMessage` event.
    public func sendChatMessage(_ text: String) { currentClient?.sendChat(text) ?? notActive() }
    /// Moderators: removes a participant (pid or uid) from the session.
    public func removeParticipant(participantId: String) { currentClient?.removeParticipant(participantId) ?? notActive() }
    /// Screen share state of your terminal (frames come with screen share itself).
    public func setPresenting(_ presenting: Bool) { currentClient?.setPresenting(presenting) ?? notActive() }

    /// Shows or hides the participant list; `onParticipantListVisible`/`Hidden`.
    public func setParticipantListVisible(_ visible: Bool) {
        let changed = surface { s -> Bool in defer { s.participantListVisible = visible }; return s.participantListVisible != visible }
        if changed { deliver(visible ? .participantListVisible : .participantListHidden) }
    }

    /// Shows the built-in settings panel (audio mode and devices).
    public func showSettingsPanel() { surface { $0.settingsPanelVisible = true } }

    // MARK: Helpers

    private func notActive() { report("SESSION_NOT_ACTIVE", "Join a session first.") }

    func report(_ code: String, _ message: String) { deliver(.error(code: code, message: message)) }

    /// Delivers a locally generated event on the callback queue.
    func deliver(_ e: CallEvent) {
        CometChatCalls.callbackQueue.async { self.dispatch(e) }
    }

    /// Resets the surface for a new session from its settings, and refreshes the audio modes.
    func beginSurface(_ settings: SessionSettingsBuilder.SessionSettings) {
        surface { s in
            s = SurfaceState()
            s.layout = settings.layout
            s.pictureInPicture = settings.enableIOSPictureInPicture
            s.audioMode = .speaker
        }
    }

    /// Announces the audio modes available now (after joining, and when devices change).
    func refreshAudioModes() {
        guard let c = currentClient else { return }
        let modes = c.audioRoutes().map(\.0)
        let changed = surface { s -> Bool in defer { s.audioModes = modes }; return s.audioModes != modes }
        if changed || !audioModesAnnounced.exchange(true, ordering: .relaxed) { deliver(.audioModesChanged(audioModes: modes)) }
    }
}
