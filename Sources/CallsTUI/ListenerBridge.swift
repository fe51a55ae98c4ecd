import CometChatCallsSDK

/// Registers for all five listener protocols (and CallRoom's own) on a `CallSession` and turns every callback into
/// a `CallEvent` for `handler`. This is how the terminal front end and the headless client
/// observe a session: through the documented listener protocols, not a side channel.
/// Thread rules: callbacks (and so `handler`) run on the SDK callback queue.
public final class ListenerBridge: SessionStatusListener, MediaEventsListener, ParticipantEventListener,
    LayoutListener, ButtonClickListener, CallRoomListener {
    private let handler: (CallEvent) -> Void

    public init(handler: @escaping (CallEvent) -> Void) { self.handler = handler }

    /// Adds this bridge as every kind of listener (the session holds it weakly: keep it alive).
    public func register(on session: CallSession = .shared) {
        session.addSessionStatusListener(self)
        session.addMediaEventsListener(self)
        session.addParticipantEventListener(self)
        session.addLayoutListener(self)
        session.addButtonClickListener(self)
        session.addCallRoomListener(self)
    }

    // MARK: CallRoomListener
    public func onError(code: String, message: String) { handler(.error(code: code, message: message)) }
    public func onChatMessage(_ message: ChatEntry) { handler(.chatMessage(message)) }
    public func onAudioNotice(_ notice: String) { handler(.audioNotice(notice)) }
    public func onConnectionQualityChanged(participant: Participant, quality: ConnectionQuality) {
        handler(.connectionQualityChanged(participant: participant, quality: quality))
    }

    // MARK: SessionStatusListener
    public func onSessionJoined() { handler(.sessionJoined) }
    public func onSessionLeft() { handler(.sessionLeft) }
    public func onSessionTimedOut() { handler(.sessionTimedOut) }
    public func onConnectionLost() { handler(.connectionLost) }
    public func onConnectionRestored() { handler(.connectionRestored) }
    public func onConnectionClosed() { handler(.connectionClosed) }
    // MARK: MediaEventsListener
    public func onAudioMuted() { handler(.audioMuted) }
    public func onAudioUnMuted() { handler(.audioUnMuted) }
    public func onVideoPaused() { handler(.videoPaused) }
    public func onVideoResumed() { handler(.videoResumed) }
    public func onRecordingStarted() { handler(.recordingStarted) }
    public func onRecordingStopped() { handler(.recordingStopped) }
    public func onStreamingStarted() { handler(.streamingStarted) }
    public func onStreamingStopped() { handler(.streamingStopped) }
    public func onAudioModeChanged(audioMode: AudioMode) { handler(.audioModeChanged(audioMode: audioMode)) }
    public func onAudioModesChanged(audioModes: [AudioMode]) { handler(.audioModesChanged(audioModes: audioModes)) }
    public func onCameraFacingChanged(cameraFacing: CameraFacing) { handler(.cameraFacingChanged(cameraFacing: cameraFacing)) }
    // MARK: ParticipantEventListener
    public func onParticipantJoined(participant: Participant) { handler(.participantJoined(participant: participant)) }
    public func onParticipantLeft(participant: Participant) { handler(.participantLeft(participant: participant)) }
    public func onParticipantListChanged(participants: [Participant]) { handler(.participantListChanged(participants: participants)) }
    public func onParticipantAudioMuted(participant: Participant) { handler(.participantAudioMuted(participant: participant)) }
    public func onParticipantAudioUnmuted(participant: Participant) { handler(.participantAudioUnmuted(participant: participant)) }
    public func onParticipantVideoPaused(participant: Participant) { handler(.participantVideoPaused(participant: participant)) }
    public func onParticipantVideoResumed(participant: Participant) { handler(.participantVideoResumed(participant: participant)) }
    public func onParticipantHandRaised(participant: Participant) { handler(.participantHandRaised(participant: participant)) }
    public func onParticipantHandLowered(participant: Participant) { handler(.participantHandLowered(participant: participant)) }
    public func onParticipantStartedScreenShare(participant: Participant) { handler(.participantStartedScreenShare(participant: participant)) }
    public func onParticipantStoppedScreenShare(participant: Participant) { handler(.participantStoppedScreenShare(participant: participant)) }
    public func onParticipantStartedRecording(participant: Participant) { handler(.participantStartedRecording(participant: participant)) }
    public func onParticipantStoppedRecording(participant: Participant) { handler(.participantStoppedRecording(participant: participant)) }
    public func onDominantSpeakerChanged(participant: Participant) { handler(.dominantSpeakerChanged(participant: participant)) }
    // MARK: LayoutListener
    public func onCallLayoutChanged(layoutType: LayoutType) { handler(.callLayoutChanged(layoutType: layoutType)) }
    public func onParticipantListVisible() { handler(.participantListVisible) }
    public func onParticipantListHidden() { handler(.participantListHidden) }
    public func onPictureInPictureLayoutEnabled() { handler(.pictureInPictureLayoutEnabled) }
    public func onPictureInPictureLayoutDisabled() { handler(.pictureInPictureLayoutDisabled) }
    // MARK: ButtonClickListener
    public func onLeaveSessionButtonClicked() { handler(.leaveSessionButtonClicked) }
    public func onToggleAudioButtonClicked() { handler(.toggleAudioButtonClicked) }
    public func onToggleVideoButtonClicked() { handler(.toggleVideoButtonClicked) }
    public func onSwitchCameraButtonClicked() { handler(.switchCameraButtonClicked) }
    public func onRaiseHandButtonClicked() { handler(.raiseHandButtonClicked) }
    public func onShareInviteButtonClicked() { handler(.shareInviteButtonClicked) }
    public func onChangeLayoutButtonClicked() { handler(.changeLayoutButtonClicked) }
    public func onParticipantListButtonClicked() { handler(.participantListButtonClicked) }
    public func onChatButtonClicked() { handler(.chatButtonClicked) }
    public func onRecordingToggleButtonClicked() { handler(.recordingToggleButtonClicked) }
}
