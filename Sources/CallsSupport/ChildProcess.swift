import Foundation

/// Short helper programs (a clipboard tool, a desktop notification) run so that nothing of them
/// stays behind. Foundation's `Process` on Linux keeps the object, its pipes and their
/// descriptors until `waitUntilExit()` has run — polling `isRunning` alone leaked three
/// descriptors a run — so every path here ends in it, and a program that overstays its time is
/// killed first.
///
/// Thread rules: any thread; `run` blocks the caller up to its timeout.
public enum ChildProcess {
    /// The executable `tool` names on `path` (a `PATH` value), or nil.
    public static func find(_ tool: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        (path ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `executable` with `arguments`, `input` on its standard input (none: /dev/null), for
    /// at most `timeout` seconds. Its exit status (nil when it could not start or was killed for
    /// overstaying) and what it printed on standard output.
    public static func run(_ executable: String, _ arguments: [String], input: String? = nil,
                           timeout: TimeInterval = 2) -> (status: Int32?, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let out = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = input == nil ? FileHandle.nullDevice : inp
        do { try p.run() } catch { return (nil, "") }
        if let input {
            DescriptorWriter.write(inp.fileHandleForWriting.fileDescriptor, input)  // a tool that quit early is no crash
            try? inp.fileHandleForWriting.close()
        }
        // Read on a thread of its own: a tool that fills the pipe would otherwise never exit.
        let collected = Locked(Data())
        let done = DispatchSemaphore(value: 0)
        let reading = Thread {
            let data = out.fileHandleForReading.readDataToEndOfFile()
            collected.withLock { $0 = data }
            done.signal()
        }
        reading.start()
        let deadline = monotonicNanoseconds() + UInt64(max(0, timeout) * 1e9)
        while p.isRunning && monotonicNanoseconds() < deadline { usleep(5_000) }
        let overstayed = p.isRunning
        if overstayed { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        // Its output ends with it (unless it left a child holding the pipe: then without it).
        let ended = done.wait(timeout: .now() + 1) == .success
        guard !overstayed else { return (nil, "") }
        return (p.terminationStatus, ended ? String(decoding: collected.withLock { $0 }, as: UTF8.self) : "")
    }

    /// Starts `executable` and reaps it on a background thread (a notification: nobody waits
    /// for it); killed after `timeout` seconds.
    public static func launch(_ executable: String, _ arguments: [String], timeout: TimeInterval = 10) {
        Thread.detachNewThread { _ = run(executable, arguments, timeout: timeout) }
    }
}
