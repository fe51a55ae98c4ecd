import Foundation

/// Drives a detached tmux session for terminal tests: start a command, send keys, read the screen.
public final class Tmux {
    public let session: String
    private let scratch: String

    public init(session: String) {
        self.session = session
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(session)").path
        try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    deinit {
        _ = run(["kill-session", "-t", session])
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// Runs `tmux -u ARGS` in a UTF-8 locale. Output goes through a file, not a pipe: a tmux
    /// server started by `new-session` inherits the client's descriptors, so a pipe would never
    /// reach end-of-file.
    @discardableResult
    public func run(_ args: [String]) -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["tmux", "-u"] + args
        p.environment = ProcessInfo.processInfo.environment.merging(["LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"]) { $1 }
        let outPath = scratch + "/\(UUID().uuidString).out"
        FileManager.default.createFile(atPath: outPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        guard let out = FileHandle(forWritingAtPath: outPath) else { return (-1, "cannot create \(outPath)") }
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch { return (-1, "\(error)") }
        p.waitUntilExit()
        try? out.close()
        return (p.terminationStatus, String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self))
    }

    public var isAvailable: Bool { run(["-V"]).status == 0 }

    /// Starts `command` in a new detached session of the given size.
    public func start(_ command: String, width: Int, height: Int) -> Bool {
        run(["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)", command]).status == 0
    }

    public func screen() -> String { run(["capture-pane", "-p", "-t", session]).output }
    public func keys(_ k: String...) { run(["send-keys", "-t", session] + k) }

    /// Waits until `text` is on screen.
    public func waitFor(_ text: String, timeout: TimeInterval = 15) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if screen().contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }
}
