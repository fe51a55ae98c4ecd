import CallsCore

/// Turns a terminal's contents as `tmux capture-pane -p -e` prints them (lines of text with SGR
/// escape sequences) into a `TerminalGrid`: tmux is the terminal emulator, this reads its
/// answer. Colours: the 8/16 ANSI colours and 256-colour indices as 0…255, 24-bit as
/// `GridStyle.rgbFlag | RGB`; bold, dim, italic, underline, reverse. A wide character takes its
/// cell and the next (an empty cell). Pure; any thread.
public enum TerminalCapture {
    public static func grid(lines: [String], columns: Int, rows: Int, cursor: GridPoint?) -> TerminalGrid {
        var g = TerminalGrid(columns: columns, rows: rows)
        var style = GridStyle.plain
        for (y, line) in lines.prefix(g.rows).enumerated() {
            var x = 0
            var chars = Array(line.unicodeScalars)[...]
            var pending = ""
            func flush() {
                guard !pending.isEmpty else { return }
                for ch in pending where x < g.columns {
                    let w = max(1, DisplayWidth.of(ch))
                    g[x, y] = GridCell(text: String(ch), style: style)
                    if w == 2, x + 1 < g.columns { g[x + 1, y] = GridCell(text: "", style: style) }
                    x += w
                }
                pending = ""
            }
            while let c = chars.first {
                chars = chars.dropFirst()
                guard c == "\u{1B}" else {
                    if c.value >= 0x20 { pending.unicodeScalars.append(c) }
                    continue
                }
                // ESC [ params final
                guard chars.first == "[" else { continue }
                chars = chars.dropFirst()
                var params = ""
                while let p = chars.first, p.value >= 0x30 && p.value <= 0x3F { params.unicodeScalars.append(p); chars = chars.dropFirst() }
                while let i = chars.first, i.value >= 0x20 && i.value <= 0x2F { chars = chars.dropFirst() }
                guard let final = chars.first else { break }
                chars = chars.dropFirst()
                guard final == "m" else { continue }
                flush()
                apply(params, to: &style)
            }
            flush()
        }
        g.cursor = cursor
        return g
    }

    /// Applies one SGR sequence's parameters.
    static func apply(_ params: String, to s: inout GridStyle) {
        let p = params.isEmpty ? [0] : params.split(separator: ";", omittingEmptySubsequences: false).map { Int($0) ?? 0 }
        var i = 0
        func color(_ at: inout Int) -> Int? {
            // 38;5;N or 38;2;R;G;B
            guard at + 1 < p.count else { return nil }
            if p[at + 1] == 5, at + 2 < p.count { at += 2; return max(0, min(255, p[at])) }
            if p[at + 1] == 2, at + 4 < p.count {
                let rgb = max(0, min(255, p[at + 2])) << 16 | max(0, min(255, p[at + 3])) << 8 | max(0, min(255, p[at + 4]))
                at += 4
                return GridStyle.rgbFlag | rgb
            }
            return nil
        }
        while i < p.count {
            let code = p[i]
            switch code {
            case 0: s = .plain
            case 1: s.bold = true
            case 2: s.dim = true
            case 3: s.italic = true
            case 4: s.underline = true
            case 7: s.reverse = true
            case 22: s.bold = nil; s.dim = nil
            case 23: s.italic = nil
            case 24: s.underline = nil
            case 27: s.reverse = nil
            case 30...37: s.fg = code - 30
            case 38: s.fg = color(&i)
            case 39: s.fg = nil
            case 40...47: s.bg = code - 40
            case 48: s.bg = color(&i)
            case 49: s.bg = nil
            case 90...97: s.fg = code - 90 + 8
            case 100...107: s.bg = code - 100 + 8
            default: break
            }
            i += 1
        }
    }
}
