import Foundation

/// The server's structured log, on stderr, as text or JSON lines. Never pass secrets in
/// `fields`: callers log ids, never keys or tokens. Safe from any thread.
public final class ServerLog: Sendable {
    public enum Format: String, Sendable { case text, json }
    public enum Level: Int, Sendable, Comparable {
        case debug = 0, info, warn, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warn", "warning": self = .warn
            case "error": self = .error
            default: return nil
            }
        }
    }

    public let format: Format
    public let level: Level
    private let lock = NSLock()
    /// Where lines go instead of stderr (tests read the log this way).
    private let sink: (@Sendable (String) -> Void)?

    public init(format: Format = .text, level: Level = .info, sink: (@Sendable (String) -> Void)? = nil) {
        self.format = format
        self.level = level
        self.sink = sink
    }

    public func debug(_ m: String, _ f: [String: String] = [:]) { write(.debug, m, f) }
    public func info(_ m: String, _ f: [String: String] = [:]) { write(.info, m, f) }
    public func warn(_ m: String, _ f: [String: String] = [:]) { write(.warn, m, f) }
    public func error(_ m: String, _ f: [String: String] = [:]) { write(.error, m, f) }

    /// One line at `l` (what the runners do with their cores' log effects).
    public func write(_ l: Level, _ message: String, _ fields: [String: String]) {
        guard l >= level else { return }
        let ts = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        let name = ["debug", "info", "warn", "error"][l.rawValue]
        let line: String
        switch format {
        case .text:
            let kv = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = "\(ts) \(name.uppercased()) \(message)\(kv.isEmpty ? "" : " " + kv)\n"
        case .json:
            var parts = ["\"ts\":\(JSONText.quote(ts))", "\"level\":\"\(name)\"", "\"msg\":\(JSONText.quote(message))"]
            for (k, v) in fields.sorted(by: { $0.key < $1.key }) { parts.append("\(JSONText.quote(k)):\(JSONText.quote(v))") }
            line = "{" + parts.joined(separator: ",") + "}\n"
        }
        lock.lock()
        if let sink { sink(line) } else { DescriptorWriter.write(STDERR_FILENO, line) }  // a closed stderr drops the line, never the server
        lock.unlock()
    }
}
