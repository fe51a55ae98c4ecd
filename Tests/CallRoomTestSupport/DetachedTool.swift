import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a tool that may leave a daemon behind (`pg_ctl start`, the first `tmux` call), the way
/// such a tool needs: posix_spawn and waitpid rather than Foundation's `Process` (whose exit
/// monitoring can miss a child whose daemonised server it also spawned), output through a file
/// rather than a pipe (the daemon would hold the pipe open), and nothing of the test process's
/// inherited past stderr — a daemon that kept the suite's descriptors would hold its pipes
/// open (readers never see end of file) and count them against its own limit (PostgreSQL
/// refuses to start).
public enum DetachedTool {
    /// Runs `argv` with `environment`, at most `timeout` seconds (then SIGKILL); returns its
    /// exit status (-1 when it did not exit normally or could not start) and what it printed.
    public static func run(_ argv: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                           timeout: TimeInterval = 60) -> (status: Int32, output: String) {
        guard let tool = argv.first else { return (-1, "nothing to run") }
        let outPath = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-tool-\(UUID().uuidString.prefix(8)).out").path
        defer { unlink(outPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // (Swift's Glibc lacks posix_spawn_file_actions_addclosefrom_np; glibc ignores a close
        // of a descriptor that has closed since this listing.)
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }
        var cArgs = argv.map { strdup($0) } + [nil]
        var cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, tool, &actions, nil, &cArgs, &cEnv)
        guard rc == 0 else { return (-1, "cannot run \(tool): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        let ended = eventually(timeout, poll: 0.005) {
            let r = waitpid(pid, &status, WNOHANG)
            return r == pid || (r == -1 && errno != EINTR)
        }
        guard ended else {
            kill(pid, SIGKILL)
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            return (-1, "\(argv.joined(separator: " ")) did not finish within \(Int(timeout)) s")
        }
        // WIFEXITED / WEXITSTATUS by hand (macros Swift does not import).
        let exitCode = status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
        return (exitCode, String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self))
    }
}
