@preconcurrency import CNcurses
import Foundation
import Synchronization

/// A real terminal through ncursesw: wide characters, colours when available, keys and mouse.
/// `present` diffs against what is on screen and writes only changed cells.
///
/// Thread rules: UI thread (main) only. `shutdown()` restores the terminal and is also
/// registered with `atexit`, so every exit path leaves the terminal usable.
public final class NcursesTerminal: TerminalDriver {
    public private(set) var supportsUnicode: Bool
    private var onScreen: ScreenBuffer?
    private var active = false
    private var pairs: [CellStyle.Color: Int16] = [:]
    private var colors = false

    public init() {
        setlocale(LC_ALL, "")
        let codeset = String(cString: nl_langinfo(nl_item(CODESET)))
        supportsUnicode = codeset.uppercased().replacingOccurrences(of: "-", with: "") == "UTF8"
        initscr()
        active = true
        NcursesTerminal.registerExitHandler()
        cbreak()
        noecho()
        nonl()
        keypad(callroom_stdscr(), true)
        nodelay(callroom_stdscr(), true)
        curs_set(0)
        mousemask(callroom_button1_clicked, nil)
        mouseinterval(0)
        if has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"] == nil {
            start_color()
            use_default_colors()
            colors = true
            let table: [(CellStyle.Color, Int16)] = [(.red, Int16(COLOR_RED)), (.green, Int16(COLOR_GREEN)), (.yellow, Int16(COLOR_YELLOW)),
                                                     (.blue, Int16(COLOR_BLUE)), (.magenta, Int16(COLOR_MAGENTA)), (.cyan, Int16(COLOR_CYAN)),
                                                     (.white, Int16(COLOR_WHITE))]
            for (i, (c, n)) in table.enumerated() {
                init_pair(Int16(i + 1), n, -1)
                pairs[c] = Int16(i + 1)
            }
        }
    }

    public var size: (width: Int, height: Int) {
        (Int(getmaxx(callroom_stdscr())), Int(getmaxy(callroom_stdscr())))
    }

    @discardableResult
    public func present(_ buffer: ScreenBuffer) -> Int {
        guard active else { return 0 }
        var written = 0
        let full = onScreen.map { $0.width != buffer.width || $0.height != buffer.height } ?? true
        if full { clear() }
        for y in 0..<buffer.height {
            for x in 0..<buffer.width {
                let c = buffer[x, y]
                if !full, let old = onScreen, old[x, y] == c { continue }
                // The bottom-right cell cannot be written without scrolling on some terminals.
                if x == buffer.width - 1 && y == buffer.height - 1 { continue }
                var attr: attr_t = 0
                if c.style.bold { attr |= callroom_a_bold }
                if c.style.reverse { attr |= callroom_a_reverse }
                if c.style.dim { attr |= callroom_a_dim }
                let pair: Int16 = colors ? (pairs[c.style.fg] ?? 0) : 0
                callroom_put_wch(Int32(y), Int32(x), wchar_t(bitPattern: c.char.value), attr, pair)
                written += 1
            }
        }
        refresh()
        onScreen = buffer
        return written
    }

    public func poll() -> TerminalInput? {
        guard active else { return nil }
        var wch: wint_t = 0
        let rc = get_wch(&wch)
        if rc == ERR { return nil }
        if rc == KEY_CODE_YES {
            switch Int32(wch) {
            case KEY_RESIZE: onScreen = nil; return .resize
            case KEY_UP: return .up
            case KEY_DOWN: return .down
            case KEY_LEFT: return .left
            case KEY_RIGHT: return .right
            case KEY_BACKSPACE: return .backspace
            case KEY_ENTER: return .enter
            case KEY_MOUSE:
                var ev = MEVENT()
                guard getmouse(&ev) == OK else { return nil }
                return .mouse(x: Int(ev.x), y: Int(ev.y))
            default: return nil
            }
        }
        switch wch {
        case 3: return .interrupt
        case 9: return .tab
        case 10, 13: return .enter
        case 27: return .escape
        case 127, 8: return .backspace
        default: return Unicode.Scalar(UInt32(wch)).map { .char($0) }
        }
    }

    public func copyToClipboard(_ text: String) {
        let seq = "\u{1b}]52;c;\(Data(text.utf8).base64EncodedString())\u{07}"
        FileHandle.standardOutput.write(Data(seq.utf8))
    }

    public func shutdown() {
        guard active else { return }
        active = false
        NcursesTerminal.restore()
    }

    // MARK: Restoring on every exit path

    private static func restore() {
        if isendwin() == false { endwin() }
    }

    private static let exitHandlerRegistered = Atomic<Bool>(false)

    private static func registerExitHandler() {
        guard !exitHandlerRegistered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        atexit { if isendwin() == false { endwin() } }
    }
}
