/// An offline speech recogniser for one utterance at a time, fed 16 kHz mono PCM.
///
/// The interface is small on purpose, so a stronger engine can replace PocketSphinx: an
/// utterance is `begin` → `feed`… (with `partial` whenever a caption should refresh) → `end`.
/// Thread rules: one thread at a time (the caller leases a recogniser from `RecognizerPool`).
public protocol SpeechRecognizer: AnyObject, Sendable {
    /// The language this recogniser's model is for (a BCP 47 tag, `en-US`).
    var language: String { get }
    /// Starts an utterance.
    func begin() throws(CaptionError)
    /// More of the utterance: 16 kHz mono samples.
    func feed(_ samples: UnsafeBufferPointer<Int16>) throws(CaptionError)
    /// The best guess so far (empty when nothing was recognised yet).
    func partial() -> String
    /// Ends the utterance and returns its final text (empty for noise).
    func end() throws(CaptionError) -> String
    /// The speaker has been quiet for a moment (said on every tick while they stay quiet): the
    /// utterance may end with the audio fed so far, and a recogniser whose final pass is slow may
    /// start on it now. Audio fed after this is not voice unless `speechResumed()` follows.
    func speechPaused()
    /// Voice again after `speechPaused()`: the utterance goes on.
    func speechResumed()
    /// A worker process's CPU seconds and resident memory (KiB) so far; nil for an in-process
    /// recogniser (benchmarks).
    var workerUsage: (cpuSeconds: Double, residentKiB: Int)? { get }
}

extension SpeechRecognizer {
    public var workerUsage: (cpuSeconds: Double, residentKiB: Int)? { nil }
    public func speechPaused() {}
    public func speechResumed() {}
}

/// Makes recognisers for a language: where the models are and what they cost to load.
public protocol SpeechRecognizerEngine: Sendable {
    /// The engine's name (`pocketsphinx`), for logs and transcript metadata.
    var name: String { get }
    /// The languages this engine has a model for, here.
    func languages() -> [String]
    /// A new recogniser for `language`: `CaptionError.noModel` when there is no model for it.
    func make(language: String) throws(CaptionError) -> SpeechRecognizer
}

/// Why captions could not be made.
public enum CaptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No model for this language on this machine (`available` lists those there are).
    case noModel(language: String, available: [String])
    /// The recogniser refused (a model that does not load, a decoder error).
    case recognizer(String)
    case cannotWrite(path: String, errno: Int32)

    public var description: String {
        switch self {
        case .noModel(let l, let a):
            return "no caption model for \"\(l)\" on this server" + (a.isEmpty ? " (none installed)" : " (available: \(a.joined(separator: ", ")))")
        case .recognizer(let m): return m
        case .cannotWrite(let p, let e): return "cannot write \(p): errno \(e)"
        }
    }
}
