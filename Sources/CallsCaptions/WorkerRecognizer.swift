import CallsAudio
import Foundation
import Synchronization

/// One caption worker (Whisper's or Moonshine's) behind the `SpeechRecognizer` interface. Neither
/// model is a streaming recogniser, so the utterance's audio is kept here: a partial caption is a
/// request for the whole utterance so far, sent without waiting (its reply read on a later
/// `partial()`), one at a time; `end()` recognises the whole utterance and waits for it. When the
/// speaker pauses (`speechPaused()`) the final pass is asked for at once — even behind a partial
/// in flight, which a worker may then cut short (Moonshine's does: its reply says `superseded`) —
/// and `end()` keeps its answer if no voice came since (only silence was fed after it), so the
/// final caption does not wait for a whole pass after the hangover. A worker that dies is started
/// again and the utterance retried once.
///
/// Thread rules: one thread at a time (leased from `RecognizerPool`); its state lives in a
/// `Mutex` that is never contended, so the compiler checks it is not shared some other way.
final class WorkerRecognizer: SpeechRecognizer {
    let language: String
    /// The engine's name, for messages.
    let engine: String
    private struct State: ~Copyable {
        var worker: RecognizerWorker?
        var samples: [Int16] = []
        /// The requests in flight (their ids, in the order sent; the worker answers in order): a
        /// partial, the pause's final pass, or a partial and then the pause's final pass.
        var inFlight: [Int] = []
        /// The final pass asked for when the speaker paused (its id), while no voice came since.
        var early: Int?
        /// Its answer, once read (nil: not yet, or it failed).
        var earlyText: String?
        /// Samples the last partial request carried.
        var asked = 0
        var nextID = 1
        var latest = ""
        var finalPasses = 0
    }
    private let state: Mutex<State>
    private let start: @Sendable () throws(CaptionError) -> RecognizerWorker
    /// Longest utterance recognised (Whisper's window is 30 s; the captioner cuts at 12 s).
    static let maxSamples = 16_000 * 28
    /// New audio needed before another partial is asked for.
    static let partialStepSamples = 16_000 / 2
    /// How long `end()` waits for the worker.
    static let replyTimeout = 20.0

    init(engine: String, language: String, start: @escaping @Sendable () throws(CaptionError) -> RecognizerWorker) throws(CaptionError) {
        self.engine = engine
        self.language = language
        self.start = start
        state = Mutex(State(worker: try start()))
    }

    func begin() throws(CaptionError) {
        try state.withLock { (s) throws(CaptionError) in
            // Answers still due to the last utterance are read first (a worker that died or went
            // out of step since: a new one), then forgotten with it: a guess about the last
            // utterance — another speaker's, the pool lends recognisers to all — is never this one's.
            do { try drainInFlight(&s) } catch { try restart(&s) }
            if s.worker?.isAlive != true { try restart(&s) }
            s.samples.removeAll(keepingCapacity: true)
            s.latest = ""
            s.asked = 0
            s.early = nil
            s.earlyText = nil
        }
    }

    func feed(_ samples: UnsafeBufferPointer<Int16>) throws(CaptionError) {
        state.withLock { s in
            let room = Self.maxSamples - s.samples.count
            if room > 0 { s.samples.append(contentsOf: samples.prefix(room)) }
        }
    }

    func partial() -> String {
        state.withLock { s in
            poll(&s)
            // (Not while the last 240 ms are quiet: the utterance may be ending, and the worker
            // should be free for its final pass.)
            if s.inFlight.isEmpty, s.samples.count >= Self.partialStepSamples, !Self.endsQuiet(s.samples),
               s.samples.count - s.asked >= Self.partialStepSamples, let worker = s.worker,
               let id = try? ask(&s, worker, pass: .partial) {
                s.inFlight.append(id)
            }
            return s.latest
        }
    }

    func speechPaused() {
        state.withLock { s in
            poll(&s)
            guard s.early == nil, s.inFlight.count <= 1, !s.samples.isEmpty, let worker = s.worker,
                  let id = try? ask(&s, worker, pass: .final) else { return }
            s.inFlight.append(id)
            s.early = id
        }
    }

    func speechResumed() {
        // (Its answer, when it comes, is a partial guess like any other.)
        state.withLock { s in
            s.early = nil
            s.earlyText = nil
        }
    }

    func end() throws(CaptionError) -> String {
        try state.withLock { (s) throws(CaptionError) -> String in
            defer {
                s.samples.removeAll(keepingCapacity: true)
                s.early = nil
                s.earlyText = nil
            }
            guard !s.samples.isEmpty else { return "" }
            if let text = try? earlyFinal(&s) { return text }
            do { return try recognise(&s) } catch {
                // The worker died or is out of step: a new one, and the utterance once more.
                try restart(&s)
                return try recognise(&s)
            }
        }
    }

    /// The worker's process id (tests).
    var workerPID: pid_t? { state.withLock { $0.worker?.pid } }

    var workerUsage: (cpuSeconds: Double, residentKiB: Int)? {
        state.withLock { s in s.worker?.usage }
    }

    /// Whether the last 240 ms are not voice (the captioner's level test: at most −45 dBFS).
    static func endsQuiet(_ samples: [Int16]) -> Bool {
        Array(samples.suffix(16 * 240)).withUnsafeBufferPointer { !LevelMeter.isVoice(dbfs: LevelMeter.rmsDBFS($0)) }
    }

    /// Final passes asked for so far, on a pause or at the end (tests).
    var finalPasses: Int { state.withLock { $0.finalPasses } }

    // MARK: Requests (under the state's lock)

    /// Reads the replies that came in since, without waiting: the newest guess, the pause's final.
    private func poll(_ s: inout State) {
        while !s.inFlight.isEmpty, let r = try? s.worker?.reply(timeout: 0) {
            took(r, &s)
        }
    }

    /// What reply `r` means: its request (and any before it: answered in order) is done; the
    /// pause's final pass has its answer; its text is the newest guess.
    private func took(_ r: RecognizerWorker.Reply, _ s: inout State) {
        if let i = s.inFlight.firstIndex(of: r.id) { s.inFlight.removeFirst(i + 1) }
        if r.id == s.early { s.earlyText = r.error == nil ? (r.text ?? "") : nil }
        if let text = r.text, !text.isEmpty { s.latest = text }
    }

    /// The pause's final pass, when one was asked for and only silence came after it: its
    /// answer (waited for); nil when there is none to keep.
    private func earlyFinal(_ s: inout State) throws(CaptionError) -> String? {
        guard let id = s.early else { return nil }
        if let text = s.earlyText { return text }
        guard s.inFlight.contains(id), let worker = s.worker else { return nil }
        try awaitReply(id, from: worker, &s)
        return s.earlyText
    }

    /// Sends the utterance so far to `worker` as a new request (not waiting for it): its id.
    private func ask(_ s: inout State, _ worker: RecognizerWorker, pass: RecognizerWorker.Pass) throws(CaptionError) -> Int {
        let id = s.nextID
        s.nextID += 1
        try worker.send(id: id, samples: s.samples, pass: pass)
        s.asked = s.samples.count
        if pass == .final { s.finalPasses += 1 }
        return id
    }

    private func recognise(_ s: inout State) throws(CaptionError) -> String {
        try drainInFlight(&s)
        guard let worker = s.worker else { throw .recognizer("\(engine): no worker") }
        let id = try ask(&s, worker, pass: .final)
        s.inFlight.append(id)
        let r = try awaitReply(id, from: worker, &s)
        if let e = r.error { throw .recognizer("\(engine): \(e)") }
        return r.text ?? ""
    }

    /// Waits for the requests in flight (their answers are of no use now).
    private func drainInFlight(_ s: inout State) throws(CaptionError) {
        guard let last = s.inFlight.last, let worker = s.worker else { return }
        try awaitReply(last, from: worker, &s)
    }

    /// Reads replies, each as `poll` would, until the one to request `id` (in flight), which it
    /// returns; waits `replyTimeout` at most for each.
    @discardableResult
    private func awaitReply(_ id: Int, from worker: RecognizerWorker, _ s: inout State) throws(CaptionError) -> RecognizerWorker.Reply {
        while true {
            guard let r = try worker.reply(timeout: Self.replyTimeout) else {
                s.inFlight.removeAll()
                throw .recognizer("\(engine): no answer in \(Int(Self.replyTimeout)) s")
            }
            took(r, &s)
            if r.id == id { return r }
        }
    }

    private func restart(_ s: inout State) throws(CaptionError) {
        s.worker?.close()
        s.worker = nil
        s.inFlight.removeAll()
        s.worker = try start()
    }
}
