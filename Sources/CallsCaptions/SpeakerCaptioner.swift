#if canImport(Glibc)
import Glibc
#endif
import CallsAudio
import CallsCore

/// One caption of one speaker: a partial guess (replaced by the next one with the same `id`)
/// or the final text of an utterance. Times are milliseconds on the transcript's timeline.
public struct CaptionSegment: Sendable, Equatable {
    public var id: Int
    public var text: String
    public var isFinal: Bool
    public var startMs: Int64
    public var endMs: Int64
    public init(id: Int, text: String, isFinal: Bool, startMs: Int64, endMs: Int64) {
        self.id = id; self.text = text; self.isFinal = isFinal; self.startMs = startMs; self.endMs = endMs
    }
}

/// Tuning of the captioner (defaults measured on the bundled clips: see docs/benchmarks.md).
public struct CaptionTiming: Sendable, Equatable {
    /// Audio kept from before speech starts (the sender's voice flag trails the first phoneme).
    public var preRollMs: Int64 = 300
    /// Silence that ends an utterance.
    public var hangoverMs: Int64 = 600
    /// An utterance that has run this long ends at a shorter pause (`longHangoverMs`): a speaker
    /// who talks on with short breaths gets a final caption a sentence or two at a time, not one
    /// per `maxUtteranceMs` cut mid-word; nil: the hangover is always `hangoverMs`.
    public var longUtteranceMs: Int64?
    /// The silence that ends an utterance longer than `longUtteranceMs`.
    public var longHangoverMs: Int64 = 400
    /// An utterance longer than this is cut (its caption made final) so captions keep flowing.
    public var maxUtteranceMs: Int64 = 12_000
    /// How often a partial caption is refreshed while someone talks.
    public var partialEveryMs: Int64 = 500
    /// Silence after which the recogniser is told the speaker paused (`speechPaused()`), so a
    /// slow final pass can start before the hangover is over; nil: never.
    public var pauseHintMs: Int64?
    public init() {}

    /// The timing for engine `name` (`SpeechRecognizerEngine.name`). The worker engines'
    /// final pass takes a while (Whisper's ≈ 0.55 s whatever the utterance's length: it encodes
    /// a whole 30 s window; Moonshine's ≈ 0.06 s a second of speech), so it starts after 200 ms
    /// of silence (kept when no voice came before the end) and the final caption comes well
    /// within a second of speech whether the utterance ends after 400 or 600 ms. Utterances end
    /// after 600 ms — a short sentence cut off alone is misheard far more often than within its
    /// neighbours (docs/benchmarks.md) — or after 400 ms once 5 s long.
    public init(for engine: String) {
        self.init()
        if Self.workerEngines.contains(engine) {
            hangoverMs = 600
            longUtteranceMs = 5_000
            longHangoverMs = 400
            pauseHintMs = 200
        }
    }

    /// The engines whose recognisers are worker processes (`WorkerRecognizer`).
    public static let workerEngines: Set<String> = ["whisper", "moonshine"]

    /// The silence that ends an utterance that has had voice for `spokenMs`.
    func hangover(afterSpeakingMs spokenMs: Int64) -> Int64 {
        guard let long = longUtteranceMs, spokenMs >= long else { return hangoverMs }
        return min(hangoverMs, longHangoverMs)
    }
}

/// Turns one speaker's decoded audio into captions: speech is found from the sender's voice
/// flag (RFC 6464, or the frame's energy when a packet has none), resampled to 16 kHz with
/// SpeexDSP, and recognised an utterance at a time with a recogniser leased from the pool —
/// partial captions every `partialEveryMs`, a final one when the speaker pauses.
///
/// No clock of its own: `frame(…, atMs:)` and `tick(nowMs:)` carry time, so tests run it on a
/// virtual clock. Thread rules: one thread at a time (in the server, the speaker's lane in
/// `RoomTranscriber`). Recognition runs inside `frame` and `tick`, on that thread.
public final class SpeakerCaptioner {
    public let language: String
    private let pool: RecognizerPool
    private let timing: CaptionTiming
    private let emit: (CaptionSegment) -> Void
    private let resampler: Resampler
    private var scratch = [Int16](repeating: 0, count: 400)

    /// 16 kHz audio of the last `preRollMs` (idle) or of an utterance waiting for a recogniser.
    private var buffered: [Int16] = []
    private var recognizer: SpeechRecognizer?
    private var utterance: (id: Int, startMs: Int64)?
    private var lastVoiceMs: Int64 = 0
    private var lastFrameMs: Int64 = 0
    private var lastPartialMs: Int64 = 0
    private var lastPartial = ""
    /// Whether the recogniser was told the speaker paused (and not yet that they went on).
    private var pauseHinted = false
    private var nextID = 1
    /// Utterances that ended while every recogniser was busy: recognised, in order, as soon as
    /// one frees (on a later frame or tick), so a busy server captions late, not never.
    private var waiting: [(id: Int, startMs: Int64, endMs: Int64, samples: [Int16])] = []
    /// At most this much speech waits (oldest dropped past it: `dropped` counts them).
    public static let maxWaitingSamples = 16_000 * 60
    /// Utterances dropped because too much was waiting, and recogniser failures.
    public private(set) var dropped = 0
    public private(set) var failures: [String] = []

    public init(language: String, pool: RecognizerPool, timing: CaptionTiming = CaptionTiming(),
                emit: @escaping (CaptionSegment) -> Void) throws(CaptionError) {
        self.language = language
        self.pool = pool
        self.timing = timing
        self.emit = emit
        do { resampler = try Resampler(from: AudioFormat.sampleRate, to: 16_000, quality: 3) } catch {
            throw .recognizer("cannot resample to 16 kHz: \(error)")
        }
    }

    /// Whether an utterance is open now.
    public var isSpeaking: Bool { utterance != nil }

    /// One decoded 48 kHz frame that starts at `atMs`; `voice` is the sender's voice flag.
    public func frame(_ pcm: UnsafeBufferPointer<Int16>, voice: Bool?, atMs: Int64) {
        let isVoice = voice ?? LevelMeter.isVoice(dbfs: LevelMeter.rmsDBFS(pcm))
        let frameMs = Int64(pcm.count * 1000 / AudioFormat.sampleRate)
        if scratch.count < pcm.count / 3 + 16 { scratch = [Int16](repeating: 0, count: pcm.count / 3 + 16) }
        let n = scratch.withUnsafeMutableBufferPointer { resampler.process(pcm, into: $0) }
        lastFrameMs = atMs + frameMs
        if isVoice {
            lastVoiceMs = atMs + frameMs
            if pauseHinted {
                pauseHinted = false
                recognizer?.speechResumed()
            }
        }
        if utterance == nil {
            guard isVoice else {
                buffered.append(contentsOf: scratch[0..<n])
                let keep = Int(timing.preRollMs) * 16
                if buffered.count > keep { buffered.removeFirst(buffered.count - keep) }
                return
            }
            utterance = (nextID, max(0, atMs - Int64(buffered.count / 16)))
            nextID += 1
            lastPartialMs = atMs
            lastPartial = ""
        }
        scratch.withUnsafeBufferPointer { feed(UnsafeBufferPointer(rebasing: $0[0..<n])) }
        tick(nowMs: atMs + frameMs)
    }

    /// Time passes without audio (packets stop in DTX and when a speaker leaves): ends an
    /// utterance after the hangover, refreshes the partial caption.
    public func tick(nowMs: Int64) {
        if !waiting.isEmpty { recogniseWaiting() }
        guard let u = utterance else { return }
        if nowMs - lastVoiceMs >= timing.hangover(afterSpeakingMs: lastVoiceMs - u.startMs) { return finishUtterance(endMs: lastVoiceMs) }
        if nowMs - u.startMs >= timing.maxUtteranceMs { return finishUtterance(endMs: min(nowMs, lastFrameMs)) }
        if recognizer == nil { attachRecognizer() }
        if let after = timing.pauseHintMs, let r = recognizer, nowMs - lastVoiceMs >= after {
            pauseHinted = true
            r.speechPaused()
        }
        if let r = recognizer, nowMs - lastPartialMs >= timing.partialEveryMs {
            lastPartialMs = nowMs
            let text = r.partial()
            if !text.isEmpty, text != lastPartial, !Self.collapses(text, from: lastPartial) {
                lastPartial = text
                emit(CaptionSegment(id: u.id, text: text, isFinal: false, startMs: u.startMs, endMs: nowMs))
            }
        }
    }

    /// Whether a new guess has fewer than half the words of the one on screen: a recogniser that
    /// stopped early on this pass (Whisper's quick pass sometimes ends after a word), not a
    /// better reading — the caption would shrink to a word and grow back.
    static func collapses(_ new: String, from shown: String) -> Bool {
        WordErrorRate.words(new).count * 2 < WordErrorRate.words(shown).count
    }

    /// The speaker left or the transcription stops: the open utterance is made final, and what
    /// waits for a recogniser is recognised now (waiting for one, briefly, if it must).
    public func finish(nowMs: Int64) {
        if utterance != nil { finishUtterance(endMs: min(nowMs, max(lastVoiceMs, lastFrameMs))) }
        for _ in 0..<200 where !waiting.isEmpty {
            recogniseWaiting()
            if !waiting.isEmpty { usleep(10_000) }
        }
        dropped += waiting.count
        waiting.removeAll()
    }

    /// Utterances waiting, oldest first, while a recogniser can be had.
    private func recogniseWaiting() {
        while let w = waiting.first {
            // (Taken off the queue once a recogniser is had, failing or not: a failure drops this
            // utterance only, never the next one.)
            let r: SpeechRecognizer
            do {
                guard let leased = try pool.lease(language: language) else { return }
                r = leased
            } catch {
                failures.append(error.description)
                waiting.removeFirst()
                continue
            }
            waiting.removeFirst()
            defer { pool.giveBack(r) }
            do {
                try r.begin()
                try w.samples.withUnsafeBufferPointer { p throws(CaptionError) in try r.feed(p) }
                let text = try r.end()
                if !text.isEmpty { emit(CaptionSegment(id: w.id, text: text, isFinal: true, startMs: w.startMs, endMs: w.endMs)) }
            } catch {
                failures.append(error.description)
            }
        }
    }

    // MARK: Utterances

    private func feed(_ samples: UnsafeBufferPointer<Int16>) {
        if recognizer == nil { attachRecognizer() }
        guard let r = recognizer else {
            buffered.append(contentsOf: samples)
            return
        }
        do { try r.feed(samples) } catch { failures.append(error.description) }
    }

    /// Leases a recogniser and gives it the audio buffered so far.
    private func attachRecognizer() {
        guard utterance != nil, recognizer == nil else { return }
        do throws(CaptionError) {
            guard let r = try pool.lease(language: language) else { return }
            do throws(CaptionError) { try r.begin() } catch {
                pool.giveBack(r)  // (a recogniser that cannot begin is not kept from others)
                throw error
            }
            recognizer = r
            let pending = buffered
            buffered.removeAll(keepingCapacity: true)
            try pending.withUnsafeBufferPointer { p throws(CaptionError) in try r.feed(p) }
        } catch {
            failures.append(error.description)
        }
    }

    private func finishUtterance(endMs: Int64) {
        guard let u = utterance else { return }
        utterance = nil
        pauseHinted = false
        if recognizer == nil { attachRecognizer() }
        var text = ""
        var queued = false
        if let r = recognizer {
            do { text = try r.end() } catch { failures.append(error.description) }
            pool.giveBack(r)
            recognizer = nil
        } else {
            // Every recogniser stayed busy for the whole utterance: it waits its turn.
            waiting.append((u.id, u.startMs, max(endMs, u.startMs), buffered))
            queued = true
            while waiting.reduce(0, { $0 + $1.samples.count }) > Self.maxWaitingSamples {
                waiting.removeFirst()
                dropped += 1
            }
        }
        buffered.removeAll(keepingCapacity: true)
        if !queued && (!text.isEmpty || !lastPartial.isEmpty) {  // (a queued one's final comes when it is recognised)
            emit(CaptionSegment(id: u.id, text: text, isFinal: true, startMs: u.startMs, endMs: max(endMs, u.startMs)))
        }
        lastPartial = ""
    }
}
