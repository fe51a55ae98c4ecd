import CallsSupport

/// A shared terminal as text: a grid of cells (a character and its style) and the cursor. The
/// sharer captures one (`callroom share`), sends what changed as `ScreenShareFrame`s, and every
/// viewer applies them to its own copy — exact text, not a picture of it. A value; any thread.
public struct TerminalGrid: Sendable, Equatable {
    public private(set) var columns: Int
    public private(set) var rows: Int
    public private(set) var cells: [GridCell]
    public var cursor: GridPoint?

    public static let maxColumns = 300
    public static let maxRows = 100

    public init(columns: Int, rows: Int) {
        self.columns = max(1, min(Self.maxColumns, columns))
        self.rows = max(1, min(Self.maxRows, rows))
        cells = Array(repeating: .blank, count: self.columns * self.rows)
    }

    public subscript(x: Int, y: Int) -> GridCell {
        get { x >= 0 && y >= 0 && x < columns && y < rows ? cells[y * columns + x] : .blank }
        set { if x >= 0 && y >= 0 && x < columns && y < rows { cells[y * columns + x] = newValue } }
    }

    /// One row's characters (trailing blanks kept).
    public func line(_ y: Int) -> String { (0..<columns).map { self[$0, y].text }.joined() }
    public var text: String { (0..<rows).map { line($0).replacingTrailingSpaces() }.joined(separator: "\n") }

    /// The frame that turns `old` (nil: nothing yet, or another size) into this grid: the cells
    /// that differ, as runs of one style on one row. `full` frames replace everything.
    public func frame(since old: TerminalGrid?, seq: Int) -> ScreenShareFrame {
        let full = old == nil || old?.columns != columns || old?.rows != rows
        var styles: [GridStyle] = [], index: [GridStyle: Int] = [:]
        var runs: [ScreenShareFrame.Run] = []
        for y in 0..<rows {
            var x = 0
            while x < columns {
                let c = self[x, y]
                if !full, let o = old, o[x, y] == c { x += 1; continue }
                if full && c == .blank { x += 1; continue }
                let start = x
                var text = ""
                if c.text.isEmpty {
                    x += 1  // the right half of a wide character: a run of its own, with no text
                } else {
                    while x < columns, self[x, y].style == c.style, !self[x, y].text.isEmpty,
                          full ? self[x, y] != .blank || x == start : old?[x, y] != self[x, y] {
                        text += self[x, y].text
                        x += 1
                    }
                }
                let s = index[c.style] ?? { styles.append(c.style); index[c.style] = styles.count - 1; return styles.count - 1 }()
                runs.append(.init(x: start, y: y, text: text, style: s))
            }
        }
        return ScreenShareFrame(seq: seq, full: full, columns: columns, rows: rows, cursor: cursor, styles: styles, runs: runs)
    }

    /// Applies a frame (a full one resets the grid to its size first). Returns false, changing
    /// nothing, when the frame is malformed (a style index or position out of range).
    @discardableResult
    public mutating func apply(_ f: ScreenShareFrame) -> Bool {
        guard f.isWellFormed else { return false }
        if f.full { self = TerminalGrid(columns: f.columns, rows: f.rows) }
        guard f.columns == columns, f.rows == rows else { return false }
        for r in f.runs {
            var x = r.x
            if r.text.isEmpty { self[x, r.y] = GridCell(text: "", style: f.styles[r.style]) }
            for ch in r.text where x < columns {
                self[x, r.y] = GridCell(text: String(ch), style: f.styles[r.style])
                x += 1
            }
        }
        cursor = f.cursor
        return true
    }
}

public struct GridPoint: Codable, Sendable, Equatable, Hashable {
    public var x: Int
    public var y: Int
    public init(x: Int, y: Int) { self.x = x; self.y = y }
}

/// One cell: its character (one grapheme; a wide character's right half is an empty string)
/// and its style.
public struct GridCell: Sendable, Equatable, Hashable {
    public var text: String
    public var style: GridStyle
    public init(text: String, style: GridStyle = .plain) { self.text = text; self.style = style }
    public static let blank = GridCell(text: " ")
}

/// A cell's colours and attributes as the shared terminal had them. A colour is nil (the
/// terminal's default), 0…255 (the 256-colour palette; 0…15 the ANSI colours), or
/// `0x1000000 | 0xRRGGBB` (24-bit).
public struct GridStyle: Codable, Sendable, Equatable, Hashable {
    public var fg: Int?
    public var bg: Int?
    public var bold: Bool? = nil
    public var underline: Bool? = nil
    public var reverse: Bool? = nil
    public var dim: Bool? = nil
    public var italic: Bool? = nil
    public init(fg: Int? = nil, bg: Int? = nil) { self.fg = fg; self.bg = bg }
    public static let plain = GridStyle()
    public static let rgbFlag = 0x100_0000
}

/// What changed on a shared terminal (`screenShare` on the wire). `seq` rises by one per frame
/// of a share; `full` frames (the first, every few seconds, on a size change) replace the grid.
public struct ScreenShareFrame: Codable, Sendable, Equatable {
    public struct Run: Codable, Sendable, Equatable {
        public var x: Int
        public var y: Int
        /// Consecutive cells of one style, one grapheme each; empty: the cell is the right half
        /// of the wide character to its left.
        public var text: String
        /// Index into `styles`.
        public var style: Int
        public init(x: Int, y: Int, text: String, style: Int) { self.x = x; self.y = y; self.text = text; self.style = style }
    }
    public var seq: Int
    public var full: Bool
    public var columns: Int
    public var rows: Int
    public var cursor: GridPoint?
    public var styles: [GridStyle]
    public var runs: [Run]
    public init(seq: Int, full: Bool, columns: Int, rows: Int, cursor: GridPoint?, styles: [GridStyle], runs: [Run]) {
        self.seq = seq; self.full = full; self.columns = columns; self.rows = rows; self.cursor = cursor; self.styles = styles; self.runs = runs
    }

    /// A grid of at most `TerminalGrid.maxColumns` × `maxRows` whose runs start inside it and
    /// name styles it has (what viewers apply and the server passes on).
    public var isWellFormed: Bool {
        columns > 0 && rows > 0 && columns <= TerminalGrid.maxColumns && rows <= TerminalGrid.maxRows
            && runs.allSatisfy { $0.style >= 0 && $0.style < styles.count && $0.y >= 0 && $0.y < rows && $0.x >= 0 && $0.x < columns }
    }

    /// About what the frame takes in memory and on the wire: its text, plus a fixed share per
    /// run and per style (the JSON keys and numbers around them). For bounds, not billing.
    public var approximateBytes: Int {
        64 + styles.count * 48 + runs.reduce(0) { $0 + 32 + $1.text.utf8.count }
    }

    /// The frame split into frames of at most `maxRuns` runs each (the first keeps `full`, the
    /// rest are diffs that follow it), so none exceeds a WebSocket message.
    public func split(maxRuns: Int) -> [ScreenShareFrame] {
        guard runs.count > maxRuns, maxRuns > 0 else { return [self] }
        return stride(from: 0, to: runs.count, by: maxRuns).enumerated().map { i, start in
            ScreenShareFrame(seq: seq + i, full: full && i == 0, columns: columns, rows: rows, cursor: cursor, styles: styles,
                             runs: Array(runs[start..<min(runs.count, start + maxRuns)]))
        }
    }
}

extension String {
    fileprivate func replacingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
