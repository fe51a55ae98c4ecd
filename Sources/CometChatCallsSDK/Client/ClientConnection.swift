import CallsCore

/// The call's signalling connection as one value: where the session is (joining, in, reconnecting,
/// leaving), the heartbeat, and getting back after a loss — resume within the grace period, or,
/// when the server no longer knows the session (it restarted), a rejoin with a fresh call token.
/// The client-side counterpart of the server's `RoomCore`: no sockets, no timers, no clock of its
/// own. `CallsClient` feeds it what happened (`Input`, with the time) and carries out what it
/// asks (`Effect`: open a connection, drop it, ping, wait, give up), so every transition is
/// tested on made-up time (`ClientConnectionTests`).
///
/// ```
///  idle ─join─▶ joining ─joined─▶ joined ◀──────────────── resumed / rejoined ─┐
///                 │                 │ closed, or 5 s of server silence         │
///               refused/closed      ▼                                          │
///                 ▼            reconnecting: retry after 0.25, 0.5, 1, 1… s ───┤ resume (3 s each)
///               ended ◀─ grace over / rejoin refused ─┘  resume expired ─▶ token ─▶ join (5 s)
/// ```
///
/// Thread rules: a value the client's state queue owns.
struct ClientConnection: Sendable, Equatable {
    enum Phase: Sendable, Equatable { case idle, joining, joined, reconnecting, leaving, ended }

    /// A rejoin under way: the call token is being fetched, or the join was sent with it.
    enum Rejoin: Sendable, Equatable { case fetchingToken, joinSent }

    /// What happened. Inputs about a connection are about the current one (the client drops
    /// what an older connection says before it gets here).
    enum Input: Sendable, Equatable {
        /// A join was sent on a new connection.
        case joinSent
        /// The server admitted the join (and the media engine started).
        case joined(resumeToken: String?, graceSeconds: Int?)
        /// The join failed at our end (the relay could not be resolved, the engine did not start).
        case joinFailed
        /// Any message from the server.
        case heard
        /// The current connection closed (`reason`: what the socket said).
        case closed(reason: String)
        /// A connection could not even be opened.
        case connectFailed
        /// The server refused something with an error this value owns (`claims`).
        case refused(code: String, message: String, canRejoin: Bool)
        /// The heartbeat's tick (every 2 s while joined).
        case heartbeat
        case pong(id: Int)
        /// A scheduled retry, or an attempt's deadline (`id`s name which one; stale ones do nothing).
        case retryDue(id: Int)
        case attemptTimedOut(id: Int)
        /// The held participant is ours again.
        case resumed(resumeToken: String?, graceSeconds: Int?)
        /// The rejoin's call token, or why there is none.
        case rejoinToken(String)
        case rejoinTokenFailed(code: String, message: String)
        /// The rejoin was admitted (and the engine moved to the new participant).
        case rejoined(resumeToken: String?, graceSeconds: Int?)
        /// You leave; then the server's confirmation did not come within 2 s.
        case leave
        case leaveTimedOut
        /// The session was torn down (by whatever path).
        case ended
    }

    /// What the client carries out, in order.
    enum Effect: Sendable, Equatable {
        /// Fail the pending join with this error.
        case failJoin(code: String, message: String)
        /// Tell the listeners the connection was lost (media keeps flowing meanwhile).
        case announceLost
        /// Close the current connection (if any).
        case drop
        /// Open a new connection and send `resume` with the token.
        case openResume(token: String)
        /// Fetch a fresh call token for the session (REST), then feed `rejoinToken`/`rejoinTokenFailed`.
        case fetchRejoinToken
        /// Open a new connection and send `join` with this call token.
        case openRejoin(callToken: String)
        /// Feed `input` after `seconds`.
        case after(seconds: Double, Input)
        case ping(id: Int)
        case sendLeave
        /// End the session as left (the leave was confirmed, or not within 2 s).
        case finishLeaving
        /// End the session as lost and tell the listeners the connection is closed.
        case giveUp
        /// Tell the listeners why the rejoin failed (a `giveUp` follows).
        case rejoinFailed(code: String, message: String)
    }

    /// How long an attempt may take: a resume (a server that accepts connections but never
    /// answers does not hold us), and a rejoin's token and join.
    static let resumeSeconds = 3.0
    static let rejoinSeconds = 5.0
    static let leaveSeconds = 2.0

    private(set) var phase: Phase = .idle
    private(set) var rejoin: Rejoin?
    private(set) var resumeToken: String?
    private(set) var graceSeconds = 30
    /// The heartbeat's verdict and the attempts' back-off.
    private(set) var schedule: ReconnectSchedule
    /// The retry scheduled last, and the attempt made last: a timer names one, and only the
    /// latest acts (two reasons to retry make one retry; an old attempt's deadline is ignored).
    private(set) var retryID = 0
    private(set) var attemptID = 0
    /// Pings in flight (id → send time, monotonic ns) and the last measured round trip.
    private(set) var pingsSent: [Int: UInt64] = [:]
    private(set) var pingCounter = 0
    private(set) var roundTripMs: Double?

    /// - Parameter serverSilence: how long the server may say nothing before the connection
    ///   counts as lost (nanoseconds; 5 s).
    init(serverSilence: UInt64 = ReconnectSchedule.defaultServerSilence) {
        schedule = ReconnectSchedule(serverSilence: serverSilence)
    }

    /// Whether a server error is this value's business (the join, or getting back), rather than
    /// the session's (a refused unmute, a refused tunnel).
    func claims(_ code: SignalErrorCode) -> Bool {
        phase == .joining || (phase == .reconnecting && (rejoin != nil || code == .resumeExpired))
    }

    /// One transition at `now` (monotonic nanoseconds).
    mutating func handle(_ input: Input, at now: UInt64) -> [Effect] {
        switch input {
        case .joinSent:
            guard phase == .idle || phase == .ended else { return [] }
            self = ClientConnection(serverSilence: schedule.serverSilence)
            phase = .joining
            return []
        case .joined(let token, let grace):
            guard phase == .joining else { return [] }
            phase = .joined
            adopt(token, grace)
            return []
        case .joinFailed:
            guard phase == .joining else { return [] }
            phase = .ended
            return []
        case .heard:
            schedule.heard(at: now)
            return []
        case .closed(let reason):
            switch phase {
            case .joining:
                return [.failJoin(code: CometChatCallException.networkError, message: "the server closed the connection (\(reason))")]
            case .joined:
                return lost(at: now)
            case .reconnecting:
                // The server closes a connection whose resume it refused: the rejoin goes on.
                if rejoin == .fetchingToken { return [] }
                rejoin = nil
                return retry(at: now)
            case .leaving:
                return [.finishLeaving]
            case .idle, .ended:
                return []
            }
        case .connectFailed:
            guard phase == .reconnecting else { return [] }
            rejoin = nil
            return retry(at: now)
        case .refused(let code, let message, let canRejoin):
            switch phase {
            case .joining:
                return [.failJoin(code: code, message: message)]
            case .reconnecting where rejoin != nil:
                rejoin = nil
                return [.rejoinFailed(code: code, message: message), .giveUp]
            case .reconnecting where code == SignalErrorCode.resumeExpired.rawValue:
                guard canRejoin else { return [.giveUp] }
                rejoin = .fetchingToken
                attemptID += 1
                return [.fetchRejoinToken, .after(seconds: Self.rejoinSeconds, .attemptTimedOut(id: attemptID))]
            default:
                return []
            }
        case .heartbeat:
            guard phase == .joined else { return [] }
            // 5 s of silence is a dead or stalled server (a TCP connection can stay "open" to a
            // stopped process for minutes).
            if schedule.isServerSilent(at: now) { return [.drop] + lost(at: now) }
            pingCounter += 1
            pingsSent = pingsSent.filter { $0.key > pingCounter - 5 }
            pingsSent[pingCounter] = now
            return [.ping(id: pingCounter)]
        case .pong(let id):
            if let sent = pingsSent.removeValue(forKey: id) { roundTripMs = Double(now &- sent) / 1e6 }
            return []
        case .retryDue(let id):
            guard phase == .reconnecting, rejoin == nil, id == retryID, let token = resumeToken else { return [] }
            attemptID += 1
            return [.drop, .openResume(token: token), .after(seconds: Self.resumeSeconds, .attemptTimedOut(id: attemptID))]
        case .attemptTimedOut(let id):
            guard phase == .reconnecting, id == attemptID else { return [] }
            rejoin = nil
            return [.drop] + retry(at: now)
        case .resumed(let token, let grace):
            guard phase == .reconnecting, rejoin == nil else { return [] }
            back(token, grace)
            return []
        case .rejoinToken(let callToken):
            guard phase == .reconnecting, rejoin == .fetchingToken else { return [] }
            rejoin = .joinSent
            attemptID += 1
            return [.drop, .openRejoin(callToken: callToken), .after(seconds: Self.rejoinSeconds, .attemptTimedOut(id: attemptID))]
        case .rejoinTokenFailed(let code, let message):
            guard phase == .reconnecting, rejoin == .fetchingToken else { return [] }
            rejoin = nil
            return [.rejoinFailed(code: code, message: message), .giveUp]
        case .rejoined(let token, let grace):
            guard phase == .reconnecting, rejoin == .joinSent else { return [] }
            back(token, grace)
            return []
        case .leave:
            guard phase == .joined || phase == .joining || phase == .reconnecting else { return [] }
            phase = .leaving
            return [.sendLeave, .after(seconds: Self.leaveSeconds, .leaveTimedOut)]
        case .leaveTimedOut:
            return phase == .leaving ? [.finishLeaving] : []
        case .ended:
            guard phase != .idle else { return [] }
            phase = .ended
            rejoin = nil
            resumeToken = nil
            pingsSent = [:]
            roundTripMs = nil
            return []
        }
    }

    private mutating func adopt(_ token: String?, _ grace: Int?) {
        resumeToken = token
        graceSeconds = grace ?? 30
    }

    private mutating func back(_ token: String?, _ grace: Int?) {
        adopt(token, grace)
        rejoin = nil
        phase = .joined
        schedule.recovered()
    }

    /// The connection dropped while in the call: without a resume token the session is over;
    /// with one, attempts start within the grace period.
    private mutating func lost(at now: UInt64) -> [Effect] {
        guard resumeToken != nil else { return [.giveUp] }
        phase = .reconnecting
        schedule.lost(at: now, graceSeconds: graceSeconds)
        attemptID += 1
        return [.announceLost] + retry(at: now)
    }

    /// The next attempt after its back-off, or the end when the grace period is over.
    private mutating func retry(at now: UInt64) -> [Effect] {
        guard phase == .reconnecting else { return [] }
        guard let delay = schedule.nextAttempt(at: now) else { return [.giveUp] }
        retryID += 1
        return [.after(seconds: delay, .retryDue(id: retryID))]
    }
}
