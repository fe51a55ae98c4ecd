import CallsCore
import CallsStore
import CallsSupport

extension RoomCore {
    /// Wrong passcodes one user may give one session at once, then one every
    /// `passcodeRetrySeconds`: a four-digit passcode took 10,000 joins to find — two minutes
    /// at the signalling rate — and now takes days per account.
    static let passcodeGuessBurst = 5.0
    static let passcodeRetrySeconds = 30.0
    /// Bound on the guess table: past it, entries that have refilled are forgotten.
    static let maxPasscodeGuessEntries = 100_000

    /// Why `join` may not enter a room with a passcode, or nil when the passcode is right (or the
    /// room has none). A wrong one spends one of the user's guesses for the session; with none
    /// left the passcode is not even checked. A join without one is no guess (the SDK asks
    /// for it when told the room needs one).
    func passcodeRefusal(_ rules: RoomRules, session: String, uid: String, given: String?) -> (SignalErrorCode, String)? {
        guard rules.hasPasscode else { return nil }
        let key = session + "\n" + uid
        let t = UInt64(max(0, now)) &* 1_000_000
        if let left = passcodeGuesses[key]?.available(now: t), left < 1 {
            let wait = RateLimiter.secondsUntilOne(tokens: left, perSecond: 1 / Self.passcodeRetrySeconds)
            return (.rateLimited, "Too many wrong passcodes for this session: try again in \(wait) s.")
        }
        if rules.passcodeMatches(given) { return nil }
        guard given != nil else { return (.passcodeWrong, "This session needs a passcode.") }
        var guesses = passcodeGuesses[key] ?? RateLimiter(capacity: Self.passcodeGuessBurst, perSecond: 1 / Self.passcodeRetrySeconds)
        _ = guesses.allow(now: t)
        passcodeGuesses[key] = guesses
        if passcodeGuesses.count > Self.maxPasscodeGuessEntries {
            passcodeGuesses = passcodeGuesses.filter { $0.value.available(now: t) < Self.passcodeGuessBurst }
        }
        return (.passcodeWrong, "The passcode is not right.")
    }
}
