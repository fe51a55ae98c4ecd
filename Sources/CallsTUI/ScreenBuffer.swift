/// A text style: colour and attributes of a cell.
public struct CellStyle: Hashable, Sendable {
    public enum Color: Int, Sendable { case normal = 0, red, green, yellow, blue, magenta, cyan, white }
    public var fg: Color = .normal
    public var bold = false
    public var reverse = false
    public var dim = false

    public init(fg: Color = .normal, bold: Bool = false, reverse: Bool = false, dim: Bool = false) {
        self.fg = fg
        self.bold = bold
        self.reverse = reverse
        self.dim = dim
    }

    public static let plain = CellStyle()
}

/// One character cell of the screen.
public struct Cell: Hashable, Sendable {
    public var char: Unicode.Scalar
    public var style: CellStyle
    public static let blank = Cell(char: " ", style: .plain)
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
}

/// A grid of cells that views draw into; drivers present it (writing only changed cells).
/// A value type; owned by the UI thread.
public struct ScreenBuffer: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]
    /// Box-drawing characters: Unicode when the terminal's locale is UTF-8, else ASCII.
    public var unicode: Bool

    public init(width: Int, height: Int, unicode: Bool = true) {
        self.width = max(0, width)
        self.height = max(0, height)
        self.unicode = unicode
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public subscript(x: Int, y: Int) -> Cell {
        get { (x >= 0 && y >= 0 && x < width && y < height) ? cells[y * width + x] : .blank }
        set { if x >= 0 && y >= 0 && x < width && y < height { cells[y * width + x] = newValue } }
    }

    /// Writes `text` from (x, y), clipped to `maxWidth` cells and the screen. Returns cells written.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, style: CellStyle = .plain, maxWidth: Int? = nil) -> Int {
        guard y >= 0 && y < height else { return 0 }
        let limit = min(maxWidth ?? width, width - x)
        var i = 0
        for s in text.unicodeScalars {
            guard i < limit else { break }
            let c = unicode ? s : (s.isASCII ? s : "?")
            self[x + i, y] = Cell(char: c, style: style)
            i += 1
        }
        return i
    }

    public mutating func fill(_ r: Rect, char: Unicode.Scalar = " ", style: CellStyle = .plain) {
        for yy in r.y..<r.maxY { for xx in r.x..<r.maxX { self[xx, yy] = Cell(char: char, style: style) } }
    }

    /// Draws a border around `r` with an optional title in the top edge.
    public mutating func box(_ r: Rect, title: String? = nil, style: CellStyle = .plain) {
        guard r.width >= 2 && r.height >= 2 else { return }
        let (h, v, tl, tr, bl, br): (Unicode.Scalar, Unicode.Scalar, Unicode.Scalar, Unicode.Scalar, Unicode.Scalar, Unicode.Scalar) =
            unicode ? ("─", "│", "┌", "┐", "└", "┘") : ("-", "|", "+", "+", "+", "+")
        for xx in r.x + 1..<r.maxX - 1 {
            self[xx, r.y] = Cell(char: h, style: style)
            self[xx, r.maxY - 1] = Cell(char: h, style: style)
        }
        for yy in r.y + 1..<r.maxY - 1 {
            self[r.x, yy] = Cell(char: v, style: style)
            self[r.maxX - 1, yy] = Cell(char: v, style: style)
        }
        self[r.x, r.y] = Cell(char: tl, style: style)
        self[r.maxX - 1, r.y] = Cell(char: tr, style: style)
        self[r.x, r.maxY - 1] = Cell(char: bl, style: style)
        self[r.maxX - 1, r.maxY - 1] = Cell(char: br, style: style)
        if let t = title, r.width > 4 { put(" \(t) ", x: r.x + 1, y: r.y, style: style, maxWidth: r.width - 2) }
    }

    /// The screen as lines of text (trailing spaces kept), for tests and golden files.
    public var lines: [String] {
        (0..<height).map { y in String(String.UnicodeScalarView((0..<width).map { cells[y * width + $0].char })) }
    }

    public var text: String { lines.joined(separator: "\n") }
}
