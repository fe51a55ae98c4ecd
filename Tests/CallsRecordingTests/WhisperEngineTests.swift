@testable import CallsCaptions
import Foundation
import XCTest

/// The Whisper engine's worker processes (faster-whisper, tiny.en, installed by
/// scripts/install-deps.sh at /opt/callroom/whisper): `WorkerEngineChecks` on it.
final class WhisperEngineTests: XCTestCase {
    func checks() throws -> WorkerEngineChecks {
        let e = WhisperEngine(python: ProcessInfo.processInfo.environment["CALLROOM_WHISPER_PYTHON"] ?? WhisperEngine.defaultPython)
        try XCTSkipUnless(e.isInstalled, "the Whisper engine is not installed (scripts/install-deps.sh)")
        let script = try XCTUnwrap(WhisperEngine.script)
        return WorkerEngineChecks(engine: e) { try RecognizerWorker(engine: e.name, python: e.python, script: script, modelDir: nil) }
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
}
