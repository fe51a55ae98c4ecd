import CallsTransport
import Foundation

/// A child process for integration tests: captures stdout lines and stderr, writes stdin,
/// waits for lines with a timeout, and is always stopped on deinit (SIGTERM, then SIGKILL).
public final class ManagedProcess: @unchecked Sendable {
    public let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let lock = NSLock()
    private var lines: [String] = []
    private var errText = Data()

    /// Each pipe reached end of file (set by its reader).
    private var stdoutEnded = false
    private var stderrEnded = false

    /// `nullInput`: stdin is /dev/null (as a CI runner gives it), not a pipe the test writes.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, nullInput: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let e = environment { process.environment = ProcessInfo.processInfo.environment.merging(e) { $1 } }
        process.standardInput = nullInput ? FileHandle.nullDevice : stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        // (Reader threads, not readabilityHandler: see DescriptorReader.)
        let out = stdoutPipe.fileHandleForReading, err = stderrPipe.fileHandleForReading
        DescriptorReader.startLines(out.fileDescriptor, name: "test.stdout", keeping: out) { [weak self] event in
            guard let self else { return }
            self.lock.withLock {
                switch event {
                case .line(let line): self.lines.append(line)
                case .end(let tail):  // end of file: the process closed its stdout (it exited)
                    if !tail.isEmpty { self.lines.append(tail) }
                    self.stdoutEnded = true
                }
            }
        }
        DescriptorReader.start(err.fileDescriptor, name: "test.stderr", keeping: err) { [weak self] chunk in
            guard let self else { return }
            self.lock.withLock {
                if let chunk { self.errText.append(contentsOf: chunk) } else { self.stderrEnded = true }
            }
        }
        try process.run()
    }

    deinit {
        if process.isRunning {
            // SIGTERM, then SIGKILL after 5 s: a stuck child must not hold the suite up.
            process.terminate()
            eventually(5, poll: 0.02) { !process.isRunning }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        // Always: Foundation keeps a Process that was never waited for — and its three pipes —
        // for the rest of the suite (it once reached ~1,000 descriptors; PostgreSQL then refused).
        process.waitUntilExit()
    }

    /// Every stdout line so far.
    public var output: [String] { lock.lock(); defer { lock.unlock() }; return lines }
    public var errorOutput: String { lock.lock(); defer { lock.unlock() }; return String(decoding: errText, as: UTF8.self) }

    /// Waits until a stdout line satisfies `match`; returns it, or nil on timeout.
    public func waitForLine(timeout: TimeInterval = 10, _ match: (String) -> Bool) -> String? {
        var seen = 0, ended = false
        let found = eventuallyValue(timeout, poll: 0.02) { () -> String? in
            let now = output
            if let l = now[seen...].first(where: match) { return l }
            seen = now.count
            ended = !process.isRunning && output.count == seen
            return ended ? "" : nil
        }
        return ended ? nil : found
    }

    public func send(_ line: String) {
        stdinPipe.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    public func closeInput() { try? stdinPipe.fileHandleForWriting.close() }

    /// Waits for exit; returns the status, or nil on timeout. After an exit, also waits (up to
    /// 2 s) until its output has been read to the end, so `output` holds every line it printed.
    public func wait(timeout: TimeInterval = 10) -> Int32? {
        eventually(timeout, poll: 0.02) { !process.isRunning }
        guard !process.isRunning else { return nil }
        process.waitUntilExit()
        eventually(2, poll: 0.005) { lock.withLock({ stdoutEnded && stderrEnded }) }
        return process.terminationStatus
    }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Every thread's stack of a process that is still running (gdb, where installed), for the
    /// message of a test that found it stuck; says why when there is none.
    public func stackDump() -> String {
        guard process.isRunning else { return "(exited with \(process.terminationStatus))" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return "(no gdb: no stacks)" }
        let gdb = Process()
        gdb.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
        gdb.arguments = ["-p", "\(process.processIdentifier)", "-batch", "-ex", "thread apply all bt 25"]
        let out = Pipe()
        gdb.standardOutput = out
        gdb.standardError = FileHandle.nullDevice
        do { try gdb.run() } catch { return "(gdb: \(error))" }
        let text = out.fileHandleForReading.readDataToEndOfFile()
        gdb.waitUntilExit()
        return String(decoding: text, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("#") || $0.hasPrefix("Thread") }.joined(separator: "\n")
    }
    public var pid: Int32 { process.processIdentifier }
}

/// Where the package's built executables are (next to the test bundle).
public enum BuiltProducts {
    public static var directory: String {
        let candidates = [CommandLine.arguments.first, Bundle.main.executablePath].compactMap { $0 }
        for c in candidates {
            var dir = URL(fileURLWithPath: c).deletingLastPathComponent()
            for _ in 0..<4 {
                if FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("callroomd").path) { return dir.path }
                dir = dir.deletingLastPathComponent()
            }
        }
        return packageRoot + "/.build/debug"
    }

    /// The repository's root directory (for files under Resources/).
    public static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    public static func path(_ name: String) -> String { directory + "/" + name }
}

/// A fresh temporary directory, removed when `remove()` is called.
public struct TemporaryDirectory {
    public let path: String
    public init(_ prefix: String = "callroom-test") {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    /// Removes the directory and everything in it, even while a process that is stopping (a
    /// daemon told to exit deletes its pid file) removes files of its own: Foundation's
    /// `removeItem` gives up at the first entry that vanished under it, so it is tried again.
    public func remove() {
        for _ in 0..<5 where FileManager.default.fileExists(atPath: path) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
    public func file(_ name: String) -> String { path + "/" + name }
}
