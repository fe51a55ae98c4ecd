@preconcurrency import CNcurses
import CallsCore
import CallsVideo
import Foundation
import Synchronization

/// A real terminal through ncursesw: wide characters, colours when available (none under
/// `NO_COLOR`), keys, the mouse (one action per click) and an instant Esc.
/// `present` diffs against what is on screen and writes only changed cells.
///
/// Thread rules: UI thread (main) only. `shutdown()` restores the terminal and is also
/// registered with `atexit`, so every exit path leaves the terminal usable; on terminals without
/// an alternate screen (vt100, linux) it clears what the call screen drew first.
public final class NcursesTerminal: TerminalDriver {
    public private(set) var supportsUnicode: Bool
    private var onScreen: ScreenBuffer?
    private var active = false
    private var pairs: [CellStyle.Color: Int16] = [:]
    private var colors = false
    /// How video is drawn here (`PictureMode.detect` from terminfo's colours and NO_COLOR).
    public private(set) var pictureMode: PictureMode = .monochrome
    /// Colour pairs made for picture cells (fg, bg) → pair, from `firstPicturePair` up.
    private var picturePairs: [Int64: Int32] = [:]
    private var nextPicturePair: Int32 = 16
    private static let firstPicturePair: Int32 = 16
    /// How video goes out: character cells, or pixels (sixel, kitty) where the terminal said it
    /// can (`TerminalGraphics.detect`, asked once per process before ncurses starts).
    public private(set) var graphics: TerminalGraphics = .cells
    private var pixelWriter: PixelPictureWriter?
    private static let detectedGraphics = Locked<TerminalGraphics?>(nil)
    /// How long ncurses waits after Esc for the rest of an escape sequence (ms).
    public static let escapeDelayMs: Int32 = 25

    /// Sets up the terminal. Throws when TERM is unknown or cannot address the cursor (`dumb`),
    /// or standard input or output is not a terminal, before anything is drawn.
    public init() throws(TerminalError) {
        setlocale(LC_ALL, "")
        let codeset = String(cString: nl_langinfo(nl_item(CODESET)))
        supportsUnicode = codeset.uppercased().replacingOccurrences(of: "-", with: "") == "UTF8"
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        // ncurses starts once per process; a later screen (the ringing screen after a call)
        // resumes it after `endwin` instead (the TERM check would free the live terminal).
        let resuming = Self.started.load(ordering: .acquiring)
        if !resuming {
            switch callroom_terminal_can_address_cursor() {
            case -1: throw .unknownTerminal(term: term)
            case 0: throw .cannotAddressCursor(term: term)
            default: break
            }
            // Drawn into a pipe or a file, the screen is escape codes nobody sees, and keys never come.
            guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else { throw .notATerminal }
        }
        // Before ncurses reads the terminal's input: ask what it can draw.
        graphics = Self.detectedGraphics.withLock { known in
            if let known { return known }
            let g = TerminalGraphics.detect()
            known = g
            return g
        }
        // Before initscr: ncurses reads ESCDELAY then (set_escdelay also works after).
        setenv("ESCDELAY", "\(Self.escapeDelayMs)", 1)
        if resuming {
            refresh()
            clear()
        } else {
            initscr()
            Self.started.store(true, ordering: .releasing)
        }
        set_escdelay(Self.escapeDelayMs)
        active = true
        callroom_define_keys()
        // Bracketed paste: the terminal marks pasted text, so it is never read as keys.
        Self.writeOut("\u{1B}[?2004h")
        NcursesTerminal.hasAlternateScreen.store(callroom_terminal_has_alternate_screen() == 1, ordering: .relaxed)
        NcursesTerminal.registerExitHandler()
        cbreak()
        noecho()
        nonl()
        keypad(callroom_stdscr(), true)
        nodelay(callroom_stdscr(), true)
        curs_set(0)
        mousemask(callroom_mouse_mask, nil)
        // Press and release come as separate events; only the release acts (see poll()).
        mouseinterval(0)
        if has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"].map({ $0.isEmpty }) ?? true {
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
        pictureMode = colors ? PictureMode.detect(colors: Int(callroom_colors()), environment: ProcessInfo.processInfo.environment) : .monochrome
        if !colors { graphics = .cells }
        if graphics != .cells {
            pixelWriter = PixelPictureWriter(graphics: graphics)
            Self.pixelsShown.store(graphics == .kitty, ordering: .relaxed)
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
        var chars = [wchar_t](repeating: 0, count: 4)
        let indices: [Int]
        if !full, let old = onScreen { indices = buffer.changedCells(since: old) } else { indices = Array(0..<buffer.cells.count) }
        for i in indices {
            let x = i % buffer.width, y = i / buffer.width
            let c = buffer.cells[i]
            if c.isWideTail { continue }  // drawn by the wide character to its left
            // The bottom-right cell cannot be written without scrolling on some terminals.
            if x == buffer.width - 1 && y == buffer.height - 1 { continue }
            var attr: attr_t = 0
            if c.style.bold { attr |= callroom_a_bold }
            if c.style.reverse { attr |= callroom_a_reverse }
            if c.style.dim { attr |= callroom_a_dim }
            if c.style.underline { attr |= callroom_a_underline }
            var n: Int32 = 0
            for s in buffer.character(c).unicodeScalars.prefix(4) { chars[Int(n)] = wchar_t(bitPattern: s.value); n += 1 }
            if colors, c.style.isPicture {
                callroom_put_wchs_pair(Int32(y), Int32(x), chars, n, attr, picturePair(fg: c.style.pictureFG, bg: c.style.pictureBG))
            } else {
                let pair: Int16 = colors ? (pairs[c.style.fg] ?? 0) : 0
                callroom_put_wchs(Int32(y), Int32(x), chars, n, attr, pair)
            }
            written += 1
        }
        refresh()
        if let writer = pixelWriter {
            let cell = TerminalGraphics.cellPixels()
            if full {
                writer.redrawAll(buffer.pixelPictures, cell: cell, write: Self.writeOut)
            } else if writer.update(buffer.pixelPictures, cell: cell, write: Self.writeOut) {
                // Sixel pixels where a picture went: repaint every line, then the pictures.
                wredrawln(callroom_stdscr(), 0, Int32(buffer.height))
                refresh()
                writer.redrawAll(buffer.pixelPictures, cell: cell, write: Self.writeOut)
            }
        }
        onScreen = buffer
        return written
    }

    /// Graphics sequences go straight to the terminal, after ncurses has flushed its own output.
    private static func writeOut(_ s: String) { DescriptorWriter.write(STDOUT_FILENO, s) }

    public var picturesPending: Bool { pixelWriter?.pending ?? false }

    /// The colour pair for a picture cell's colours (made on first use; when the terminal's
    /// pairs run out the table starts over: cells already drawn keep their colours).
    private func picturePair(fg: Int32, bg: Int32) -> Int32 {
        let key = Int64(fg) << 32 | Int64(UInt32(bitPattern: bg))
        if let p = picturePairs[key] { return p }
        if nextPicturePair >= callroom_color_pairs() {
            picturePairs = [:]
            nextPicturePair = Self.firstPicturePair
        }
        let p = nextPicturePair
        guard callroom_init_pair(p, fg, bg) == OK else { return 0 }
        nextPicturePair += 1
        picturePairs[key] = p
        return p
    }

    /// Pasted text so far (between the paste markers), at most `pasteLimit` characters kept.
    private var pasting: String.UnicodeScalarView?
    static let pasteLimit = 16_384

    public func poll() -> TerminalInput? {
        guard active else { return nil }
        while true {
            var wch: wint_t = 0
            let rc = get_wch(&wch)
            if rc == ERR { checkHangup(); return nil }
            if rc == KEY_CODE_YES, Int32(wch) == callroom_key_paste_start { pasting = .init(); continue }
            if rc == KEY_CODE_YES, Int32(wch) == callroom_key_paste_end, let text = pasting {
                pasting = nil
                return .paste(String(text))
            }
            guard pasting != nil else { return key(rc: rc, wch: wch) }
            // Inside a paste: characters (line breaks as \n) are text, keys are dropped.
            if rc != KEY_CODE_YES, (pasting?.count ?? 0) < Self.pasteLimit, let u = Unicode.Scalar(UInt32(wch)) {
                pasting?.append(u == "\r" ? "\n" : u)
            }
        }
    }

    private func key(rc: Int32, wch: wint_t) -> TerminalInput? {
        if rc == KEY_CODE_YES {
            switch Int32(wch) {
            case KEY_RESIZE: onScreen = nil; return .resize
            case KEY_UP: return .up
            case KEY_DOWN: return .down
            case KEY_LEFT: return .left
            case KEY_RIGHT: return .right
            case KEY_PPAGE: return .pageUp
            case KEY_NPAGE: return .pageDown
            case KEY_HOME: return .home
            case KEY_END: return .end
            case KEY_BACKSPACE: return .backspace
            case KEY_ENTER: return .enter
            case KEY_MOUSE:
                var ev = MEVENT()
                guard getmouse(&ev) == OK else { return nil }
                return Self.mouseInput(state: ev.bstate, x: Int(ev.x), y: Int(ev.y))
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

    private var lastHangupCheck: UInt64 = 0
    private var hungUp = false

    /// A terminal that went away (the SSH connection dropped, the emulator closed) reads as
    /// "nothing typed" to ncurses: twice a second `poll(2)` asks the descriptor. On POLLHUP,
    /// POLLERR or POLLNVAL the process gets SIGHUP, once, as the kernel sends a session leader:
    /// its handler leaves the call and exits (`callroom`'s `TerminationSignals`), and with no
    /// handler SIGHUP's default ends the process.
    private func checkHangup() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard !hungUp, now - lastHangupCheck > 500_000_000 else { return }
        lastHangupCheck = now
        guard DescriptorWriter.isHungUp(STDIN_FILENO, events: Int16(POLLIN)) else { return }
        hungUp = true
        kill(getpid(), SIGHUP)
    }

    /// ncurses' button masks (for tests of `mouseInput`).
    enum MouseMask {
        static let pressed = callroom_button1_pressed
        static let released = callroom_button1_released
        static let clicked = callroom_button1_clicked
    }

    /// One mouse report as input: a press is ignored, its release (or a "clicked" report from
    /// terminals that send one) is the click, so one click acts once.
    static func mouseInput(state: mmask_t, x: Int, y: Int) -> TerminalInput? {
        if state & callroom_button4_pressed != 0 { return .wheel(up: true, x: x, y: y) }
        if state & callroom_button5_pressed != 0 { return .wheel(up: false, x: x, y: y) }
        if state & (callroom_button1_released | callroom_button1_clicked) != 0 { return .click(x: x, y: y) }
        return nil
    }

    /// Rings the terminal bell (an incoming call).
    public func bell() { if active { beep() } }

    public func copyToClipboard(_ text: String) -> ClipboardOutcome {
        Clipboard(terminalDeclaresOSC52: active && callroom_terminal_has_string_capability("Ms") == 1) { seq in
            DescriptorWriter.write(STDOUT_FILENO, seq)
        }.copy(text)
    }

    public func shutdown() {
        guard active else { return }
        active = false
        NcursesTerminal.restore()
    }

    // MARK: Restoring on every exit path

    private static let hasAlternateScreen = Atomic<Bool>(true)
    /// Kitty keeps images after the program ends: restore deletes them.
    private static let pixelsShown = Atomic<Bool>(false)
    private static let started = Atomic<Bool>(false)

    /// Restores the terminal before the process ends without `exit` (no atexit handlers run).
    /// Idempotent; a no-op when the screen never started.
    public static func restoreForExit() {
        guard started.load(ordering: .acquiring) else { return }
        restore()
    }

    private static func restore() {
        guard isendwin() == false else { return }
        if pixelsShown.exchange(false, ordering: .relaxed) { writeOut(TerminalGraphicsEncoder.kittyDelete(id: nil)) }
        // Without an alternate screen the call screen would stay on the shell: clear it first.
        if !hasAlternateScreen.load(ordering: .relaxed) { clear(); refresh() }
        writeOut("\u{1B}[?2004l")
        curs_set(1)
        endwin()
    }

    private static let exitHandlerRegistered = Atomic<Bool>(false)

    private static func registerExitHandler() {
        guard !exitHandlerRegistered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        atexit { NcursesTerminal.restore() }
    }
}
