import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Drives a detached tmux session for terminal tests: start a command, send keys, read the screen.
/// Each instance has its own tmux server (`-L`), so tests never meet a server another test is
/// shutting down, and every tmux call is bounded in time.
public final class Tmux {
    public let session: String
    private let scratch: String

    public init(session: String) {
        self.session = session
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(session)").path
        try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    deinit {
        _ = run(["kill-server"])
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// Runs `tmux -u -L SESSION ARGS` in a UTF-8 locale, bounded to 10 s. Spawned with
    /// posix_spawn and reaped with waitpid (Foundation's Process can miss the exit of a client
    /// whose daemonised server it also spawned); output goes through a file, never a pipe, since
    /// the tmux server inherits the client's descriptors.
    @discardableResult
    public func run(_ args: [String]) -> (status: Int32, output: String) {
        let outPath = scratch + "/\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ["/usr/bin/env", "tmux", "-u", "-L", session] + args
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env["LC_ALL"] = "C.UTF-8"
        env["TMUX"] = nil
        let envp = env.map { "\($0.key)=\($0.value)" }
        var cArgs = argv.map { strdup($0) } + [nil]
        var cEnv = envp.map { strdup($0) } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/usr/bin/env", &actions, nil, &cArgs, &cEnv) == 0 else { return (-1, "cannot spawn tmux") }
        let deadline = Date().addingTimeInterval(10)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return (-1, "tmux \(args.first ?? "") did not finish within 10 s")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
        return (exitCode, String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self))
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
