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

    /// Runs `tmux -u -L SESSION ARGS` in a UTF-8 locale, bounded to 10 s (a `DetachedTool`:
    /// the first call leaves the tmux server running).
    @discardableResult
    public func run(_ args: [String]) -> (status: Int32, output: String) {
        var env = ProcessInfo.processInfo.environment
        env["LANG"] = "C.UTF-8"
        env["LC_ALL"] = "C.UTF-8"
        env["TMUX"] = nil
        return DetachedTool.run(["/usr/bin/env", "tmux", "-u", "-L", session] + args, environment: env, timeout: 10)
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
        eventually(timeout, poll: 0.1) { screen().contains(text) }
    }
}

/// A real tmux client attached to a `Tmux` session through a pseudo-terminal that claims to be
/// an xterm: what the test writes is what a terminal would send. `click` writes an SGR mouse
/// press and, 80 ms later, release (`ESC[<0;X;YM`, `ESC[<0;X;Ym`); tmux (with `mouse on`) turns them into
/// whatever mouse protocol the program in the pane asked for, exactly as for a person.
public final class TmuxClient {
    private let process: ManagedProcess

    /// The helper: a pty, `TERM=xterm-256color`, the session's size, then commands on stdin:
    /// `click X Y` (0-based cells), `wheel up|down X Y`, `raw HEX`.
    private static let script = #"""
    import os, pty, sys, struct, fcntl, termios, select, time
    sock, session, cols, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.environ["TERM"] = "xterm-256color"
        os.execvp("tmux", ["tmux", "-u", "-L", sock, "attach-session", "-t", session])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    print("ready", flush=True)
    while True:
        r, _, _ = select.select([fd, 0], [], [], 0.5)
        if fd in r:
            try:
                os.read(fd, 65536)
            except OSError:
                break
        if 0 in r:
            line = sys.stdin.readline()
            if not line:
                break
            words = line.split()
            if words[0] == "click":
                x, y = int(words[1]) + 1, int(words[2]) + 1
                os.write(fd, b"\x1b[<0;%d;%dM" % (x, y))
                time.sleep(0.08)  # a person's click: the button is down for tens of milliseconds
                os.write(fd, b"\x1b[<0;%d;%dm" % (x, y))
            elif words[0] == "wheel":
                b = 64 if words[1] == "up" else 65
                os.write(fd, b"\x1b[<%d;%d;%dM" % (b, int(words[2]) + 1, int(words[3]) + 1))
            elif words[0] == "raw":
                os.write(fd, bytes.fromhex(words[1]))
            print("ok", flush=True)
    """#

    /// Attaches to `tmux`'s session with mouse support on and the window kept at its size.
    public init(_ tmux: Tmux, width: Int, height: Int) throws {
        tmux.run(["set-option", "-t", tmux.session, "status", "off"])
        tmux.run(["set-option", "-t", tmux.session, "mouse", "on"])
        tmux.run(["set-window-option", "-t", tmux.session, "window-size", "manual"])
        process = try ManagedProcess("/usr/bin/env", ["python3", "-c", Self.script, tmux.session, tmux.session, "\(width)", "\(height)"],
                                     environment: ["TMUX": ""])
        guard process.waitForLine(timeout: 10, { $0 == "ready" }) != nil else {
            throw TestFailure("tmux client did not attach: \(process.errorOutput)")
        }
        Thread.sleep(forTimeInterval: 0.3)
    }


    private var acks = 0
    private func command(_ line: String) {
        process.send(line)
        acks += 1
        let want = acks
        _ = process.waitForLine(timeout: 5) { _ in self.process.output.filter { $0 == "ok" }.count >= want }
    }

    /// One click (press and release) at the 0-based cell (x, y).
    public func click(x: Int, y: Int) { command("click \(x) \(y)") }
    public func wheel(up: Bool, x: Int, y: Int) { command("wheel \(up ? "up" : "down") \(x) \(y)") }
    /// Bytes as a terminal would send them (keys, escape sequences).
    public func send(_ bytes: [UInt8]) { command("raw " + bytes.map { String(format: "%02x", $0) }.joined()) }

    deinit { process.closeInput(); _ = process.wait(timeout: 2) }
}
