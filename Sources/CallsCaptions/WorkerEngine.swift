import Foundation

/// An engine whose recognisers are worker processes (`WorkerRecognizer` over a
/// `RecognizerWorker`): a Python interpreter running one of this module's worker scripts with a
/// model. English only, as both models are. The engines are values; any thread.
protocol WorkerEngine: SpeechRecognizerEngine {
    /// The interpreter of the engine's virtual environment.
    var python: String { get }
    /// The worker script's path in this module's resources (nil: missing).
    static var script: String? { get }
    /// The model directory given to the worker (nil: its default).
    var workerModelDir: String? { get }
    /// Variables added to the worker's environment (its thread count).
    var workerEnvironment: [String: String] { get }
}

extension WorkerEngine {
    static var languagesOffered: [String] { ["en-US"] }

    public func languages() -> [String] { Self.languagesOffered }

    public func make(language: String) throws(CaptionError) -> SpeechRecognizer {
        guard Self.languagesOffered.contains(where: { $0.lowercased() == language.lowercased() }) else {
            throw .noModel(language: language, available: Self.languagesOffered)
        }
        guard let script = Self.script else { throw .recognizer("\(name): the worker script is missing") }
        let engine = name, python = python, modelDir = workerModelDir, environment = workerEnvironment
        return try WorkerRecognizer(engine: engine, language: "en-US") { () throws(CaptionError) -> RecognizerWorker in
            try RecognizerWorker(engine: engine, python: python, script: script, modelDir: modelDir, environment: environment)
        }
    }
}
