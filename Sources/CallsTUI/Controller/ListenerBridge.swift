import CometChatCallsSDK

/// Registers for all five listener protocols (and CallRoom's own) on a `CallSession` and turns every callback into
/// a `CallEvent` for `handler`. This is how the terminal front end and the headless client
/// observe a session: through the documented listener protocols, not a side channel.
/// Thread rules: callbacks (and so `handler`) run on the SDK callback queue. The callbacks
/// themselves are generated (`ListenerBridge+Callbacks.generated.swift`, scripts/gen-listeners.py).
public final class ListenerBridge: SessionStatusListener, MediaEventsListener, ParticipantEventListener,
    LayoutListener, ButtonClickListener, CallRoomListener {
    let handler: (CallEvent) -> Void

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
}
