import CallsAudio
import Foundation
import Synchronization

/// One Whisper worker behind the `SpeechRecognizer` interface. Whisper is not a streaming
/// recogniser, so the utterance's audio is kept here: a partial caption is a request for the
/// whole utterance so far, sent without waiting (its reply read on a later `partial()`), at most
/// one at a time; `end()` recognises the whole utterance and waits for it. When the speaker
/// pauses (`speechPaused()`) the final pass is asked for at once, and `end()` keeps its answer if
/// no voice came since (only silence was fed after it), so the final caption does not wait for a
/// whole pass after the hangover. A worker that dies is started again and the utterance retried once.
///
/// Thread rules: one thread at a time (leased from `RecognizerPool`); its state lives in a
/// `Mutex` that is never contended, so the compiler checks it is not shared some other way.
final class WhisperRecognizer: SpeechRecognizer {
    let language: String
    private struct State: ~Copyable {
        var worker: WhisperWorker?
        var samples: [Int16] = []
        /// The request in flight (its id), if any: a partial, or the pause's final pass.
        var inFlight: Int?
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
    private let start: @Sendable () throws(CaptionError) -> WhisperWorker
    /// Longest utterance recognised (Whisper's window is 30 s; the captioner cuts at 12 s).
    static let maxSamples = 16_000 * 28
    /// New audio needed before another partial is asked for.
    static let partialStepSamples = 16_000 / 2
    /// How long `end()` waits for the worker.
    static let replyTimeout = 20.0

    init(language: String, start: @escaping @Sendable () throws(CaptionError) -> WhisperWorker) throws(CaptionError) {
        self.language = language
        self.start = start
        state = Mutex(State(worker: try start()))
    }

    func begin() throws(CaptionError) {
        try state.withLock { (s) throws(CaptionError) in
            s.samples.removeAll(keepingCapacity: true)
            s.latest = ""
            s.asked = 0
            s.early = nil
            s.earlyText = nil
            // (A worker that died or went out of step since: a new one.)
            do { try drainInFlight(&s) } catch { try restart(&s) }
            if s.worker?.isAlive != true { try restart(&s) }
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
            if s.inFlight == nil, s.samples.count >= Self.partialStepSamples, !Self.endsQuiet(s.samples),
               s.samples.count - s.asked >= Self.partialStepSamples, let worker = s.worker {
                s.inFlight = try? ask(&s, worker, pass: .partial)
            }
            return s.latest
        }
    }

    func speechPaused() {
        state.withLock { s in
            poll(&s)
            guard s.early == nil, s.inFlight == nil, !s.samples.isEmpty, let worker = s.worker else { return }
            s.inFlight = try? ask(&s, worker, pass: .final)
            s.early = s.inFlight
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

    /// Reads a reply that came in since, without waiting: the newest guess, or the pause's final.
    private func poll(_ s: inout State) {
        guard let id = s.inFlight, let r = try? s.worker?.reply(timeout: 0) else { return }
        if r.id == id { s.inFlight = nil }
        if r.id == s.early { s.earlyText = r.error == nil ? (r.text ?? "") : nil }
        if let text = r.text, !text.isEmpty { s.latest = text }
    }

    /// The pause's final pass, when one was asked for and only silence came after it: its
    /// answer (waited for); nil when there is none to keep.
    private func earlyFinal(_ s: inout State) throws(CaptionError) -> String? {
        guard let id = s.early else { return nil }
        if let text = s.earlyText { return text }
        guard s.inFlight == id, let worker = s.worker else { return nil }
        s.inFlight = nil
        let r = try reply(id, from: worker)
        return r.error == nil ? (r.text ?? "") : nil
    }

    /// Sends the utterance so far to `worker` as a new request (not waiting for it): its id.
    private func ask(_ s: inout State, _ worker: WhisperWorker, pass: WhisperWorker.Pass) throws(CaptionError) -> Int {
        let id = s.nextID
        s.nextID += 1
        try worker.send(id: id, samples: s.samples, pass: pass)
        s.asked = s.samples.count
        if pass == .final { s.finalPasses += 1 }
        return id
    }

    private func recognise(_ s: inout State) throws(CaptionError) -> String {
        try drainInFlight(&s)
        guard let worker = s.worker else { throw .recognizer("whisper: no worker") }
        let id = try ask(&s, worker, pass: .final)
        let r = try reply(id, from: worker)
        if let e = r.error { throw .recognizer("whisper: \(e)") }
        return r.text ?? ""
    }

    /// Waits for the partial in flight (its answer is of no use now).
    private func drainInFlight(_ s: inout State) throws(CaptionError) {
        guard let id = s.inFlight, let worker = s.worker else { return }
        s.inFlight = nil
        _ = try reply(id, from: worker)
    }

    /// The reply to request `id` (earlier ones passed over), within `replyTimeout` each.
    private func reply(_ id: Int, from worker: WhisperWorker) throws(CaptionError) -> WhisperWorker.Reply {
        while let r = try worker.reply(timeout: Self.replyTimeout) {
            if r.id == id { return r }
        }
        throw .recognizer("whisper: no answer in \(Int(Self.replyTimeout)) s")
    }

    private func restart(_ s: inout State) throws(CaptionError) {
        s.worker?.close()
        s.worker = nil
        s.inFlight = nil
        s.worker = try start()
    }
}
