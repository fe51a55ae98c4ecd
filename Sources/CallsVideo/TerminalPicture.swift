import CChafa
import CYuv

/// How a terminal can show a picture, decided from what it declares (`PictureMode.detect`).
public enum PictureMode: String, Sendable, CaseIterable {
    /// 24-bit colour (a direct-colour terminfo, or COLORTERM=truecolor on a terminal that passes it).
    case truecolor
    /// The xterm 256-colour palette.
    case indexed256
    /// The 16 ANSI colours.
    case indexed16
    /// No colour at all (NO_COLOR, a monochrome terminal): characters by brightness.
    case monochrome

    /// The mode for a terminal with `colors` colours (terminfo's `colors`; 1<<24 for direct
    /// colour), under `environment` (NO_COLOR wins; COLORTERM=truecolor|24bit asks for 24-bit
    /// only where the terminal can address that many colours).
    public static func detect(colors: Int, environment: [String: String]) -> PictureMode {
        if let n = environment["NO_COLOR"], !n.isEmpty { return .monochrome }
        if colors >= 1 << 24 { return .truecolor }
        if colors >= 256 { return .indexed256 }
        if colors >= 8 { return .indexed16 }
        return .monochrome
    }
}

/// One character cell of a picture: the character and its colours — packed 0xRRGGBB in
/// `.truecolor`, a palette index in the indexed modes, -1 (the terminal's own) in `.monochrome`.
public struct PictureCell: Sendable, Equatable, Hashable {
    public var char: Unicode.Scalar
    public var fg: Int32
    public var bg: Int32
    public init(char: Unicode.Scalar, fg: Int32, bg: Int32) { self.char = char; self.fg = fg; self.bg = bg }
}

/// A picture as character cells, row by row.
public struct Picture: Sendable, Equatable {
    public var columns: Int
    public var rows: Int
    public var mode: PictureMode
    public var cells: [PictureCell]
    public subscript(x: Int, y: Int) -> PictureCell { cells[y * columns + x] }
}

/// Turns video frames into character cells with chafa (Debian libchafa-dev): Unicode half
/// blocks (two pixels a cell, upper and lower) where the terminal has Unicode, ASCII shapes
/// where it has not (LANG=C); colours per `PictureMode`. libyuv scales the frame to the size
/// the cells need and converts it to RGBA first, so chafa works on small images.
///
/// Thread rules: one renderer per thread (the UI's); not thread-safe. It keeps one chafa canvas
/// per cell size in use (tiles of one layout share a size) and frees them with the object.
public final class TerminalPicture {
    public let mode: PictureMode
    public let unicode: Bool
    private var canvases: [Int: OpaquePointer] = [:]
    private var rgba: [UInt8] = []
    private var scaled: [UInt8] = []
    /// The RGBA before mirroring (your own preview), kept like the other buffers.
    private var unmirrored: [UInt8] = []

    public init(mode: PictureMode, unicode: Bool) {
        self.mode = mode
        self.unicode = unicode
        chafa_set_n_threads(1)  // many small tiles: the calling thread draws them faster than a pool
    }

    deinit { for c in canvases.values { chafa_canvas_unref(c) } }

    /// The largest cell area with the frame's shape inside `columns` × `rows` (a cell is two
    /// square pixels tall with half blocks).
    public static func fit(width: Int, height: Int, columns: Int, rows: Int) -> (columns: Int, rows: Int) {
        guard width > 0, height > 0, columns > 0, rows > 0 else { return (0, 0) }
        // Half-block pixels are square: a cell is 1 × 2 of them.
        var c = columns, r = (columns * height + width) / (2 * width)
        if r > rows { r = rows; c = min(columns, (2 * rows * width + height / 2) / height) }
        return (max(1, c), max(1, r))
    }

    /// Draws `frame` into exactly `columns` × `rows` cells (stretched: call `fit` first to keep
    /// its shape). `mirrored` flips it left to right (your own preview).
    public func render(_ frame: VideoFrame, columns: Int, rows: Int, mirrored: Bool = false) -> Picture {
        guard columns > 0, rows > 0 else { return Picture(columns: 0, rows: 0, mode: mode, cells: []) }
        if unicode && mode != .monochrome { return halfBlocks(frame, columns: columns, rows: rows, mirrored: mirrored) }
        // Shapes: chafa matches each cell's pixels against its symbols (2 pixels a cell across, 4 down).
        let pw = min(frame.width, max(2, columns * 2)) & ~1, ph = min(frame.height, max(2, rows * 4)) & ~1
        convert(frame, width: pw, height: ph, mirrored: mirrored)
        guard let canvas = self.canvas(columns: columns, rows: rows) else { return Picture(columns: 0, rows: 0, mode: mode, cells: []) }
        rgba.withUnsafeBufferPointer { p in
            chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, p.baseAddress, Int32(pw), Int32(ph), Int32(pw * 4))
        }
        var cells: [PictureCell] = []
        cells.reserveCapacity(columns * rows)
        var fg: Int32 = 0, bg: Int32 = 0
        for y in 0..<Int32(rows) {
            for x in 0..<Int32(columns) {
                let ch = Unicode.Scalar(chafa_canvas_get_char_at(canvas, x, y)) ?? " "
                switch mode {
                case .truecolor: chafa_canvas_get_colors_at(canvas, x, y, &fg, &bg)
                case .indexed256, .indexed16: chafa_canvas_get_raw_colors_at(canvas, x, y, &fg, &bg)
                case .monochrome: fg = -1; bg = -1
                }
                cells.append(PictureCell(char: ch, fg: fg, bg: bg))
            }
        }
        return Picture(columns: columns, rows: rows, mode: mode, cells: cells)
    }

    /// Half blocks: libyuv scales the frame to exactly one pixel per half cell (box filter) and
    /// converts it to RGB; each cell is `▀`, its upper pixel the foreground, its lower the
    /// background. No shape to match, so no symbol search (chafa's cost, 10 ms for four tiles).
    private func halfBlocks(_ frame: VideoFrame, columns: Int, rows: Int, mirrored: Bool) -> Picture {
        // libyuv needs even sizes: scale to an even width and cut the last column if needed.
        let pw = (columns + 1) & ~1, ph = rows * 2
        convert(frame, width: pw, height: ph, mirrored: mirrored)
        var cells: [PictureCell] = []
        cells.reserveCapacity(columns * rows)
        rgba.withUnsafeBufferPointer { p in
            for y in 0..<rows {
                let top = 2 * y * pw * 4, bottom = (2 * y + 1) * pw * 4
                for x in 0..<columns {
                    let t = top + x * 4, b = bottom + x * 4
                    cells.append(PictureCell(char: "\u{2580}", fg: color(p[t], p[t + 1], p[t + 2]), bg: color(p[b], p[b + 1], p[b + 2])))
                }
            }
        }
        return Picture(columns: columns, rows: rows, mode: mode, cells: cells)
    }

    /// An RGB colour in this renderer's mode: packed, or the nearest palette entry.
    @inline(__always) private func color(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Int32 {
        switch mode {
        case .truecolor: return Int32(r) << 16 | Int32(g) << 8 | Int32(b)
        case .indexed256: return TerminalPalette.xterm256(r, g, b)
        case .indexed16: return TerminalPalette.ansi16(r, g, b)
        case .monochrome: return -1
        }
    }

    /// `frame` scaled to `width` × `height` (even sizes; libyuv, box filter) as RGBA8, mirrored
    /// for your own preview: the pixels a graphics protocol sends (`TerminalGraphicsEncoder`).
    public func rgba(_ frame: VideoFrame, width: Int, height: Int, mirrored: Bool = false) -> [UInt8] {
        convert(frame, width: max(2, width & ~1), height: max(2, height & ~1), mirrored: mirrored)
        return rgba
    }

    /// Scales the frame to `width` × `height` (libyuv, box filter) and converts it to RGBA.
    private func convert(_ f: VideoFrame, width: Int, height: Int, mirrored: Bool) {
        let count = width * height * 4
        if rgba.count != count { rgba = [UInt8](repeating: 255, count: count) }
        let cw = width / 2
        let scaledCount = VideoFrame.byteCount(width: width, height: height)
        if scaled.count != scaledCount { scaled = [UInt8](repeating: 0, count: scaledCount) }
        f.bytes.withUnsafeBufferPointer { src in
            scaled.withUnsafeMutableBufferPointer { dst in
                guard let s = src.baseAddress, let d = dst.baseAddress else { return }
                let su = s + f.uOffset, sv = s + f.vOffset
                let du = d + width * height, dv = du + cw * (height / 2)
                I420Scale(s, Int32(f.width), su, Int32(f.chromaWidth), sv, Int32(f.chromaWidth), Int32(f.width), Int32(f.height),
                          d, Int32(width), du, Int32(cw), dv, Int32(cw), Int32(width), Int32(height), kFilterBox)
                rgba.withUnsafeMutableBufferPointer { out in
                    guard let o = out.baseAddress else { return }
                    // libyuv's "ABGR" is R, G, B, A in memory: chafa's RGBA8. A negative width mirrors.
                    if mirrored {
                        if unmirrored.count != count { unmirrored = [UInt8](repeating: 0, count: count) }
                        unmirrored.withUnsafeMutableBufferPointer { t in
                            guard let tb = t.baseAddress else { return }
                            I420ToABGR(d, Int32(width), du, Int32(cw), dv, Int32(cw), tb, Int32(width * 4), Int32(width), Int32(height))
                            ARGBMirror(tb, Int32(width * 4), o, Int32(width * 4), Int32(width), Int32(height))
                        }
                    } else {
                        I420ToABGR(d, Int32(width), du, Int32(cw), dv, Int32(cw), o, Int32(width * 4), Int32(width), Int32(height))
                    }
                }
            }
        }
    }

    private func canvas(columns: Int, rows: Int) -> OpaquePointer? {
        let key = columns << 16 | rows
        if let c = canvases[key] { return c }
        if canvases.count > 16 {  // a resize storm: keep the cache small
            for c in canvases.values { chafa_canvas_unref(c) }
            canvases = [:]
        }
        let config = chafa_canvas_config_new()
        let symbols = chafa_symbol_map_new()
        defer {
            chafa_symbol_map_unref(symbols)
            chafa_canvas_config_unref(config)
        }
        if unicode {
            // Half blocks (▀ ▄), full block and space: two square pixels a cell.
            chafa_symbol_map_add_by_tags(symbols, ChafaSymbolTags(rawValue: CHAFA_SYMBOL_TAG_VHALF.rawValue | CHAFA_SYMBOL_TAG_SOLID.rawValue
                                                                   | CHAFA_SYMBOL_TAG_SPACE.rawValue))
        } else {
            chafa_symbol_map_add_by_tags(symbols, CHAFA_SYMBOL_TAG_ASCII)
        }
        chafa_canvas_config_set_symbol_map(config, symbols)
        chafa_canvas_config_set_geometry(config, Int32(columns), Int32(rows))
        let canvasMode: ChafaCanvasMode
        switch mode {
        case .truecolor: canvasMode = CHAFA_CANVAS_MODE_TRUECOLOR
        case .indexed256: canvasMode = CHAFA_CANVAS_MODE_INDEXED_240  // the 16 ANSI colours vary by theme: not relied on
        case .indexed16: canvasMode = CHAFA_CANVAS_MODE_INDEXED_16
        case .monochrome: canvasMode = CHAFA_CANVAS_MODE_FGBG
        }
        chafa_canvas_config_set_canvas_mode(config, canvasMode)
        chafa_canvas_config_set_dither_mode(config, CHAFA_DITHER_MODE_NONE)
        chafa_canvas_config_set_work_factor(config, 0.0)
        chafa_canvas_config_set_preprocessing_enabled(config, 0)  // its contrast stretch is not deterministic (goldens)
        guard let c = chafa_canvas_new(config) else { return nil }
        canvases[key] = c
        return c
    }
}
