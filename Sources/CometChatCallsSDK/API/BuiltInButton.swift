/// A button of the built-in call surface's control bar. Front ends that render the surface
/// (the `callroom` terminal UI) report clicks through `CallSession.click(_:)`, so the
/// `ButtonClickListener` callback fires before the SDK's own action, as documented.
public enum BuiltInButton: String, Sendable, CaseIterable {
    case leaveSession
    case toggleAudio
    case toggleVideo
    case switchCamera
    case raiseHand
    case shareInvite
    case changeLayout
    case participantList
    case chat
    case recordingToggle
    /// CallRoom: closed captions. The front end shows or hides them; when the server is not
    /// transcribing yet, the click asks it to (moderators). No listener callback is documented.
    case closedCaptions
    /// CallRoom: starts or stops the server's transcription (moderators).
    case transcriptionToggle
    /// CallRoom: starts or stops the room's live stream to Icecast (moderators).
    case streamingToggle
    /// CallRoom: starts or stops sharing a terminal as text. Callback only: the front end picks
    /// the terminal, captures it and sends it (`setPresenting`, `sendScreenShare`).
    case screenShareToggle
}

extension CallSession {
    /// Fires the button's `ButtonClickListener` callback, then performs its action:
    /// leave; mute/unmute; pause/resume video; switch camera; raise/lower hand; share invite
    /// (callback only: the front end shows `inviteLink`); cycle the layout; show/hide the
    /// participant list; chat (callback only: the front end opens its chat panel and clears the
    /// badge); start/stop recording; captions (transcription started if it is not running: the
    /// front end shows or hides them); start/stop transcription; start/stop the live stream;
    /// terminal share (nothing here: the front end shares). Call from any thread.
    public func click(_ button: BuiltInButton) {
        let queue = CometChatCalls.callbackQueue
        queue.async {
            switch button {
            case .leaveSession:
                self.dispatch(.leaveSessionButtonClicked)
                self.leaveSession()
            case .toggleAudio:
                self.dispatch(.toggleAudioButtonClicked)
                if self.isAudioMuted { self.unmuteAudio() } else { self.muteAudio() }
            case .toggleVideo:
                self.dispatch(.toggleVideoButtonClicked)
                if self.localParticipant?.isVideoPaused == true { self.resumeVideo() } else { self.pauseVideo() }
            case .switchCamera:
                self.dispatch(.switchCameraButtonClicked)
                self.switchCamera()
            case .raiseHand:
                self.dispatch(.raiseHandButtonClicked)
                if self.localParticipant?.raisedHandTimestamp != nil { self.lowerHand() } else { self.raiseHand() }
            case .shareInvite:
                self.dispatch(.shareInviteButtonClicked)
            case .changeLayout:
                self.dispatch(.changeLayoutButtonClicked)
                let all = LayoutType.allCases
                let next = all[((all.firstIndex(of: self.layout) ?? 0) + 1) % all.count]
                self.setLayout(next)
            case .participantList:
                self.dispatch(.participantListButtonClicked)
                self.setParticipantListVisible(!self.isParticipantListVisible)
            case .chat:
                self.dispatch(.chatButtonClicked)
                self.setChatButtonUnreadCount(0)
            case .recordingToggle:
                self.dispatch(.recordingToggleButtonClicked)
                if self.currentClient?.isServerRecording == true { self.stopRecording() } else { self.startRecording() }
            case .closedCaptions:
                if self.currentClient?.isServerTranscribing == false { self.startTranscription() }
            case .transcriptionToggle:
                if self.currentClient?.isServerTranscribing == true { self.stopTranscription() } else { self.startTranscription() }
            case .streamingToggle:
                if self.currentClient?.streamState != nil { self.stopStreaming() } else { self.startStreaming() }
            case .screenShareToggle:
                break  // the front end's: it owns the terminal it shares
            }
        }
    }

    /// The session's invite link (`<publicURL>/call/<sessionId>`, the server's public URL when
    /// it has one), for the share-invite button.
    public var inviteLink: String? { currentClient?.inviteLink }

    /// CallRoom: a link to share that lets someone in without an account or a key: a fresh guest
    /// invite (a day, any number of uses) minted for you; the plain session link when you cannot
    /// mint one (a guest yourself). nil outside a session. `shareableLink()` says which it is.
    public func shareableInviteLink() async -> String? { await shareableLink()?.link }

    /// CallRoom: what `shareableInviteLink` gives, and which kind of link it is.
    public enum ShareableLink: Sendable, Equatable {
        /// A guest invite: anyone with it comes in with a name, no account.
        case guestInvite(String)
        /// The session's plain link — for people with an account of the app (and, in a room that
        /// admits only the invited, not even them): no invite could be made, `reason` says why.
        case sessionLink(String, reason: String)

        public var link: String {
            switch self {
            case .guestInvite(let l), .sessionLink(let l, _): return l
            }
        }
    }

    /// CallRoom: a guest invite minted for you (the same one again while it has an hour to
    /// live), else the session's plain link and why (you are a
    /// guest yourself, the server refused — a ringing call's room takes no invites — or could
    /// not be reached). nil outside a session. Any thread; it waits for the server.
    public func shareableLink() async -> ShareableLink? {
        guard let c = currentClient, let plain = c.inviteLink else { return nil }
        guard let session = c.currentSessionID, let user = c.user, !user.authToken.isEmpty else {
            return .sessionLink(plain, reason: "guests cannot invite")
        }
        do {
            return .guestInvite(try await c.guestInvite(sessionID: session).link)
        } catch {
            return .sessionLink(plain, reason: error.errorDescription)
        }
    }
}
