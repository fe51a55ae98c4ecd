import CallsCore
import CallsVideo

/// A presenter's shared terminal on the call screen: a box over the tile area with the exact
/// text (selectable and copyable in your terminal) and its colours, its top-left corner when the
/// area is smaller than the shared terminal (the title says so), the cursor shown reversed.
/// Pure; any thread.
enum ScreenShareRenderer {
    static func draw(_ grid: TerminalGrid, presenter: String, _ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        guard area.width >= 8, area.height >= 3 else { return }
        let inner = area.inset(1)
        let cut = grid.columns > inner.width || grid.rows > inner.height
        let title = "\(presenter) is sharing \(b.glyphs.separator) \(grid.columns)×\(grid.rows)" + (cut ? " \(b.glyphs.separator) cut: widen the terminal" : "")
        b.box(area, title: title, style: CellStyle(fg: .blue, bold: true))
        for y in 0..<min(grid.rows, inner.height) {
            for x in 0..<min(grid.columns, inner.width) {
                let c = grid[x, y]
                guard !c.text.isEmpty else { continue }  // the right half of a wide character
                var style = cellStyle(c.style, m.pictureMode)
                if grid.cursor == GridPoint(x: x, y: y) { style.reverse.toggle() }
                let ch = c.text.unicodeScalars.first ?? " "
                let shown = b.unicode || ch.isASCII ? c.text : "?"
                b.put(shown, x: inner.x + x, y: inner.y + y, style: style, maxWidth: inner.maxX - inner.x - x, ellipsis: false)
            }
        }
    }

    /// The shared cell's style in this terminal: the 8 ANSI colours as text colours, others as
    /// picture colours in the terminal's mode; attributes as they were.
    static func cellStyle(_ s: GridStyle, _ mode: PictureMode) -> CellStyle {
        var out = CellStyle(bold: s.bold == true, reverse: s.reverse == true, dim: s.dim == true, underline: s.underline == true)
        // (Black, 0, is the terminal's own foreground: `.normal`.)
        if let fg = s.fg, s.bg == nil, let c = CellStyle.Color(rawValue: fg) {
            out.fg = c
            return out
        }
        guard mode != .monochrome else { return out }
        if let fg = s.fg { out.pictureFG = convert(fg, mode) }
        if let bg = s.bg { out.pictureBG = convert(bg, mode) }
        // A picture cell always has both colours: the other one is the terminal's (default) black/white.
        if out.pictureFG < 0 && out.pictureBG >= 0 { out.pictureFG = convert(7, mode) }
        if out.pictureBG < 0 && out.pictureFG >= 0 { out.pictureBG = convert(0, mode) }
        return out
    }

    /// A shared colour (0…255 or RGB-flagged) in `mode`'s numbering.
    static func convert(_ c: Int, _ mode: PictureMode) -> Int32 {
        let (r, g, b) = rgb(c)
        switch mode {
        case .truecolor: return Int32(r << 16 | g << 8 | b)
        case .indexed256: return c & GridStyle.rgbFlag != 0 ? TerminalPalette.xterm256(UInt8(r), UInt8(g), UInt8(b)) : Int32(c)
        case .indexed16: return c < 16 ? Int32(c) : TerminalPalette.ansi16(UInt8(r), UInt8(g), UInt8(b))
        case .monochrome: return -1
        }
    }

    /// The RGB of a shared colour (xterm's palette for indices).
    static func rgb(_ c: Int) -> (Int, Int, Int) {
        c & GridStyle.rgbFlag != 0 ? (c >> 16 & 0xFF, c >> 8 & 0xFF, c & 0xFF) : TerminalPalette.rgb(ofIndex: c)
    }
}
