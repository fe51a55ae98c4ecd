import CallsVideo
/// A key or mouse event from the terminal.
public enum TerminalInput: Equatable, Sendable {
    case char(Unicode.Scalar)
    case enter, escape, backspace, tab
    case up, down, left, right
    case pageUp, pageDown, home, end
    case resize
    /// One click of the primary button (acted on once: on release, or a terminal's "clicked").
    case click(x: Int, y: Int)
    /// The mouse wheel over (x, y): up (away from you) or down.
    case wheel(up: Bool, x: Int, y: Int)
    case interrupt
    /// Text pasted in one go (bracketed paste): never read as key commands.
    case paste(String)
}

/// Why a terminal cannot show the call screen.
public enum TerminalError: Error, Equatable, Sendable {
    /// TERM names a terminal that cannot move the cursor (e.g. `dumb`).
    case cannotAddressCursor(term: String)
    /// TERM is not in the terminfo database.
    case unknownTerminal(term: String)
    /// Standard input or output is not a terminal (`ssh HOST callroom demo` without `-t`, a pipe).
    case notATerminal

    public var message: String {
        switch self {
        case .cannotAddressCursor(let t): return "the terminal '\(t)' cannot address the cursor, so the call screen cannot be drawn; use --headless (or a terminal such as xterm, tmux or screen)"
        case .unknownTerminal(let t): return "unknown terminal type '\(t)' (TERM); set TERM to your terminal, or use --headless"
        case .notATerminal:
            return "the call screen needs a terminal on standard input and output (over SSH: ssh -t HOST …); or use --headless"
        }
    }
}

/// What the UI draws on: ncurses on a real terminal, memory in tests.
///
/// Thread rules: every method is called from the UI thread (main) only.
public protocol TerminalDriver: AnyObject {
    /// Current size in cells (columns, rows).
    var size: (width: Int, height: Int) { get }
    /// Whether box-drawing and other non-ASCII characters can be shown.
    var supportsUnicode: Bool { get }
    /// How pictures (video) can be drawn here.
    var pictureMode: PictureMode { get }
    /// Shows `buffer`, writing only the cells that differ from what is on screen.
    /// Returns how many cells were written.
    @discardableResult func present(_ buffer: ScreenBuffer) -> Int
    /// The next input, or nil when none is waiting (never blocks).
    func poll() -> TerminalInput?
    /// Restores the terminal. Idempotent; safe to call on every exit path.
    func shutdown()
    /// Puts text on the best clipboard reachable (`Clipboard`) and says where it went.
    func copyToClipboard(_ text: String) -> ClipboardOutcome
    /// Rings the terminal bell.
    func bell()
    /// Whether video is drawn as character cells or with a graphics protocol (pixels).
    var graphics: TerminalGraphics { get }
    /// Pixel pictures wait to be drawn (the last present ran out of its budget): present again.
    var picturesPending: Bool { get }
}

extension TerminalDriver {
    public var graphics: TerminalGraphics { .cells }
    public var picturesPending: Bool { false }
}

/// An in-memory terminal for tests: keeps the last presented screen and a queue of input.
public final class MemoryTerminal: TerminalDriver {
    public var size: (width: Int, height: Int)
    public let supportsUnicode: Bool
    public var pictureMode: PictureMode = .truecolor
    public var graphics: TerminalGraphics = .cells
    public private(set) var screen: ScreenBuffer
    public private(set) var cellsWritten = 0
    public private(set) var presents = 0
    public var input: [TerminalInput] = []
    public private(set) var isShutDown = false

    public init(width: Int, height: Int, unicode: Bool = true) {
        size = (width, height)
        supportsUnicode = unicode
        screen = ScreenBuffer(width: width, height: height, unicode: unicode)
    }

    @discardableResult
    public func present(_ buffer: ScreenBuffer) -> Int {
        var changed = 0
        if buffer.width != screen.width || buffer.height != screen.height {
            changed = buffer.width * buffer.height
        } else {
            changed = buffer.changedCells(since: screen).count
        }
        screen = buffer
        cellsWritten += changed
        presents += 1
        return changed
    }

    public func poll() -> TerminalInput? { input.isEmpty ? nil : input.removeFirst() }
    public private(set) var clipboard: String?
    /// What `copyToClipboard` reports (a test decides).
    public var clipboardOutcome: ClipboardOutcome = .terminal
    public func copyToClipboard(_ text: String) -> ClipboardOutcome {
        clipboard = text
        return clipboardOutcome
    }
    /// Times the bell rang.
    public private(set) var bells = 0
    public func bell() { bells += 1 }
    public func shutdown() { isShutDown = true }
}
