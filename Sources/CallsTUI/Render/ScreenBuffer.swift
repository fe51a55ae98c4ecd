import CallsCore
import CallsVideo
/// A text style: colour and attributes of a cell.
public struct CellStyle: Hashable, Sendable {
    public enum Color: Int, Sendable { case normal = 0, red, green, yellow, blue, magenta, cyan, white }
    public var fg: Color = .normal
    public var bold = false
    public var reverse = false
    public var dim = false
    public var underline = false
    /// A picture cell's colours in the terminal's `PictureMode` (packed RGB, or a palette
    /// index); -1: none (the text colours above apply).
    public var pictureFG: Int32 = -1
    public var pictureBG: Int32 = -1
    public var isPicture: Bool { pictureFG >= 0 || pictureBG >= 0 }

    public init(fg: Color = .normal, bold: Bool = false, reverse: Bool = false, dim: Bool = false, underline: Bool = false) {
        self.fg = fg
        self.bold = bold
        self.reverse = reverse
        self.dim = dim
        self.underline = underline
    }

    public static let plain = CellStyle()
}

/// One character cell of the screen: a plain value (no references), so a screen copies and
/// diffs like memory. A wide character (CJK, emoji) takes its cell and the next, which holds
/// `Cell.wideTail`. A grapheme of several code points (a base and its marks, an emoji
/// sequence) keeps its base here and the whole cluster in its buffer (`ScreenBuffer.character`).
public struct Cell: Hashable, Sendable {
    /// The code point drawn (the base of a longer cluster).
    public var char: Unicode.Scalar
    public var style: CellStyle
    /// The right half of the wide character in the cell to its left (drawn by that one).
    public private(set) var isWideTail = false
    /// 1 + the index of the cell's whole cluster in its buffer's table; 0 when `char` is all.
    var cluster: UInt32 = 0
    public init(char: Unicode.Scalar, style: CellStyle) { self.char = char; self.style = style }
    public static let blank = Cell(char: " ", style: .plain)
    public static let wideTail: Cell = { var c = Cell(char: " ", style: .plain); c.isWideTail = true; return c }()

    /// Equal without looking at clusters: decides alone when neither cell has one.
    @inline(__always)
    static func samePlain(_ a: Cell, _ b: Cell) -> Bool? {
        guard a.char == b.char, a.style == b.style, a.isWideTail == b.isWideTail else { return false }
        return a.cluster == 0 && b.cluster == 0 ? true : nil
    }
}

/// A rectangle on the screen, in cells.
public struct Rect: Equatable, Sendable {
    public var x: Int, y: Int, width: Int, height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x; self.y = y; self.width = max(0, width); self.height = max(0, height)
    }
    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public func contains(x px: Int, y py: Int) -> Bool { px >= x && px < maxX && py >= y && py < maxY }
    /// The rectangle shrunk by `n` cells on every side.
    public func inset(_ n: Int) -> Rect { Rect(x: x + n, y: y + n, width: width - 2 * n, height: height - 2 * n) }
}

/// A tile's video as pixels: the cells it covers (blank in the buffer) and its frame. Equal when
/// the frame (its serial) and the place are.
public struct PixelPicture: Equatable, Sendable {
    public var pid: String
    public var rect: Rect
    public var video: TileVideo
}

/// A grid of cells that views draw into; drivers present it (writing only changed cells).
/// Text is measured in display cells (`DisplayWidth`), so wide characters never overrun.
/// A value type; owned by the UI thread.
public struct ScreenBuffer: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]
    /// Clusters of more than one code point that cells refer to.
    private var clusters: [String] = []
    /// Unicode glyphs when the terminal's locale is UTF-8, else ASCII only.
    public var unicode: Bool { didSet { glyphs = .for(unicode: unicode) } }
    public private(set) var glyphs: GlyphSet
    /// The participants whose tiles were drawn big enough for their video, in drawing order
    /// (the call screen subscribes to exactly these).
    public internal(set) var videoTiles: [String] = []
    /// Video drawn as pixels by the driver's graphics protocol (sixel, kitty) over cells the
    /// buffer leaves blank; empty when pictures are character cells.
    public internal(set) var pixelPictures: [PixelPicture] = []

    public init(width: Int, height: Int, unicode: Bool = true) {
        self.width = max(0, width)
        self.height = max(0, height)
        self.unicode = unicode
        glyphs = .for(unicode: unicode)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public subscript(x: Int, y: Int) -> Cell {
        get { (x >= 0 && y >= 0 && x < width && y < height) ? cells[y * width + x] : .blank }
        set {
            guard x >= 0 && y >= 0 && x < width && y < height else { return }
            // Overwriting half of a wide character blanks its other half.
            let i = y * width + x
            if cells[i].isWideTail, x > 0, !newValue.isWideTail { cells[i - 1] = Cell(char: " ", style: cells[i - 1].style) }
            if x + 1 < width, cells[i + 1].isWideTail { cells[i + 1] = .blank }
            cells[i] = newValue
        }
    }

    /// Dims every cell of `r` (what is shown there is stale); pictures lose their colours.
    public mutating func dim(_ r: Rect) {
        for y in max(0, r.y)..<min(height, r.maxY) {
            for x in max(0, r.x)..<min(width, r.maxX) {
                cells[y * width + x].style.dim = true
            }
        }
    }

    /// Writes `text` from (x, y) within `maxWidth` cells and the screen. Text that does not fit
    /// ends with an ellipsis (`ellipsis: false` clips instead). Returns the cells written.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, style: CellStyle = .plain, maxWidth: Int? = nil, ellipsis: Bool = true) -> Int {
        guard y >= 0 && y < height, x < width else { return 0 }
        let limit = min(maxWidth ?? width, width - x)
        guard limit > 0 else { return 0 }
        var shown = text
        if DisplayWidth.of(text) > limit {
            shown = ellipsis ? DisplayWidth.truncate(text, to: limit, ellipsis: glyphs.ellipsis) : DisplayWidth.prefix(text, cells: limit)
        }
        var i = 0
        if shown.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            // ASCII: one cell per byte.
            for byte in shown.utf8 {
                guard i < limit else { break }
                self[x + i, y] = Cell(char: Unicode.Scalar(byte), style: style)
                i += 1
            }
            return i
        }
        // Scalar by scalar: marks, joiners and variation selectors join the cell before them.
        var lastX = -1
        var lastWidth = 0
        var joined = false
        for var u in shown.unicodeScalars {
            // Never hand the terminal a control character (ESC would start a sequence): show it.
            if DisplayText.isUnsafe(u) { u = unicode ? "\u{FFFD}" : "?" }
            if !unicode {
                if DisplayWidth.extends(u) || u.value == 0x200D { continue }
                // Punctuation the UI uses has an ASCII spelling; anything else the locale cannot show is '?'.
                for a in (u.isASCII ? String(u) : (Self.asciiSpelling[u] ?? "?")).unicodeScalars {
                    guard i < limit else { break }
                    self[x + i, y] = Cell(char: a, style: style)
                    i += 1
                }
                continue
            }
            if joined || DisplayWidth.extends(u) || u.value == 0x200D {
                joined = u.value == 0x200D
                guard lastX >= 0 else { continue }
                var c = self[lastX, y]
                let cluster = (c.cluster > 0 ? clusters[Int(c.cluster) - 1] : String(c.char)) + String(u)
                clusters.append(cluster)
                c.cluster = UInt32(clusters.count)
                cells[y * width + lastX] = c
                // A variation selector 16 makes a text symbol an emoji: two cells, when there is room.
                if u.value == 0xFE0F, lastWidth == 1, i < limit {
                    self[lastX + 1, y] = .wideTail
                    i += 1
                    lastWidth = 2
                }
                continue
            }
            let w = DisplayWidth.of(u)
            if w == 0 { continue }
            guard i + w <= limit else { break }
            self[x + i, y] = Cell(char: u, style: style)
            if w == 2 { self[x + i + 1, y] = .wideTail }
            lastX = x + i
            lastWidth = w
            i += w
        }
        return i
    }

    /// ASCII spellings of the punctuation and symbols in the UI's own text (toasts, help).
    static let asciiSpelling: [Unicode.Scalar: String] = [
        "…": "...", "—": "-", "–": "-", "·": "-", "→": "->", "←": "<-", "↑": "^", "↓": "v", "●": "*", "○": "o",
        "×": "x", "’": "'", "‘": "'", "“": "\"", "”": "\"", "›": ">", "‹": "<", "▲": "^", "✖": "x", "♪": ">", "◆": "@",
        "▣": "#", "▨": "%", "✕": "X", "⇪": ">", "✉": "+", "☰": "=", "▦": "%", "⟲": "@",
    ]

    public mutating func fill(_ r: Rect, char: Unicode.Scalar = " ", style: CellStyle = .plain) {
        let x0 = max(0, r.x), x1 = min(width, r.maxX), y0 = max(0, r.y), y1 = min(height, r.maxY)
        guard x0 < x1, y0 < y1 else { return }
        for yy in y0..<y1 { for xx in x0..<x1 { self[xx, yy] = Cell(char: char, style: style) } }
    }

    /// Draws a border around `r` with an optional title in the top edge (cut with an ellipsis).
    public mutating func box(_ r: Rect, title: String? = nil, style: CellStyle = .plain, titleStyle: CellStyle? = nil) {
        guard r.width >= 2 && r.height >= 2 else { return }
        let g = glyphs.box
        for xx in r.x + 1..<r.maxX - 1 {
            self[xx, r.y] = Cell(char: g.h, style: style)
            self[xx, r.maxY - 1] = Cell(char: g.h, style: style)
        }
        for yy in r.y + 1..<r.maxY - 1 {
            self[r.x, yy] = Cell(char: g.v, style: style)
            self[r.maxX - 1, yy] = Cell(char: g.v, style: style)
        }
        self[r.x, r.y] = Cell(char: g.tl, style: style)
        self[r.maxX - 1, r.y] = Cell(char: g.tr, style: style)
        self[r.x, r.maxY - 1] = Cell(char: g.bl, style: style)
        self[r.maxX - 1, r.maxY - 1] = Cell(char: g.br, style: style)
        if let t = title, r.width > 4 { put(" \(t) ", x: r.x + 1, y: r.y, style: titleStyle ?? style, maxWidth: r.width - 2) }
    }

    /// The screen as lines of text (trailing spaces kept; a wide character appears once), for
    /// tests and golden files.
    public var lines: [String] {
        (0..<height).map { y in
            var s = ""
            for x in 0..<width {
                let c = cells[y * width + x]
                if !c.isWideTail { s.append(character(c)) }
            }
            return s
        }
    }

    public var text: String { lines.joined(separator: "\n") }

    /// The whole grapheme a cell shows (its base and any marks or joined code points).
    public func character(_ c: Cell) -> Character {
        c.cluster > 0 && Int(c.cluster) <= clusters.count ? Character(clusters[Int(c.cluster) - 1]) : Character(c.char)
    }

    /// Indices of the cells that differ from `old` (same size), in order.
    public func changedCells(since old: ScreenBuffer) -> [Int] {
        var out: [Int] = []
        cells.withUnsafeBufferPointer { new in
            old.cells.withUnsafeBufferPointer { was in
                for i in 0..<min(new.count, was.count) {
                    switch Cell.samePlain(new[i], was[i]) {
                    case true?: continue
                    case false?: out.append(i)
                    case nil: if character(new[i]) != old.character(was[i]) { out.append(i) }
                    }
                }
            }
        }
        return out
    }

    public static func == (a: ScreenBuffer, b: ScreenBuffer) -> Bool {
        a.width == b.width && a.height == b.height && a.unicode == b.unicode && a.changedCells(since: b).isEmpty
    }

    /// The column (in cells) where `needle` starts on row `y`, if it is there.
    public func column(of needle: String, row y: Int) -> Int? {
        guard y >= 0 && y < height else { return nil }
        let line = lines[y]
        guard let r = line.range(of: needle) else { return nil }
        return DisplayWidth.of(line[line.startIndex..<r.lowerBound])
    }
}

extension ScreenBuffer {
    /// Draws a picture's cells with their top-left corner at (x, y), clipped to the buffer.
    /// ASCII characters only when the buffer is not Unicode (the picture was made that way).
    public mutating func put(_ p: Picture, x: Int, y: Int) {
        for row in 0..<p.rows {
            let yy = y + row
            guard yy >= 0, yy < height else { continue }
            for col in 0..<p.columns {
                let xx = x + col
                guard xx >= 0, xx < width else { continue }
                let c = p[col, row]
                var style = CellStyle.plain
                if p.mode != .monochrome { style.pictureFG = c.fg; style.pictureBG = c.bg }
                self[xx, yy] = Cell(char: unicode || c.char.isASCII ? c.char : " ", style: style)
            }
        }
    }
}
