import Foundation

/// Translates v5 listener callbacks into v4 `CallsEventsDelegate` calls. Held by the SDK for
/// the session's lifetime; holds the delegate weakly (as v4 did).
@available(*, deprecated, message: "CometChatCalls v4 API")
final class V4DelegateBridge: SessionStatusListener, ParticipantEventListener, MediaEventsListener, ButtonClickListener {
    weak var delegate: (any CallsEventsDelegate)?
    init(delegate: (any CallsEventsDelegate)?) { self.delegate = delegate }

    static func user(_ p: Participant) -> RTCUser {
        RTCUser(uid: p.uid ?? "", name: p.name ?? "", avatar: p.avatar, pid: p.pid, isAudioMuted: p.isAudioMuted ?? false)
    }

    func onSessionLeft() { delegate?.onCallEnded() }
    func onConnectionClosed() { delegate?.onCallEnded() }
    func onSessionTimedOut() { delegate?.onSessionTimeout() }
    func onLeaveSessionButtonClicked() { delegate?.onCallEndButtonPressed() }
    func onParticipantJoined(participant: Participant) { delegate?.onUserJoined(rtcUser: Self.user(participant)) }
    func onParticipantLeft(participant: Participant) { delegate?.onUserLeft(rtcUser: Self.user(participant)) }
    func onParticipantListChanged(participants: [Participant]) { delegate?.onUserListChanged(rtcUsers: participants.map(Self.user)) }
    func onAudioModesChanged(audioModes: [AudioMode]) { delegate?.onAudioModeChanged(mode: audioModes) }
    func onParticipantAudioMuted(participant: Participant) {
        delegate?.onUserMuted(rtcMutedUser: RTCMutedUser(muted: Self.user(participant), isMuted: true))
    }
    func onParticipantAudioUnmuted(participant: Participant) {
        delegate?.onUserMuted(rtcMutedUser: RTCMutedUser(muted: Self.user(participant), isMuted: false))
    }
    func onParticipantStartedRecording(participant: Participant) {
        delegate?.onRecordingToggled(recordingInfo: RTCRecordingInfo(recordingStarted: true, user: Self.user(participant)))
    }
    func onParticipantStoppedRecording(participant: Participant) {
        delegate?.onRecordingToggled(recordingInfo: RTCRecordingInfo(recordingStarted: false, user: Self.user(participant)))
    }
}

@available(*, deprecated, message: "CometChatCalls v4 API: use the v5 forms")
extension CometChatCalls {
    /// The v4 delegate bridge of the current session (the session keeps it alive).
    static var v4Bridge: V4DelegateBridge? { CallSession.shared.kept(V4DelegateBridge.self) }

    /// v4: `generateToken(authToken: token as NSString, sessionID:) { (token: GenerateToken?) in … }`.
    public static func generateToken(authToken: NSString, sessionID: String, onSuccess: @escaping (GenerateToken?) -> Void,
                                     onError: @escaping (CometChatCallException?) -> Void) {
        generateToken(authToken: authToken as String, sessionID: sessionID, onSuccess: { (t: String?) in
            onSuccess(GenerateToken(token: t, sessionId: sessionID))
        }, onError: onError)
    }

    /// v4: joins with a token and v4 settings; the settings' delegate receives v4 events.
    public static func startSession(callToken: String, callSetting: CallSettings, view: (any CallContainer)?,
                                    onSuccess: @escaping (String?) -> Void, onError: @escaping (CometChatCallException?) -> Void) {
        let bridge = V4DelegateBridge(delegate: callSetting.delegate)
        let s = CallSession.shared
        s.keep(bridge)
        s.addSessionStatusListener(bridge)
        s.addParticipantEventListener(bridge)
        s.addMediaEventsListener(bridge)
        s.addButtonClickListener(bridge)
        joinSession(callToken: callToken, callSetting: callSetting.sessionSettings, container: view,
                    onSuccess: { id in onSuccess(id) }, onError: onError)
    }

    /// v4: as above, with the `GenerateToken` that `generateToken(authToken:…)` returned.
    public static func startSession(callToken: GenerateToken, callSetting: CallSettings, view: (any CallContainer)?,
                                    onSuccess: @escaping (String?) -> Void, onError: @escaping (CometChatCallException?) -> Void) {
        startSession(callToken: callToken.token ?? "", callSetting: callSetting, view: view, onSuccess: onSuccess, onError: onError)
    }

    public static func switchCamera() { CallSession.shared.switchCamera() }
    public static func audioMuted(_ muted: Bool) { muted ? CallSession.shared.muteAudio() : CallSession.shared.unmuteAudio() }
    public static func videoPaused(_ paused: Bool) { paused ? CallSession.shared.pauseVideo() : CallSession.shared.resumeVideo() }
    public static func setAudioMode(_ mode: AudioMode) { CallSession.shared.setAudioMode(mode) }
    public static func enterPIPMode() { CallSession.shared.enablePictureInPictureLayout() }
    public static func exitPIPMode() { CallSession.shared.disablePictureInPictureLayout() }
    public static func startRecording() { CallSession.shared.startRecording() }
    public static func stopRecording() { CallSession.shared.stopRecording() }
    public static func endSession() { CallSession.shared.leaveSession() }

    /// v4: turns your video on; the delegate hears `onCallSwitchedToVideo`.
    public static func switchToVideoCall() {
        CallSession.shared.resumeVideo()
        let me = CallSession.shared.localParticipant
        let info = CallSwitchRequestInfo(sessionId: me?.mid ?? "", requestedBy: me.map(V4DelegateBridge.user))
        CometChatCalls.callbackQueue.async { v4Bridge?.delegate?.onCallSwitchedToVideo(callSwitchedInfo: info) }
    }
}
