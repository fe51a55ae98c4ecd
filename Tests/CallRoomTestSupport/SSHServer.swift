import Foundation

/// A real, throwaway OpenSSH server (Debian `openssh-server`) on a loopback port, with its own
/// host key, one client key and a config in a temporary directory: the tests log in as the
/// current user and run `callroom` on a remote pty as someone demoing over SSH would.
/// Needs root (sshd's privilege separation), as the test machines run. sshd runs as a daemon
/// (it forks; stopped through its pid file): as a direct child kept with `-D`, its session
/// processes' exits confused Foundation's tracking of the test's other children (a `wait` on a
/// `callroom` that had exited never returned).
public final class SSHServer: @unchecked Sendable {
    public static let binary = "/usr/sbin/sshd"
    public static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: binary) && FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-keygen")
    }
    private let dir: TemporaryDirectory
    private var pid: pid_t?
    public let port: Int
    public var clientKey: String { dir.file("client") }

    public init() throws {
        dir = TemporaryDirectory("callroom-sshd")
        port = try FreePort.tcp()
        for (name, comment) in [("host", "host"), ("client", "client")] {
            guard Self.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", dir.file(name)]) == 0 else {
                throw Self.failure("ssh-keygen failed")
            }
        }
        try FileManager.default.copyItem(atPath: dir.file("client.pub"), toPath: dir.file("authorized_keys"))
        let config = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(dir.file("host"))
            PidFile \(dir.file("sshd.pid"))
            AuthorizedKeysFile \(dir.file("authorized_keys"))
            StrictModes no
            UsePAM no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            PrintMotd no
            PrintLastLog no
            ClientAliveInterval 0
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: dir.file("sshd_config")))
        // sshd refuses to start without its privilege separation directory.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        guard Self.run(Self.binary, ["-f", dir.file("sshd_config"), "-E", dir.file("sshd.log")]) == 0 else {
            throw Self.failure("sshd did not start: \(log)")
        }
        let started = eventuallyValue(4, poll: 0.02) { () -> pid_t? in
            guard let text = try? String(contentsOfFile: dir.file("sshd.pid"), encoding: .utf8),
                  let p = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), FreePort.accepts(port: port) else { return nil }
            return p
        }
        if let started {
            pid = started
            return
        }
        throw Self.failure("sshd did not start: \(log)")
    }

    deinit {
        if let pid {
            kill(pid, SIGTERM)
            // Gone before its directory goes: it deletes its pid file as it exits.
            _ = eventually(2, poll: 0.02) { kill(pid, 0) != 0 }
        }
        dir.remove()
    }

    /// `ssh -tt` arguments that run `command` on a remote pty as the current user.
    public func sshArguments(_ command: String) -> [String] {
        ["-tt", "-i", clientKey, "-p", "\(port)", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "\(NSUserName())@127.0.0.1", command]
    }

    /// What sshd logged.
    public var log: String { (try? String(contentsOfFile: dir.file("sshd.log"), encoding: .utf8)) ?? "" }

    private static func run(_ tool: String, _ args: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }

    private static func failure(_ message: String) -> NSError {
        NSError(domain: "SSHServer", code: 1, userInfo: [NSLocalizedDescriptionKey: message])
    }
}
