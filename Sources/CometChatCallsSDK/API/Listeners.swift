// The one declaration of every listener callback: scripts/gen-listeners.py derives the default
// implementations, the `CallEvent` enum (listener, callback, delivery) and the terminal's
// `ListenerBridge` from these protocols; a test checks the generated files are current.

/// Session lifecycle callbacks. Every method has a default empty implementation; implement
/// only those you need. Delivered on the SDK callback queue (main unless configured).
public protocol SessionStatusListener: AnyObject {
    func onSessionJoined()
    func onSessionLeft()
    func onSessionTimedOut()
    func onConnectionLost()
    func onConnectionRestored()
    func onConnectionClosed()
}


/// Your own media state, confirmed by the server. Delivered on the SDK callback queue.
public protocol MediaEventsListener: AnyObject {
    func onAudioMuted()
    func onAudioUnMuted()
    func onVideoPaused()
    func onVideoResumed()
    func onRecordingStarted()
    func onRecordingStopped()
    func onStreamingStarted()
    func onStreamingStopped()
    func onAudioModeChanged(audioMode: AudioMode)
    func onAudioModesChanged(audioModes: [AudioMode])
    func onCameraFacingChanged(cameraFacing: CameraFacing)
}


/// Other participants' arrivals, departures and state, with the full roster. Delivered on
/// the SDK callback queue.
public protocol ParticipantEventListener: AnyObject {
    func onParticipantJoined(participant: Participant)
    func onParticipantLeft(participant: Participant)
    func onParticipantListChanged(participants: [Participant])
    func onParticipantAudioMuted(participant: Participant)
    func onParticipantAudioUnmuted(participant: Participant)
    func onParticipantVideoPaused(participant: Participant)
    func onParticipantVideoResumed(participant: Participant)
    func onParticipantHandRaised(participant: Participant)
    func onParticipantHandLowered(participant: Participant)
    func onParticipantStartedScreenShare(participant: Participant)
    func onParticipantStoppedScreenShare(participant: Participant)
    func onParticipantStartedRecording(participant: Participant)
    func onParticipantStoppedRecording(participant: Participant)
    func onDominantSpeakerChanged(participant: Participant)
}


/// Layout changes of the built-in call surface. Delivered on the SDK callback queue.
public protocol LayoutListener: AnyObject {
    func onCallLayoutChanged(layoutType: LayoutType)
    func onParticipantListVisible()
    func onParticipantListHidden()
    func onPictureInPictureLayoutEnabled()
    func onPictureInPictureLayoutDisabled()
}


/// Clicks on the built-in control bar. Each fires before the SDK's own action and does not
/// suppress it. Delivered on the SDK callback queue.
public protocol ButtonClickListener: AnyObject {
    func onLeaveSessionButtonClicked()
    func onToggleAudioButtonClicked()
    func onToggleVideoButtonClicked()
    func onSwitchCameraButtonClicked()
    func onRaiseHandButtonClicked()
    func onShareInviteButtonClicked()
    func onChangeLayoutButtonClicked()
    func onParticipantListButtonClicked()
    func onChatButtonClicked()
    func onRecordingToggleButtonClicked()
}


/// CallRoom: what the five documented protocols have no callback for — refused or failed
/// requests (never silent) and in-call chat. Delivered on the SDK callback queue.
public protocol CallRoomListener: AnyObject {
    /// A request was refused or failed (never silent): `code` is documented in docs/sdk.md.
    func onError(code: String, message: String)
    /// An in-call chat message (you included).
    func onChatMessage(_ message: ChatEntry)
    /// An audio device was lost (the call continues on `null`) or came back.
    func onAudioNotice(_ notice: String)
    /// How well a participant's audio gets through changed (you: as your receivers report it;
    /// others: as you receive them). Measured every 2 s from receiver reports.
    func onConnectionQualityChanged(participant: Participant, quality: ConnectionQuality)
    /// The server had lost your session (it restarted): the SDK joined it again with a fresh
    /// call token and you are `participant` now (a new id; peers saw you leave and join).
    /// Follows `onConnectionRestored`; `CallsClient.sessionRejoinCount` counts these.
    func onSessionRejoined(participant: Participant)
    /// Media changed path: `.signalling` when no UDP reached the relay within 2.5 s of joining
    /// (a firewall that lets only HTTPS through) — the call goes on over the signalling
    /// connection; an audio notice says so too.
    func onMediaTransportChanged(transport: MediaTransport)
    /// The server started transcribing the session (captions follow), in `language`.
    func onTranscriptionStarted(language: String)
    /// The server stopped transcribing.
    func onTranscriptionStopped()
    /// A caption of one speaker: partial (`final` false; the next with the same `pid` and `id`
    /// replaces it) or the final text of what they said.
    func onCaptionReceived(_ caption: Caption)
    /// The room's live stream lost its Icecast server and is reconnecting (`reason` says why);
    /// `onStreamingReconnected` when it is back on air, `onStreamingStopped` if it gives up.
    func onStreamingReconnecting(reason: String)
    /// The live stream is back on air after a reconnect.
    func onStreamingReconnected()
    /// A moderator locked the room (nobody new may join) or unlocked it.
    func onRoomLockChanged(locked: Bool)
    /// You are waiting in the lobby of a room that admits people one by one: "waiting for the
    /// host". The join completes when a moderator lets you in, or fails with `ERR_LOBBY_DENIED`.
    func onWaitingInLobby()
    /// (Moderators) someone is waiting in the lobby: `admitFromLobby` / `denyFromLobby` with
    /// their `participant.pid`.
    func onLobbyRequest(participant: Participant)
    /// (Moderators) a lobby request is over: admitted, or not (denied, or they went away).
    func onLobbyRequestResolved(participant: Participant, admitted: Bool)
}

