import CallRoomTestSupport
import CallsAudio
@testable import CallsCaptions
import Foundation
import XCTest

/// The Moonshine engine's worker processes (Moonshine base on ONNX Runtime, the model prepared
/// by scripts/install-deps.sh at /opt/callroom/moonshine): `WorkerEngineChecks` on it, and the
/// engine said to be missing when its model is.
final class MoonshineEngineTests: XCTestCase {
    func engine() throws -> MoonshineEngine {
        let e = MoonshineEngine(python: ProcessInfo.processInfo.environment["CALLROOM_MOONSHINE_PYTHON"] ?? MoonshineEngine.defaultPython)
        try XCTSkipUnless(e.isInstalled, "the Moonshine engine is not installed (scripts/install-deps.sh)")
        return e
    }

    func checks() throws -> WorkerEngineChecks {
        let e = try engine()
        let script = try XCTUnwrap(MoonshineEngine.script)
        return WorkerEngineChecks(engine: e) { try RecognizerWorker(engine: e.name, python: e.python, script: script, modelDir: e.modelDir) }
    }

    func testItHearsReadSpeechWithPartialsOnTheWay() throws { try checks().hearsReadSpeechWithPartialsOnTheWay() }
    func testSilenceAndNoiseGiveNoCaption() throws { try checks().silenceAndNoiseGiveNoCaption() }
    func testAWorkerKilledMidUtteranceIsReplacedAndTheUtteranceRecognisedAgain() throws {
        try checks().aWorkerKilledMidUtteranceIsReplacedAndTheUtteranceRecognisedAgain()
    }
    func testAFinalPassStartedOnAPauseIsKeptUnlessTheSpeakerGoesOn() throws { try checks().aFinalPassStartedOnAPauseIsKeptUnlessTheSpeakerGoesOn() }
    func testAPoolsIdleWorkersEndWhenItIsDrained() throws { try checks().aPoolsIdleWorkersEndWhenItIsDrained() }
    func testTheWorkerAnswersPartialAndFinalPasses() throws { try checks().theWorkerAnswersPartialAndFinalPasses() }
    func testOnlyEnglishIsOffered() throws { try checks().onlyEnglishIsOffered() }

    /// A sentence with more silence after it than Moonshine was trained on (1.5 s: it answered
    /// nothing for this clip) is heard: the worker gives the model the voice and a quarter second
    /// around it.
    func testSilenceAfterTheWordsDoesNotSilenceThem() throws {
        let c = try checks()
        let clip = BuiltProducts.packageRoot + "/Resources/clips/grace.wav"
        let samples = try Resampler(from: 48_000, to: 16_000, quality: 10).process(try SoundFile.readMono48k(path: clip))
        let r = try c.recognizer()
        try r.begin()
        try c.feed(r, samples + [Int16](repeating: 0, count: 16_000 * 3 / 2))
        let heard = try r.end()
        XCTAssertLessThan(WordErrorRate.rate(reference: "Quick update from me: the compiler passes every test now, and I found one more bug. A real moth, this time.", hypothesis: heard), 0.5, heard)
    }

    /// Twelve seconds of someone talking on without a breath long enough to end the utterance
    /// (the ada clip looped, as the captioner's 12 s cut gives it): windows where Moonshine's
    /// first token is its end — it said nothing for these — or where it loops ("Good morning
    /// everyone." over and over: no caption) are heard, the worker trying again in two parts cut
    /// at a breath.
    func testALongStretchOfSpeechThatMoonshineEndsAtOnceIsHeardInParts() throws {
        let c = try checks()
        let clip = try Resampler(from: 48_000, to: 16_000, quality: 10)
            .process(try SoundFile.readMono48k(path: BuiltProducts.packageRoot + "/Resources/clips/ada.wav"))
        let looped = Array(repeating: clip, count: 4).flatMap { $0 }
        let said = Set(WordErrorRate.words("Good morning everyone. I finished the analytical engine notes yesterday, so the review can start today."))
        let r = try c.recognizer()
        // (Start and length in tenths of a second.)
        for (start, length) in [(4, 120), (20, 120), (24, 115), (28, 110), (56, 115), (56, 120)] {
            try r.begin()
            try c.feed(r, Array(looped[(start * 1_600)..<((start + length) * 1_600)]))
            let text = try r.end()
            XCTAssertGreaterThanOrEqual(said.intersection(WordErrorRate.words(text)).count, 10, "\(start), \(length): \(text)")
        }
    }

    /// A model directory without the prepared model: not installed (a cheap check), and why.
    func testAMissingModelIsSaidAndNotUsed() throws {
        let e = MoonshineEngine(python: try engine().python, modelDir: NSTemporaryDirectory() + "no-moonshine-\(getpid())")
        XCTAssertFalse(e.isInstalled)
        let why = try XCTUnwrap(e.unavailability())
        XCTAssertTrue(why.contains("encoder_model.onnx") && why.contains("--prepare"), why)
    }
}
