/// A button of the built-in call surface's control bar. Front ends that render the surface
/// (the `callroom` terminal UI) report clicks through `CallSession.click(_:)`, so the
/// `ButtonClickListener` callback fires before the SDK's own action, as documented.
public enum BuiltInButton: String, Sendable, CaseIterable {
    case leaveSession
    case toggleAudio
}

extension CallSession {
    /// Fires the button's `ButtonClickListener` callback, then performs its action.
    /// Call from any thread; the callback runs on the SDK callback queue.
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
            }
        }
    }
}
