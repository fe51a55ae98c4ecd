import Foundation

/// Output helpers for the command-line front end: unbuffered writes to stdout and stderr.
enum Console {
    static func out(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    static func err(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

    /// Prints `callroom: message` on stderr and exits with `code` (2 for usage errors).
    static func fail(_ message: String, code: Int32 = 2) -> Never {
        err("callroom: \(message)")
        exit(code)
    }
}

/// Exit codes of `callroom` (documented in `callroom --help`).
enum ExitCode {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    static let connectionLost: Int32 = 3
}
