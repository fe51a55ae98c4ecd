import CPocketSphinx
import CallsCore
import Foundation
import Synchronization

/// PocketSphinx (CMU, Debian `libpocketsphinx-dev`) with its shipped models (Debian
/// `pocketsphinx-en-us`): `{modelRoot}/{lang}/{lang}` (acoustic model), `{lang}.lm.bin`
/// (language model) and `cmudict-{lang}.dict`, with `lang` the lower-cased tag (`en-us`).
/// A decoder costs ≈ 95 MB and 0.4 s to load, which is why `RecognizerPool` shares a few.
public struct PocketSphinxEngine: SpeechRecognizerEngine {
    public let name = "pocketsphinx"
    public let modelRoot: String
    public static let defaultModelRoot = "/usr/share/pocketsphinx/model"

    public init(modelRoot: String = PocketSphinxEngine.defaultModelRoot) { self.modelRoot = modelRoot }

    /// The files of `language`'s model, when all three are there.
    func files(_ language: String) -> (hmm: String, lm: String, dict: String)? {
        let l = language.lowercased()
        let dir = modelRoot + "/" + l
        let f = (hmm: dir + "/" + l, lm: dir + "/\(l).lm.bin", dict: dir + "/cmudict-\(l).dict")
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: f.hmm, isDirectory: &isDir), isDir.boolValue, fm.fileExists(atPath: f.lm), fm.fileExists(atPath: f.dict) else { return nil }
        return f
    }

    public func languages() -> [String] {
        let dirs = (try? FileManager.default.contentsOfDirectory(atPath: modelRoot)) ?? []
        return dirs.filter { files($0) != nil }.map(Self.tag).sorted()
    }

    /// `en-us` → `en-US`.
    static func tag(_ dir: String) -> String {
        let parts = dir.split(separator: "-")
        guard parts.count == 2 else { return dir }
        return parts[0].lowercased() + "-" + parts[1].uppercased()
    }

    public func make(language: String) throws(CaptionError) -> SpeechRecognizer {
        guard let f = files(language) else { throw .noModel(language: language, available: languages()) }
        return try PocketSphinxRecognizer(language: Self.tag(language.lowercased()), hmm: f.hmm, lm: f.lm, dict: f.dict)
    }
}

/// One PocketSphinx decoder. Owns it (freed on deinit). Thread rules: one thread at a time
/// (the pool leases it); the decoder lives in a `Mutex` that is never contended, so the
/// compiler checks that it is not shared some other way.
final class PocketSphinxRecognizer: SpeechRecognizer {
    let language: String
    /// The decoder and the samples being fed to it. A caller's samples are copied in sample by
    /// sample, so the compiler sees that no caller's pointer is kept with the decoder.
    private struct Decoder: ~Copyable {
        let handle: OpaquePointer
        var inUtterance = false
        let staging = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 4096)
        deinit { ps_free(handle); staging.deallocate() }
    }
    private let decoder: LockedState<Decoder>

    /// PocketSphinx logs to stderr unless told otherwise: once per process, it is silenced.
    private static let quiet: Void = { err_set_logfp(nil) }()

    init(language: String, hmm: String, lm: String, dict: String) throws(CaptionError) {
        _ = Self.quiet
        guard let config = Self.configuration(["-hmm", hmm, "-lm", lm, "-dict", dict, "-logfn", "/dev/null"]) else {
            throw .recognizer("pocketsphinx refused its configuration for \(language)")
        }
        guard let d = ps_init(config) else {
            cmd_ln_free_r(config)
            throw .recognizer("pocketsphinx could not load the \(language) model (\(hmm))")
        }
        cmd_ln_free_r(config)  // the decoder holds its own reference
        decoder = LockedState(Decoder(handle: d))
        self.language = language
    }

    /// PocketSphinx's configuration from command-line style arguments (nil when refused).
    private static func configuration(_ args: [String]) -> OpaquePointer? {
        // cmd_ln_init is variadic; cmd_ln_parse_r takes the same arguments as an argv.
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) }
        defer { for p in argv { free(p) } }
        return argv.withUnsafeMutableBufferPointer { cmd_ln_parse_r(nil, ps_args(), Int32(args.count), $0.baseAddress, 1) }
    }

    func begin() throws(CaptionError) {
        try decoder.withLock { (d) throws(CaptionError) in
            if d.inUtterance { _ = ps_end_utt(d.handle) }
            guard ps_start_utt(d.handle) >= 0 else { throw .recognizer("pocketsphinx could not start an utterance") }
            d.inUtterance = true
        }
    }

    func feed(_ samples: UnsafeBufferPointer<Int16>) throws(CaptionError) {
        guard samples.count > 0 else { return }
        try decoder.withLock { (d) throws(CaptionError) in
            guard d.inUtterance else { return }
            var start = 0
            while start < samples.count {
                let n = min(d.staging.count, samples.count - start)
                for i in 0..<n { d.staging[i] = samples[start + i] }
                guard ps_process_raw(d.handle, d.staging.baseAddress, n, 0, 0) >= 0 else { throw .recognizer("pocketsphinx could not process audio") }
                start += n
            }
        }
    }


    func partial() -> String {
        decoder.withLock { d in
            guard d.inUtterance else { return "" }
            var score: Int32 = 0
            return ps_get_hyp(d.handle, &score).map { String(cString: $0) } ?? ""
        }
    }

    func end() throws(CaptionError) -> String {
        try decoder.withLock { (d) throws(CaptionError) -> String in
            guard d.inUtterance else { return "" }
            d.inUtterance = false
            guard ps_end_utt(d.handle) >= 0 else { throw .recognizer("pocketsphinx could not end an utterance") }
            var score: Int32 = 0
            return ps_get_hyp(d.handle, &score).map { String(cString: $0) } ?? ""
        }
    }
}
