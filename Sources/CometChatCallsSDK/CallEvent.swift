/// Every listener callback as a typed value: what `CallSession.events` streams, what the
/// headless client prints and what the terminal event log shows. A misspelled case does not
/// compile, unlike an optional protocol method. A value; any thread.
public enum CallEvent: Sendable, Equatable {
    // MARK: SessionStatusListener
    case sessionJoined
    case sessionLeft
    case sessionTimedOut
    case connectionLost
    case connectionRestored
    case connectionClosed
    // MARK: MediaEventsListener
    case audioMuted
    case audioUnMuted
    case videoPaused
    case videoResumed
    case recordingStarted
    case recordingStopped
    case streamingStarted
    case streamingStopped
    case audioModeChanged(audioMode: AudioMode)
    case audioModesChanged(audioModes: [AudioMode])
    case cameraFacingChanged(cameraFacing: CameraFacing)
    // MARK: ParticipantEventListener
    case participantJoined(participant: Participant)
    case participantLeft(participant: Participant)
    case participantListChanged(participants: [Participant])
    case participantAudioMuted(participant: Participant)
    case participantAudioUnmuted(participant: Participant)
    case participantVideoPaused(participant: Participant)
    case participantVideoResumed(participant: Participant)
    case participantHandRaised(participant: Participant)
    case participantHandLowered(participant: Participant)
    case participantStartedScreenShare(participant: Participant)
    case participantStoppedScreenShare(participant: Participant)
    case participantStartedRecording(participant: Participant)
    case participantStoppedRecording(participant: Participant)
    case dominantSpeakerChanged(participant: Participant)
    // MARK: LayoutListener
    case callLayoutChanged(layoutType: LayoutType)
    case participantListVisible
    case participantListHidden
    case pictureInPictureLayoutEnabled
    case pictureInPictureLayoutDisabled
    // MARK: ButtonClickListener
    case leaveSessionButtonClicked
    case toggleAudioButtonClicked
    case toggleVideoButtonClicked
    case switchCameraButtonClicked
    case raiseHandButtonClicked
    case shareInviteButtonClicked
    case changeLayoutButtonClicked
    case participantListButtonClicked
    case chatButtonClicked
    case recordingToggleButtonClicked
    // MARK: CallRoom
    /// An action was refused or failed (never silent). Not a documented listener callback:
    /// it reaches `events` and the event log, not the five listener protocols.
    case error(code: String, message: String)
    /// An in-call chat message (you included). Not a documented listener callback.
    case chatMessage(ChatEntry)
    /// An audio device was lost (the call goes on with `null`) or came back.
    case audioNotice(String)
    /// How well a participant's audio gets through changed (you: as your receivers report it;
    /// others: as you receive them). Measured every 2 s from receiver reports.
    case connectionQualityChanged(participant: Participant, quality: ConnectionQuality)

    /// The listener protocol this event belongs to (`CallRoom` for `.error`).
    public var listener: String {
        switch self {
        case .sessionJoined, .sessionLeft, .sessionTimedOut, .connectionLost, .connectionRestored, .connectionClosed: return "SessionStatusListener"
        case .audioMuted, .audioUnMuted, .videoPaused, .videoResumed, .recordingStarted, .recordingStopped, .streamingStarted, .streamingStopped, .audioModeChanged, .audioModesChanged, .cameraFacingChanged: return "MediaEventsListener"
        case .participantJoined, .participantLeft, .participantListChanged, .participantAudioMuted, .participantAudioUnmuted, .participantVideoPaused, .participantVideoResumed, .participantHandRaised, .participantHandLowered, .participantStartedScreenShare, .participantStoppedScreenShare, .participantStartedRecording, .participantStoppedRecording, .dominantSpeakerChanged: return "ParticipantEventListener"
        case .callLayoutChanged, .participantListVisible, .participantListHidden, .pictureInPictureLayoutEnabled, .pictureInPictureLayoutDisabled: return "LayoutListener"
        case .leaveSessionButtonClicked, .toggleAudioButtonClicked, .toggleVideoButtonClicked, .switchCameraButtonClicked, .raiseHandButtonClicked, .shareInviteButtonClicked, .changeLayoutButtonClicked, .participantListButtonClicked, .chatButtonClicked, .recordingToggleButtonClicked: return "ButtonClickListener"
        case .error, .chatMessage, .audioNotice, .connectionQualityChanged: return "CallRoom"
        }
    }

    /// The callback's documented name (`onParticipantJoined`).
    public var callback: String {
        switch self {
        case .sessionJoined: return "onSessionJoined"
        case .sessionLeft: return "onSessionLeft"
        case .sessionTimedOut: return "onSessionTimedOut"
        case .connectionLost: return "onConnectionLost"
        case .connectionRestored: return "onConnectionRestored"
        case .connectionClosed: return "onConnectionClosed"
        case .audioMuted: return "onAudioMuted"
        case .audioUnMuted: return "onAudioUnMuted"
        case .videoPaused: return "onVideoPaused"
        case .videoResumed: return "onVideoResumed"
        case .recordingStarted: return "onRecordingStarted"
        case .recordingStopped: return "onRecordingStopped"
        case .streamingStarted: return "onStreamingStarted"
        case .streamingStopped: return "onStreamingStopped"
        case .audioModeChanged: return "onAudioModeChanged"
        case .audioModesChanged: return "onAudioModesChanged"
        case .cameraFacingChanged: return "onCameraFacingChanged"
        case .participantJoined: return "onParticipantJoined"
        case .participantLeft: return "onParticipantLeft"
        case .participantListChanged: return "onParticipantListChanged"
        case .participantAudioMuted: return "onParticipantAudioMuted"
        case .participantAudioUnmuted: return "onParticipantAudioUnmuted"
        case .participantVideoPaused: return "onParticipantVideoPaused"
        case .participantVideoResumed: return "onParticipantVideoResumed"
        case .participantHandRaised: return "onParticipantHandRaised"
        case .participantHandLowered: return "onParticipantHandLowered"
        case .participantStartedScreenShare: return "onParticipantStartedScreenShare"
        case .participantStoppedScreenShare: return "onParticipantStoppedScreenShare"
        case .participantStartedRecording: return "onParticipantStartedRecording"
        case .participantStoppedRecording: return "onParticipantStoppedRecording"
        case .dominantSpeakerChanged: return "onDominantSpeakerChanged"
        case .callLayoutChanged: return "onCallLayoutChanged"
        case .participantListVisible: return "onParticipantListVisible"
        case .participantListHidden: return "onParticipantListHidden"
        case .pictureInPictureLayoutEnabled: return "onPictureInPictureLayoutEnabled"
        case .pictureInPictureLayoutDisabled: return "onPictureInPictureLayoutDisabled"
        case .leaveSessionButtonClicked: return "onLeaveSessionButtonClicked"
        case .toggleAudioButtonClicked: return "onToggleAudioButtonClicked"
        case .toggleVideoButtonClicked: return "onToggleVideoButtonClicked"
        case .switchCameraButtonClicked: return "onSwitchCameraButtonClicked"
        case .raiseHandButtonClicked: return "onRaiseHandButtonClicked"
        case .shareInviteButtonClicked: return "onShareInviteButtonClicked"
        case .changeLayoutButtonClicked: return "onChangeLayoutButtonClicked"
        case .participantListButtonClicked: return "onParticipantListButtonClicked"
        case .chatButtonClicked: return "onChatButtonClicked"
        case .recordingToggleButtonClicked: return "onRecordingToggleButtonClicked"
        case .error: return "onError"
        case .chatMessage: return "onChatMessage"
        case .audioNotice: return "onAudioNotice"
        case .connectionQualityChanged: return "onConnectionQualityChanged"
        }
    }

    /// Calls the matching method on each listener of the matching protocol.
    func deliver(to set: ListenerSet) {
        switch self {
        case .sessionJoined: set.session.forEach { $0.onSessionJoined() }
        case .sessionLeft: set.session.forEach { $0.onSessionLeft() }
        case .sessionTimedOut: set.session.forEach { $0.onSessionTimedOut() }
        case .connectionLost: set.session.forEach { $0.onConnectionLost() }
        case .connectionRestored: set.session.forEach { $0.onConnectionRestored() }
        case .connectionClosed: set.session.forEach { $0.onConnectionClosed() }
        case .audioMuted: set.media.forEach { $0.onAudioMuted() }
        case .audioUnMuted: set.media.forEach { $0.onAudioUnMuted() }
        case .videoPaused: set.media.forEach { $0.onVideoPaused() }
        case .videoResumed: set.media.forEach { $0.onVideoResumed() }
        case .recordingStarted: set.media.forEach { $0.onRecordingStarted() }
        case .recordingStopped: set.media.forEach { $0.onRecordingStopped() }
        case .streamingStarted: set.media.forEach { $0.onStreamingStarted() }
        case .streamingStopped: set.media.forEach { $0.onStreamingStopped() }
        case .audioModeChanged(let v): set.media.forEach { $0.onAudioModeChanged(audioMode: v) }
        case .audioModesChanged(let v): set.media.forEach { $0.onAudioModesChanged(audioModes: v) }
        case .cameraFacingChanged(let v): set.media.forEach { $0.onCameraFacingChanged(cameraFacing: v) }
        case .participantJoined(let v): set.participant.forEach { $0.onParticipantJoined(participant: v) }
        case .participantLeft(let v): set.participant.forEach { $0.onParticipantLeft(participant: v) }
        case .participantListChanged(let v): set.participant.forEach { $0.onParticipantListChanged(participants: v) }
        case .participantAudioMuted(let v): set.participant.forEach { $0.onParticipantAudioMuted(participant: v) }
        case .participantAudioUnmuted(let v): set.participant.forEach { $0.onParticipantAudioUnmuted(participant: v) }
        case .participantVideoPaused(let v): set.participant.forEach { $0.onParticipantVideoPaused(participant: v) }
        case .participantVideoResumed(let v): set.participant.forEach { $0.onParticipantVideoResumed(participant: v) }
        case .participantHandRaised(let v): set.participant.forEach { $0.onParticipantHandRaised(participant: v) }
        case .participantHandLowered(let v): set.participant.forEach { $0.onParticipantHandLowered(participant: v) }
        case .participantStartedScreenShare(let v): set.participant.forEach { $0.onParticipantStartedScreenShare(participant: v) }
        case .participantStoppedScreenShare(let v): set.participant.forEach { $0.onParticipantStoppedScreenShare(participant: v) }
        case .participantStartedRecording(let v): set.participant.forEach { $0.onParticipantStartedRecording(participant: v) }
        case .participantStoppedRecording(let v): set.participant.forEach { $0.onParticipantStoppedRecording(participant: v) }
        case .dominantSpeakerChanged(let v): set.participant.forEach { $0.onDominantSpeakerChanged(participant: v) }
        case .callLayoutChanged(let v): set.layout.forEach { $0.onCallLayoutChanged(layoutType: v) }
        case .participantListVisible: set.layout.forEach { $0.onParticipantListVisible() }
        case .participantListHidden: set.layout.forEach { $0.onParticipantListHidden() }
        case .pictureInPictureLayoutEnabled: set.layout.forEach { $0.onPictureInPictureLayoutEnabled() }
        case .pictureInPictureLayoutDisabled: set.layout.forEach { $0.onPictureInPictureLayoutDisabled() }
        case .leaveSessionButtonClicked: set.button.forEach { $0.onLeaveSessionButtonClicked() }
        case .toggleAudioButtonClicked: set.button.forEach { $0.onToggleAudioButtonClicked() }
        case .toggleVideoButtonClicked: set.button.forEach { $0.onToggleVideoButtonClicked() }
        case .switchCameraButtonClicked: set.button.forEach { $0.onSwitchCameraButtonClicked() }
        case .raiseHandButtonClicked: set.button.forEach { $0.onRaiseHandButtonClicked() }
        case .shareInviteButtonClicked: set.button.forEach { $0.onShareInviteButtonClicked() }
        case .changeLayoutButtonClicked: set.button.forEach { $0.onChangeLayoutButtonClicked() }
        case .participantListButtonClicked: set.button.forEach { $0.onParticipantListButtonClicked() }
        case .chatButtonClicked: set.button.forEach { $0.onChatButtonClicked() }
        case .recordingToggleButtonClicked: set.button.forEach { $0.onRecordingToggleButtonClicked() }
        case .error(let code, let message): set.callRoom.forEach { $0.onError(code: code, message: message) }
        case .chatMessage(let m): set.callRoom.forEach { $0.onChatMessage(m) }
        case .audioNotice(let n): set.callRoom.forEach { $0.onAudioNotice(n) }
        case .connectionQualityChanged(let p, let q): set.callRoom.forEach { $0.onConnectionQualityChanged(participant: p, quality: q) }
        }
    }
}
