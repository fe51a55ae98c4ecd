import CallsCore

/// A few recognisers shared by every captioned speaker on the server.
///
/// A decoder is heavy (PocketSphinx: ≈ 95 MB, 0.4 s to load) and a speaker only needs one
/// while they are talking, so a speaker leases one for an utterance and gives it back at its
/// end. At most `capacity` exist per language (made on first need, kept warm); a speaker who
/// starts talking when all are busy waits, their audio buffered (`SpeakerCaptioner`).
///
/// Thread rules: any thread (a lock).
public final class RecognizerPool: Sendable {
    public let engine: SpeechRecognizerEngine
    public let capacity: Int
    private struct State {
        var idle: [String: [SpeechRecognizer]] = [:]
        var made: [String: Int] = [:]
        var leased = 0
        /// Counts `drain()`s: a recogniser warmed across one is not kept.
        var drains = 0

        /// A lease for `key` that made a recogniser ends without keeping it (its making failed,
        /// or it came too late to keep).
        mutating func unmake(_ key: String) {
            made[key, default: 1] -= 1
            leased -= 1
        }
    }
    private let state = Locked(State())

    public init(engine: SpeechRecognizerEngine, capacity: Int) {
        self.engine = engine
        self.capacity = max(1, capacity)
    }

    /// Checks a language has a model (without loading one).
    public func check(language: String) throws(CaptionError) {
        let available = engine.languages()
        guard available.contains(where: { $0.lowercased() == language.lowercased() }) else {
            throw .noModel(language: language, available: available)
        }
    }

    /// A recogniser for `language`, or nil when `capacity` are busy. Loads one when none is idle
    /// (slow: call it off any latency-critical thread).
    public func lease(language: String) throws(CaptionError) -> SpeechRecognizer? {
        let key = language.lowercased()
        enum Take { case have(SpeechRecognizer), make, busy }
        let take = state.withLock { s -> Take in
            if let r = s.idle[key]?.popLast() { s.leased += 1; return .have(r) }
            guard s.made[key, default: 0] < capacity else { return .busy }
            s.made[key, default: 0] += 1
            s.leased += 1
            return .make
        }
        switch take {
        case .have(let r): return r
        case .busy: return nil
        case .make:
            do { return try engine.make(language: language) } catch {
                state.withLock { $0.unmake(key) }
                throw error
            }
        }
    }

    /// Makes a recogniser for `language` ahead of need when none is idle and fewer than
    /// `capacity` exist (a Whisper worker takes 0.4–0.7 s to start: the first speaker should not
    /// wait for it). Slow like `lease`: call it off any latency-critical thread.
    /// One made while the pool was drained (the server stopping as its transcription started)
    /// is let go at once, not kept idle after the drain.
    public func warm(language: String) throws(CaptionError) {
        let drains = state.withLock { $0.drains }
        guard let r = try lease(language: language) else { return }  // (all busy: they are warm)
        let late = state.withLock { s -> Bool in
            guard s.drains != drains else { return false }
            s.unmake(r.language.lowercased())
            return true
        }
        if !late { giveBack(r) }
    }

    /// Gives a recogniser back.
    public func giveBack(_ r: SpeechRecognizer) {
        state.withLock { s in
            s.idle[r.language.lowercased(), default: []].append(r)
            s.leased -= 1
        }
    }

    /// Lets go of the idle recognisers (a Whisper worker's process ends with its recogniser);
    /// ones leased now are kept by their lessees. The server's stop calls it after its
    /// transcribers have stopped; recognisers are made again on the next need.
    public func drain() {
        let idle = state.withLock { s -> [SpeechRecognizer] in
            let all = s.idle.values.flatMap { $0 }
            for (language, list) in s.idle { s.made[language, default: 0] -= list.count }
            s.idle = [:]
            s.drains += 1
            return all
        }
        _ = idle  // (released here, outside the lock)
    }

    /// Recognisers leased now (for metrics and tests).
    public var leased: Int { state.withLock { $0.leased } }

    /// Recognisers idle now, kept warm (tests).
    public var idle: Int { state.withLock { $0.idle.values.reduce(0) { $0 + $1.count } } }
}
