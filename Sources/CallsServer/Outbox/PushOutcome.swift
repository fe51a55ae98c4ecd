import CallsStore

/// What one attempt to send a push came to.
enum PushOutcome: Sendable, Equatable {
    /// Accepted by the service (its id for the push, if it gave one).
    case sent(status: Int, providerId: String?)
    /// Try again later (throttled, the service is down, a timeout); `afterMs` when it said how long.
    case retry(status: Int?, reason: String, afterMs: Int64?)
    /// Refused for good; `purgeToken` when the token itself is dead.
    case failed(status: Int?, reason: String, purgeToken: Bool)
}

/// A push service this server sends through (APNs, FCM).
///
/// Thread rules: called from the push sender's thread only.
protocol PushProvider: AnyObject {
    func send(_ push: StoredPush, now: Int64) -> PushOutcome
}
