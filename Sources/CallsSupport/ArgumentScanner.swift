/// A small, strict command-line scanner shared by `callroom` and `callroomd`: `--flag VALUE`,
/// `--flag=VALUE` and boolean `--flag`. Unknown flags and missing values are errors.
public struct ArgumentScanner: Sendable {
    public private(set) var values: [String: String] = [:]
    public private(set) var flags: Set<String> = []
    public private(set) var positionals: [String] = []

    /// Why the arguments were refused; the message is meant for the user.
    public struct UsageError: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        public init(_ message: String) { self.message = message }
    }

    /// - Parameters:
    ///   - valued: options that take a value (without the leading `--`).
    ///   - boolean: options that take none.
    public init(_ args: some Sequence<String>, valued: Set<String>, boolean: Set<String>) throws(UsageError) {
        var it = Array(args).makeIterator()
        while let a = it.next() {
            guard a.hasPrefix("--"), a.count > 2 else {
                if a == "-h" { flags.insert("help"); continue }
                positionals.append(a)
                continue
            }
            var name = String(a.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if valued.contains(name) {
                guard let v = inline ?? it.next() else { throw UsageError("option --\(name) needs a value") }
                values[name] = v
            } else if boolean.contains(name) {
                guard inline == nil else { throw UsageError("option --\(name) takes no value") }
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    public subscript(_ name: String) -> String? { values[name] }
    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// Splits `HOST:PORT` (IPv4 or name); the port must be 0…65535.
    public static func hostPort(_ s: String) throws(UsageError) -> (String, Int) {
        guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (0...65535).contains(port) else {
            throw UsageError("'\(s)' is not HOST:PORT")
        }
        let host = String(s[..<colon])
        guard !host.isEmpty else { throw UsageError("'\(s)' has no host") }
        return (host, port)
    }
}
