#if canImport(Glibc)
import Glibc
#endif
import CallRoomTestSupport
import CallsAudio
@testable import CallsCaptions
import Foundation
import XCTest

/// What every worker engine (Whisper, Moonshine) must do, checked by `WhisperEngineTests` and
/// `MoonshineEngineTests` on their own engine: read human speech recognised nearly word for word,
/// partial guesses while audio comes in, nothing from silence or noise, a worker killed
/// mid-utterance replaced with the utterance recognised once more, the pause's final pass kept,
/// idle workers ended with their pool, both passes answered.
struct WorkerEngineChecks {
    let engine: SpeechRecognizerEngine
    /// A worker of the engine, started directly.
    let worker: () throws -> RecognizerWorker
    static let librivox = "/usr/share/pocketsphinx/test/data/librivox"

    /// A LibriVox utterance (16 kHz, as the recogniser is fed) and its text.
    static func utterance(_ id: String) throws -> (samples: [Int16], text: String) {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: librivox + "/transcription"), "needs pocketsphinx-testdata")
        let pcm48 = try SoundFile.readMono48k(path: librivox + "/sense_and_sensibility_01_austen_64kb-\(id).wav")
        let samples = try Resampler(from: 48_000, to: 16_000, quality: 10).process(pcm48)
        let lines = try String(contentsOfFile: librivox + "/transcription", encoding: .utf8)
        let line = try XCTUnwrap(lines.split(separator: "\n").first { $0.contains("-\(id))") })
        let text = line.replacingOccurrences(of: "<s>", with: "").replacingOccurrences(of: "</s>", with: "")
            .split(separator: "(").first.map(String.init) ?? ""
        return (samples, text)
    }

    func feed(_ r: SpeechRecognizer, _ samples: [Int16]) throws {
        try samples.withUnsafeBufferPointer { p throws(CaptionError) in try r.feed(p) }
    }

    func recognizer() throws -> WorkerRecognizer {
        try XCTUnwrap(try engine.make(language: "en-US") as? WorkerRecognizer)
    }

    func hearsReadSpeechWithPartialsOnTheWay() throws {
        let r = try recognizer()
        let (samples, text) = try Self.utterance("0870")
        try r.begin()
        // Fed a second at a time: a new partial guess comes for each while it is fed.
        var partials: [String] = []
        for chunk in stride(from: 0, to: samples.count, by: 16_000) {
            try feed(r, Array(samples[chunk..<min(samples.count, chunk + 16_000)]))
            _ = eventually(5, poll: 0.05) {
                let p = r.partial()
                guard !p.isEmpty, p != partials.last else { return false }
                partials.append(p)
                return true
            }
        }
        XCTAssertGreaterThanOrEqual(partials.count, 2, "\(engine.name): partial guesses while fed: \(partials)")
        let final = try r.end()
        let wer = WordErrorRate.rate(reference: text, hypothesis: final)
        XCTAssertLessThan(wer, 0.2, "\(engine.name): \"\(final)\" for \"\(text)\"")
        XCTAssertEqual(r.workerUsage.map { $0.residentKiB > 50_000 }, true, "a worker process holds the model")
    }

    func silenceAndNoiseGiveNoCaption() throws {
        let r = try recognizer()
        try r.begin()
        try feed(r, [Int16](repeating: 0, count: 16_000))
        XCTAssertEqual(try r.end(), "", "\(engine.name): silence")
        var g = SystemRandomNumberGenerator()
        try r.begin()
        try feed(r, (0..<32_000).map { _ in Int16.random(in: -3000...3000, using: &g) })
        XCTAssertEqual(try r.end(), "", "\(engine.name): white noise")
        // A 20 ms blip in silence: Whisper with timestamps hears "Thank you so much for watching,
        // see you in the next video, …" to its token limit; the length bound and the repetition
        // filter leave nothing.
        var blip = [Int16](repeating: 0, count: 11_200)
        for i in 4800..<5120 { blip[i] = Int16(9800 * sin(Double(i) * 0.2)) }
        try r.begin()
        try feed(r, blip)
        XCTAssertEqual(try r.end(), "", "\(engine.name): a blip")
    }

    func aWorkerKilledMidUtteranceIsReplacedAndTheUtteranceRecognisedAgain() throws {
        let r = try recognizer()
        let (samples, text) = try Self.utterance("0930")
        try r.begin()
        try feed(r, samples)
        let pid = try XCTUnwrap(r.workerPID)
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        let final = try r.end()
        XCTAssertLessThan(WordErrorRate.rate(reference: text, hypothesis: final), 0.3, "\(engine.name): \"\(final)\" for \"\(text)\" after a restart")
        XCTAssertNotEqual(r.workerPID, pid, "a new worker")
        // And the next utterance goes to the new worker.
        try r.begin()
        try feed(r, samples)
        XCTAssertFalse(try r.end().isEmpty)
    }

    /// The final pass asked for on a pause is the utterance's final text when only silence
    /// followed (no second pass at the end); voice after the pause makes it a guess, and the end
    /// recognises the whole utterance again — both sentences (Whisper's final pass without
    /// timestamps left out the one after the 200 ms pause).
    func aFinalPassStartedOnAPauseIsKeptUnlessTheSpeakerGoesOn() throws {
        let r = try recognizer()
        let first = try Self.utterance("0920"), second = try Self.utterance("0930")
        let quiet = [Int16](repeating: 0, count: 16 * 200)
        try r.begin()
        try feed(r, first.samples + quiet)
        r.speechPaused()
        try feed(r, quiet)
        XCTAssertTrue(eventually(20, poll: 0.05) { !r.partial().isEmpty }, "the pause's pass answered")
        r.speechPaused()  // (said on every quiet tick: asked for once)
        let kept = try r.end()
        XCTAssertEqual(r.finalPasses, 1, "its answer kept: no pass at the end")
        XCTAssertLessThan(WordErrorRate.rate(reference: first.text, hypothesis: kept), 0.2, "\(engine.name): \"\(kept)\" for \"\(first.text)\"")

        try r.begin()
        try feed(r, first.samples + quiet)
        r.speechPaused()
        r.speechResumed()
        try feed(r, second.samples + quiet)
        let whole = try r.end()
        XCTAssertEqual(r.finalPasses, 3, "the pause's pass was not kept: the whole utterance again")
        let text = first.text + " " + second.text
        XCTAssertLessThan(WordErrorRate.rate(reference: text, hypothesis: whole), 0.2, "\(engine.name): \"\(whole)\" for \"\(text)\"")

        // A partial in flight when the speaker pauses: the pause's pass is asked for at once,
        // behind it, not after it.
        try r.begin()
        try feed(r, Array(first.samples.prefix(16_000 * 3)))
        _ = r.partial()
        try feed(r, quiet)
        r.speechPaused()
        XCTAssertEqual(r.finalPasses, 4, "the pause's pass sent behind the partial")
        let cut = try r.end()
        XCTAssertEqual(r.finalPasses, 4, "and kept")
        XCTAssertFalse(cut.isEmpty)
    }

    func aPoolsIdleWorkersEndWhenItIsDrained() throws {
        let pool = RecognizerPool(engine: engine, capacity: 2)
        let pid: pid_t
        do {
            let r = try XCTUnwrap(try pool.lease(language: "en-US") as? WorkerRecognizer)
            pid = try XCTUnwrap(r.workerPID)
            pool.giveBack(r)
        }
        XCTAssertEqual(kill(pid, 0), 0, "kept warm while idle")
        pool.drain()
        XCTAssertTrue(eventually(5) { kill(pid, 0) != 0 }, "the worker ended (and was reaped) with its recogniser")
        XCTAssertNotNil(try pool.lease(language: "en-US"), "made again on the next need")
    }

    /// The worker's two passes (a partial, a final) both hear the words; a request it cannot
    /// parse ends it (callroomd then starts another).
    func theWorkerAnswersPartialAndFinalPasses() throws {
        let (samples, text) = try Self.utterance("0930")
        let worker = try worker()
        defer { worker.close() }
        for (id, pass) in [(1, RecognizerWorker.Pass.partial), (2, .final)] {
            try worker.send(id: id, samples: samples, pass: pass)
            let reply = try XCTUnwrap(try worker.reply(timeout: 30), "\(pass) pass answered")
            XCTAssertEqual(reply.id, id)
            XCTAssertNil(reply.error)
            let heard = try XCTUnwrap(reply.text)
            XCTAssertLessThanOrEqual(WordErrorRate.rate(reference: text, hypothesis: heard), 0.15, "\(engine.name) \(pass): \(heard)")
        }
    }

    func onlyEnglishIsOffered() throws {
        XCTAssertEqual(engine.languages(), ["en-US"])
        XCTAssertThrowsError(try engine.make(language: "fr-FR")) { XCTAssertEqual($0 as? CaptionError, .noModel(language: "fr-FR", available: ["en-US"])) }
    }
}
