import Foundation
import XCTest

/// A `callroomd` process on loopback with the URL, app id and keys it printed at start.
public final class CallroomdProcess {
    public let process: ManagedProcess
    public let url: String
    public let appId: String
    public let apiKey: String
    public let authKey: String
    /// Everything it printed on stdout so far.
    public var output: [String] { process.output }


    /// Starts `callroomd --listen LISTEN --data-dir DIR` plus `extra` arguments; with a
    /// `launcher` (an absolute path and its arguments, e.g. `/usr/bin/prlimit --nofile=…`),
    /// through it.
    public init(dataDir: String, listen: String = "127.0.0.1:0", extra: [String] = [], launcher: [String] = []) throws {
        let arguments = [BuiltProducts.path("callroomd"), "--listen", listen, "--data-dir", dataDir] + extra
        let command = launcher + arguments
        process = try ManagedProcess(command[0], Array(command.dropFirst()))
        guard let line = process.waitForLine(timeout: 15, { $0.hasPrefix("callroomd listening on http") }) else {
            throw TestFailure("callroomd did not start: \(process.errorOutput)")
        }
        let words = line.split(separator: " ").map(String.init)
        url = words[3]
        appId = words.last ?? ""
        let output = process.output
        func key(_ name: String) -> String {
            output.first { $0.contains(name) }?.split(separator: " ").last.map(String.init) ?? ""
        }
        apiKey = key("apiKey")
        authKey = key("authKey")
    }

    /// Puts data directory `source`'s keys.json into `dataDir` (made 0700 if missing, an
    /// earlier keys.json replaced): another node of the same cluster, which callroomd refuses to
    /// join with keys of its own.
    public static func shareKeys(from source: String, into dataDir: String) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if fm.fileExists(atPath: dataDir + "/keys.json") { try fm.removeItem(atPath: dataDir + "/keys.json") }
        try fm.copyItem(atPath: source + "/keys.json", toPath: dataDir + "/keys.json")
    }

    /// When the first log line (on stderr) holding all `words` was written, as its timestamp
    /// (`2026-12-06T16:07:23.909Z`: compared as text). Lines from different queues can reach the
    /// log out of order; their times say what came first.
    public func loggedAt(_ words: String...) -> String? {
        process.errorOutput.split(separator: "\n").first { line in words.allSatisfy { line.contains($0) } }.map { String($0.prefix(24)) }
    }

    /// Checks that the log says the call ended before `uid` left it (`call_ended`, then
    /// `participant left … uid=UID`, by the lines' times): hanging up ends the call first.
    public func assertCallEndedBefore(_ uid: String, file: StaticString = #filePath, line: UInt = #line) {
        let ended = loggedAt("call call_ended"), gone = loggedAt("participant left", "uid=\(uid)")
        XCTAssertNotNil(ended, process.errorOutput, file: file, line: line)
        XCTAssertLessThanOrEqual(ended ?? "~", gone ?? "", "the call ended before \(uid) left: \(process.errorOutput)", file: file, line: line)
    }

    /// SIGTERM and the exit status.
    public func stop() -> Int32? {
        process.signal(SIGTERM)
        return process.wait()
    }
}
