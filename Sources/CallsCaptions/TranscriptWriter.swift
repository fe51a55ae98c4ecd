import Foundation

/// One line of a transcript: who spoke, when (seconds from the transcript's start), what.
public struct TranscriptSegment: Codable, Sendable, Equatable {
    public struct Speaker: Codable, Sendable, Equatable {
        public var uid: String
        public var pid: String
        public var name: String
        public init(uid: String, pid: String, name: String) { self.uid = uid; self.pid = pid; self.name = name }
    }
    public var speaker: Speaker
    public var start: Double
    public var end: Double
    public var text: String
    public init(speaker: Speaker, start: Double, end: Double, text: String) {
        self.speaker = speaker; self.start = start; self.end = end; self.text = text
    }
}

/// The stored JSON transcript (`{tid}.json`).
public struct TranscriptDocument: Codable, Sendable, Equatable {
    public var tid: String
    public var sessionId: String
    public var language: String
    public var engine: String
    /// When the transcript starts (epoch ms); segment times count from here.
    public var startedAt: Int64
    public var segments: [TranscriptSegment]
}

/// Writes a transcript as it is spoken: every final caption is appended at once to `{tid}.vtt`
/// (WebVTT, a cue per utterance with its speaker as the voice) and to `{tid}.jsonl` (one segment
/// a line), so a crash keeps everything said up to its last caption; `finish` (or `finalise`
/// after a crash) writes `{tid}.json` from the lines. Files are 0600.
///
/// Thread rules: one thread at a time (the transcriber's).
public final class TranscriptWriter {
    public let vttPath: String
    public let jsonPath: String
    /// `{tid}.jsonl`: the captions as they came, from which the JSON document is written.
    public let linesPath: String
    private let header: TranscriptDocument
    private var segments: [TranscriptSegment] = []
    private let vtt: FileHandle
    private let lines: FileHandle

    /// The files a transcript `{tid}` has, by their suffix.
    public static let fileSuffixes = [".vtt", ".json", ".jsonl"]

    public init(dir: String, tid: String, sessionId: String, language: String, engine: String, startedAt: Int64) throws(CaptionError) {
        vttPath = dir + "/\(tid).vtt"
        jsonPath = dir + "/\(tid).json"
        linesPath = dir + "/\(tid).jsonl"
        header = TranscriptDocument(tid: tid, sessionId: sessionId, language: language, engine: engine, startedAt: startedAt, segments: [])
        func open(_ path: String, _ first: Data) throws(CaptionError) -> FileHandle {
            guard FileManager.default.createFile(atPath: path, contents: first, attributes: [.posixPermissions: 0o600]),
                  let h = FileHandle(forWritingAtPath: path) else { throw .cannotWrite(path: path, errno: errno) }
            h.seekToEndOfFile()
            return h
        }
        var meta = header
        meta.segments = []
        let head = (try? JSONEncoder().encode(meta)) ?? Data()
        vtt = try open(vttPath, Data("WEBVTT - \(Self.cueSafe(sessionId))\n\n".utf8))
        lines = try open(linesPath, head + Data("\n".utf8))
    }

    /// Appends one final caption (written through at once).
    public func append(_ s: TranscriptSegment) throws(CaptionError) {
        guard !s.text.isEmpty else { return }
        segments.append(s)
        let cue = "\(segments.count)\n\(Self.time(s.start)) --> \(Self.time(max(s.end, s.start + 0.001)))\n<v \(Self.cueSafe(s.speaker.name))>\(Self.cueSafe(s.text))\n\n"
        do {
            try vtt.write(contentsOf: Data(cue.utf8))
            try lines.write(contentsOf: (try JSONEncoder().encode(s)) + Data("\n".utf8))
        } catch {
            throw .cannotWrite(path: vttPath, errno: (error as NSError).code == 0 ? EIO : Int32((error as NSError).code))
        }
    }

    public var count: Int { segments.count }

    /// Closes the live files and writes the JSON document.
    public func finish() throws(CaptionError) -> TranscriptDocument {
        try? vtt.close()
        try? lines.close()
        return try Self.finalise(linesPath: linesPath)
    }

    /// Writes `{tid}.json` from `{tid}.jsonl` (after a crash: everything up to the last caption).
    @discardableResult
    public static func finalise(linesPath: String) throws(CaptionError) -> TranscriptDocument {
        let doc = try document(linesPath: linesPath)
        let json = (linesPath as NSString).deletingPathExtension + ".json"
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let out = try? enc.encode(doc),
              FileManager.default.createFile(atPath: json, contents: out, attributes: [.posixPermissions: 0o600]) else {
            throw .cannotWrite(path: json, errno: errno)
        }
        return doc
    }

    /// The transcript so far, from `{tid}.jsonl` (a crash can cut the last line short: every
    /// whole line is kept).
    public static func document(linesPath: String) throws(CaptionError) -> TranscriptDocument {
        guard let data = FileManager.default.contents(atPath: linesPath) else { throw .cannotWrite(path: linesPath, errno: ENOENT) }
        let rows = data.split(separator: UInt8(ascii: "\n"))
        guard let first = rows.first, var doc = try? JSONDecoder().decode(TranscriptDocument.self, from: Data(first)) else {
            throw .cannotWrite(path: linesPath, errno: EINVAL)
        }
        doc.segments = rows.dropFirst().compactMap { try? JSONDecoder().decode(TranscriptSegment.self, from: Data($0)) }
        return doc
    }

    /// `HH:MM:SS.mmm`.
    static func time(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        return String(format: "%02d:%02d:%02d.%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }

    /// Text that cannot break a cue: one line, no `<`/`>` (so no tags and no `-->`).
    static func cueSafe(_ s: String) -> String {
        s.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
            .replacingOccurrences(of: "<", with: "‹").replacingOccurrences(of: ">", with: "›")
    }
}
