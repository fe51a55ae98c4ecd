import CallsSupport

/// The server-side name of each call transition (`shared/reference/calls-api.md` §9): what the
/// webhooks issue delivers. Emitted as `RingEffect.event` once the transition is on disk.
public enum CallTrigger: String, Sendable, CaseIterable {
    case callInitiated = "call_initiated"
    case callStarted = "call_started"
    case callBusy = "call_busy"
    case callCancelled = "call_cancelled"
    case callRejected = "call_rejected"
    case callUnanswered = "call_unanswered"
    case callEnded = "call_ended"
}
