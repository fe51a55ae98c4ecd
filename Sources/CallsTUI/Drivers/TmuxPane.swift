import CallsCore
import Foundation

/// The tmux the share reads: the user's (a pane) or a private server running the command.
/// Thread rules: a value; any thread (each call runs one tmux client and waits for it).
public struct TmuxPane: Sendable {
    public let socket: String?
    public let target: String

    public init(socket: String?, target: String) { self.socket = socket; self.target = target }

    public static var available: Bool { (try? run(["-V"]))?.status == 0 }

    /// Runs tmux with `args` (on the private socket when there is one); its output and status.
    /// Runs tmux with posix_spawn and waitpid (Foundation's `Process` waits on a run loop, which
    /// the main queue is not). Output goes to a file, not a pipe: tmux hands a client's stdout to
    /// its server, which may hold it open (a pipe would never reach end of file).
    public static func run(_ args: [String], socket: String? = nil, capture: Bool = true) throws -> (status: Int32, output: String) {
        let argv = ["tmux"] + (socket.map { ["-L", $0] } ?? []) + args
        let path = NSTemporaryDirectory() + "callroom-share-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(path) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, capture ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for a in cargs { free(a) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, "tmux", &actions, nil, &cargs, environ)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .ENOENT) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        let data = capture ? (FileManager.default.contents(atPath: path) ?? Data()) : Data()
        return (exited, String(decoding: data, as: UTF8.self))
    }

    public func start(_ command: [String], columns: Int, rows: Int) -> Bool {
        // A private server with no user configuration; the session ends when the command does.
        let args = ["-f", "/dev/null", "new-session", "-d", "-s", "share", "-x", "\(columns)", "-y", "\(rows)"] + command
        guard (try? Self.run(args, socket: socket, capture: false))?.status == 0 else { return false }
        _ = try? Self.run(["set-option", "-g", "status", "off"], socket: socket)
        _ = try? Self.run(["resize-window", "-t", "share", "-x", "\(columns)", "-y", "\(rows)"], socket: socket)
        return true
    }

    /// The pane's size and cursor; nil when it is gone.
    public func geometry() -> (columns: Int, rows: Int, cursor: GridPoint?)? {
        guard let r = try? Self.run(["display-message", "-p", "-t", target, "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag}"], socket: socket),
              r.status == 0 else { return nil }
        let v = r.output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard v.count == 5 else { return nil }
        return (v[0], v[1], v[4] == 1 ? GridPoint(x: v[2], y: v[3]) : nil)
    }

    /// The pane's text with its colours (SGR sequences), one line per row.
    public func capture() -> [String]? {
        guard let r = try? Self.run(["capture-pane", "-p", "-e", "-t", target], socket: socket), r.status == 0 else { return nil }
        var lines = r.output.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    public func stop() { if socket != nil { _ = try? Self.run(["kill-server"], socket: socket) } }
}

