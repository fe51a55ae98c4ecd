import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How the call screen draws video: as character cells (half blocks, shapes: every terminal),
/// or as pixels with a graphics protocol the terminal says it has — never assumed from TERM.
/// Detected by asking the terminal before the screen starts (`detect`): a kitty graphics query
/// (`a=q`: kitty, WezTerm, Konsole, ghostty answer OK) followed by Primary Device Attributes
/// (DA1: every terminal answers; attribute 4 means sixel: xterm -ti vt340, foot, mlterm,
/// WezTerm, contour, mintty, tmux built with sixel). `CALLROOM_GRAPHICS=cells|sixel|kitty`
/// overrides (`auto`: ask). NO_COLOR keeps character cells.
public enum TerminalGraphics: String, Sendable, CaseIterable {
    case cells, sixel, kitty

    /// The kitty query: a 1×1 RGB image that is only checked (`a=q`), never stored.
    static let kittyQuery = "\u{1B}_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\u{1B}\\"
    /// Primary Device Attributes.
    static let deviceAttributesQuery = "\u{1B}[c"

    /// What a terminal's answers to `kittyQuery` + `deviceAttributesQuery` say it can draw.
    /// Kitty is preferred (images replace each other and sit under the text).
    public static func parse(reply: String) -> TerminalGraphics {
        if reply.contains("\u{1B}_Gi=31;OK") { return .kitty }
        // DA1: ESC [ ? Pp ; Ps ; … c — attribute 4 is sixel graphics.
        guard let start = reply.range(of: "\u{1B}[?") else { return .cells }
        let rest = reply[start.upperBound...]
        guard let end = rest.firstIndex(of: "c") else { return .cells }
        let attributes = rest[..<end].split(separator: ";").map(String.init)
        return attributes.dropFirst().contains("4") ? .sixel : .cells
    }

    /// Whether `reply` holds the whole DA1 answer (its terminating `c`): the end of the
    /// terminal's answers, since it answers in order.
    static func isComplete(_ reply: String) -> Bool {
        guard let start = reply.range(of: "\u{1B}[?") else { return false }
        return reply[start.upperBound...].contains("c")
    }

    /// The graphics of the terminal on /dev/tty, under `environment`: the override, NO_COLOR,
    /// else the terminal's answers (at most `timeoutMs` of waiting — every terminal answers DA1,
    /// most within a round trip; one that does not gets cells, and what comes later is flushed). Call before the screen starts: it reads the terminal's input.
    public static func detect(environment env: [String: String] = ProcessInfo.processInfo.environment,
                              timeoutMs: Int = 1000) -> TerminalGraphics {
        if let forced = env["CALLROOM_GRAPHICS"], let g = TerminalGraphics(rawValue: forced) { return g }
        if let n = env["NO_COLOR"], !n.isEmpty { return .cells }
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else { return .cells }
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard fd >= 0 else { return .cells }
        defer { close(fd) }
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { return .cells }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(fd, TCSANOW, &raw) == 0 else { return .cells }
        defer {
            // An answer that came too late must not reach the screen as keys.
            _ = tcflush(fd, TCIFLUSH)
            _ = tcsetattr(fd, TCSANOW, &saved)
        }
        let query = kittyQuery + deviceAttributesQuery
        guard query.utf8.withContiguousStorageIfAvailable({ write(fd, $0.baseAddress, $0.count) }) == query.utf8.count else { return .cells }
        var reply = [UInt8]()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMs) * 1_000_000
        var buf = [UInt8](repeating: 0, count: 256)
        while DispatchTime.now().uptimeNanoseconds < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(1, (deadline - min(deadline, DispatchTime.now().uptimeNanoseconds)) / 1_000_000))
            guard poll(&p, 1, left) > 0 else { break }
            let n = read(fd, &buf, buf.count)
            guard n > 0 else { break }
            reply += buf[0..<n]
            if isComplete(String(decoding: reply, as: UTF8.self)) { break }
        }
        return parse(reply: String(decoding: reply, as: UTF8.self))
    }

    /// The size of a character cell in pixels (the terminal's TIOCGWINSZ), or a usual 10 × 20.
    public static func cellPixels() -> (width: Int, height: Int) {
        var ws = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0, ws.ws_xpixel > 0, ws.ws_ypixel > 0 else {
            return (10, 20)
        }
        return (max(2, Int(ws.ws_xpixel) / Int(ws.ws_col)), max(2, Int(ws.ws_ypixel) / Int(ws.ws_row)))
    }
}
