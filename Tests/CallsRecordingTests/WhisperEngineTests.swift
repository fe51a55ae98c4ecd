#if canImport(Glibc)
import Glibc
#endif
import CallRoomTestSupport
import CallsAudio
@testable import CallsCaptions
import Foundation
import XCTest

/// The Whisper engine's worker processes (faster-whisper, tiny.en, installed by
/// scripts/install-deps.sh at /opt/callroom/whisper): read human speech recognised nearly word
/// for word, partial guesses while audio comes in, nothing from silence or noise, and a worker
/// killed mid-utterance replaced with the utterance recognised once more.
final class WhisperEngineTests: XCTestCase {
    let librivox = "/usr/share/pocketsphinx/test/data/librivox"

    func engine() throws -> WhisperEngine {
        let e = WhisperEngine(python: ProcessInfo.processInfo.environment["CALLROOM_WHISPER_PYTHON"] ?? WhisperEngine.defaultPython)
        try XCTSkipUnless(e.isInstalled, "the Whisper engine is not installed (scripts/install-deps.sh)")
        return e
    }

    /// A LibriVox utterance (16 kHz, as the recogniser is fed) and its text.
    func utterance(_ id: String) throws -> (samples: [Int16], text: String) {
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

    func testItHearsReadSpeechWithPartialsOnTheWay() throws {
        let r = try engine().make(language: "en-US")
        let (samples, text) = try utterance("0870")
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
        XCTAssertGreaterThanOrEqual(partials.count, 2, "partial guesses while fed: \(partials)")
        let final = try r.end()
        let wer = WordErrorRate.rate(reference: text, hypothesis: final)
        XCTAssertLessThan(wer, 0.2, "\"\(final)\" for \"\(text)\"")
        XCTAssertEqual(r.workerUsage.map { $0.residentKiB > 50_000 }, true, "a worker process holds the model")
    }

    func testSilenceAndNoiseGiveNoCaption() throws {
        let r = try engine().make(language: "en-US")
        try r.begin()
        try feed(r, [Int16](repeating: 0, count: 16_000))
        XCTAssertEqual(try r.end(), "", "silence")
        var g = SystemRandomNumberGenerator()
        try r.begin()
        try feed(r, (0..<32_000).map { _ in Int16.random(in: -3000...3000, using: &g) })
        XCTAssertEqual(try r.end(), "", "white noise")
        // A 20 ms blip in silence: Whisper with timestamps hears "Thank you so much for watching,
        // see you in the next video, …" to its token limit; the length bound and the repetition
        // filter leave nothing.
        var blip = [Int16](repeating: 0, count: 11_200)
        for i in 4800..<5120 { blip[i] = Int16(9800 * sin(Double(i) * 0.2)) }
        try r.begin()
        try feed(r, blip)
        XCTAssertEqual(try r.end(), "", "a blip")
    }

    func testAWorkerKilledMidUtteranceIsReplacedAndTheUtteranceRecognisedAgain() throws {
        let r = try XCTUnwrap(try engine().make(language: "en-US") as? WhisperRecognizer)
        let (samples, text) = try utterance("0930")
        try r.begin()
        try feed(r, samples)
        let pid = try XCTUnwrap(r.workerPID)
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        let final = try r.end()
        XCTAssertLessThan(WordErrorRate.rate(reference: text, hypothesis: final), 0.3, "\"\(final)\" for \"\(text)\" after a restart")
        XCTAssertNotEqual(r.workerPID, pid, "a new worker")
        // And the next utterance goes to the new worker.
        try r.begin()
        try feed(r, samples)
        XCTAssertFalse(try r.end().isEmpty)
    }

    /// The final pass asked for on a pause is the utterance's final text when only silence
    /// followed (no second pass at the end); voice after the pause makes it a guess, and the end
    /// recognises the whole utterance again — both sentences (a final pass without timestamps
    /// left out the one after the 200 ms pause).
    func testAFinalPassStartedOnAPauseIsKeptUnlessTheSpeakerGoesOn() throws {
        let r = try XCTUnwrap(try engine().make(language: "en-US") as? WhisperRecognizer)
        let first = try utterance("0920"), second = try utterance("0930")
        let quiet = [Int16](repeating: 0, count: 16 * 200)
        try r.begin()
        try feed(r, first.samples + quiet)
        r.speechPaused()
        try feed(r, quiet)
        XCTAssertTrue(eventually(20, poll: 0.05) { !r.partial().isEmpty }, "the pause's pass answered")
        r.speechPaused()  // (said on every quiet tick: asked for once)
        let kept = try r.end()
        XCTAssertEqual(r.finalPasses, 1, "its answer kept: no pass at the end")
        XCTAssertLessThan(WordErrorRate.rate(reference: first.text, hypothesis: kept), 0.2, "\"\(kept)\" for \"\(first.text)\"")

        try r.begin()
        try feed(r, first.samples + quiet)
        r.speechPaused()
        r.speechResumed()
        try feed(r, second.samples + quiet)
        let whole = try r.end()
        XCTAssertEqual(r.finalPasses, 3, "the pause's pass was not kept: the whole utterance again")
        let text = first.text + " " + second.text
        XCTAssertLessThan(WordErrorRate.rate(reference: text, hypothesis: whole), 0.2, "\"\(whole)\" for \"\(text)\"")
    }

    func testAPoolsIdleWorkersEndWhenItIsDrained() throws {
        let pool = RecognizerPool(engine: try engine(), capacity: 2)
        let pid: pid_t
        do {
            let r = try XCTUnwrap(try pool.lease(language: "en-US") as? WhisperRecognizer)
            pid = try XCTUnwrap(r.workerPID)
            pool.giveBack(r)
        }
        XCTAssertEqual(kill(pid, 0), 0, "kept warm while idle")
        pool.drain()
        XCTAssertTrue(eventually(5) { kill(pid, 0) != 0 }, "the worker ended (and was reaped) with its recogniser")
        XCTAssertNotNil(try pool.lease(language: "en-US"), "made again on the next need")
    }

    /// The worker's two passes (a greedy partial, a beam-searched final) both hear the words.
    func testTheWorkerAnswersPartialAndFinalPasses() throws {
        let e = try engine()
        let (samples, text) = try utterance("0930")
        let worker = try WhisperWorker(python: e.python, script: try XCTUnwrap(WhisperEngine.script), modelDir: nil, threads: 1)
        defer { worker.close() }
        for (id, pass) in [(1, WhisperWorker.Pass.partial), (2, .final)] {
            try worker.send(id: id, samples: samples, pass: pass)
            let reply = try XCTUnwrap(try worker.reply(timeout: 30), "\(pass) pass answered")
            XCTAssertEqual(reply.id, id)
            XCTAssertNil(reply.error)
            let heard = try XCTUnwrap(reply.text)
            XCTAssertLessThanOrEqual(WordErrorRate.rate(reference: text, hypothesis: heard), 0.15, "\(pass): \(heard)")
        }
    }

    /// The quick pass's guess is cut where Whisper starts saying again what it just said (its
    /// loop on a second of audio); speech that says something twice in other words is kept.
    func testAQuickGuessIsCutWhereItLoops() throws {
        let e = try engine()
        let cases = [("Good morning. Good morning, good morning.", "Good morning."),
                     ("Quick up, get from. Quick up get from, Quick up", "Quick up, get from."),
                     ("Can a machine tell when it is talking to a person? Can a machine tell when it is tal",
                      "Can a machine tell when it is talking to a person?"),
                     ("I had had enough of it", "I had had enough of it"),
                     ("no no no, I said no", "no no no, I said no")]
        let program = "import importlib.util, json, sys\n"
            + "spec = importlib.util.spec_from_file_location('worker', sys.argv[1])\n"
            + "w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)\n"
            + "print(json.dumps([w.cut_loop(t) for t in json.loads(sys.argv[2])]))\n"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: e.python)
        p.arguments = ["-c", program, try XCTUnwrap(WhisperEngine.script),
                       String(decoding: try JSONSerialization.data(withJSONObject: cases.map(\.0)), as: UTF8.self)]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        XCTAssertEqual(try JSONSerialization.jsonObject(with: data) as? [String], cases.map(\.1))
    }

    func testOnlyEnglishIsOffered() throws {
        let e = try engine()
        XCTAssertEqual(e.languages(), ["en-US"])
        XCTAssertThrowsError(try e.make(language: "fr-FR")) { XCTAssertEqual($0 as? CaptionError, .noModel(language: "fr-FR", available: ["en-US"])) }
    }
}
