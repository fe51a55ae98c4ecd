/// When a client decides its server is gone, and when it tries to get back: the heartbeat's
/// verdict (nothing heard from the server for `serverSilence` — a TCP connection can stay "open"
/// to a stopped process for minutes), and after a loss the attempts' back-off (0.25 s, 0.5 s,
/// then every second: a restarted server is found within a second of being back) until the
/// server's grace period is over. A value with no clock of its own: time is the caller's
/// (monotonic nanoseconds), so the whole schedule is tested on made-up time.
///
/// Thread rules: a value the client's state queue owns.
struct ReconnectSchedule: Sendable, Equatable {
    /// Silence from the server longer than this means it is gone or stalled (5 s; tests of the
    /// whole client against a stalled server use less).
    static let defaultServerSilence: UInt64 = 5_000_000_000
    let serverSilence: UInt64
    /// The longest wait between two attempts.
    static let maxDelaySeconds = 1.0

    /// When the server was last heard from (0: not yet).
    private(set) var lastHeard: UInt64 = 0
    /// Attempts made since the loss.
    private(set) var attempt = 0
    /// When the grace period ends (nil: connected).
    private(set) var deadline: UInt64?

    init(serverSilence: UInt64 = Self.defaultServerSilence) { self.serverSilence = serverSilence }

    /// Any message from the server.
    mutating func heard(at now: UInt64) { lastHeard = now }

    /// The heartbeat's verdict: heard from once, then silent too long.
    func isServerSilent(at now: UInt64) -> Bool {
        lastHeard != 0 && now &- lastHeard > serverSilence
    }

    /// The connection dropped: attempts start over, within `graceSeconds` from now.
    mutating func lost(at now: UInt64, graceSeconds: Int) {
        attempt = 0
        deadline = now &+ UInt64(max(0, graceSeconds)) * 1_000_000_000
    }

    /// The delay before the next attempt (seconds), or nil when the grace period is over: give up.
    mutating func nextAttempt(at now: UInt64) -> Double? {
        guard let deadline, now < deadline else { return nil }
        let delay = min(Self.maxDelaySeconds, 0.25 * Double(1 << min(attempt, 8)))
        attempt += 1
        return delay
    }

    /// Back in (resumed, or rejoined): no deadline, attempts start over next time.
    mutating func recovered() {
        attempt = 0
        deadline = nil
    }
}
