@testable import CallsCore
import Foundation
import Testing

/// The shared terminal's grid: frames carry only what changed, applying them reproduces the
/// sharer's grid cell for cell (styles, wide characters, the cursor), frames split to fit a
/// message still apply in order, and malformed frames change nothing.
struct TerminalGridTests {
    static func grid(_ lines: [String], columns: Int = 20, rows: Int = 4, style: GridStyle = .plain) -> TerminalGrid {
        var g = TerminalGrid(columns: columns, rows: rows)
        for (y, l) in lines.enumerated() { for (x, ch) in l.enumerated() { g[x, y] = GridCell(text: String(ch), style: style) } }
        return g
    }

    @Test func aFullFrameThenDiffsReproduceTheGrid() throws {
        var red = GridStyle(fg: 1)
        red.bold = true
        var a = Self.grid(["hello", "world"])
        a[0, 2] = GridCell(text: "日", style: red)
        a[1, 2] = GridCell(text: "", style: red)
        a[2, 2] = GridCell(text: "x", style: GridStyle(fg: GridStyle.rgbFlag | 0x10_20_30, bg: 200))
        a.cursor = GridPoint(x: 3, y: 2)
        let full = a.frame(since: nil, seq: 1)
        #expect(full.full && full.runs.count == 5, "\(full.runs)")  // hello, world, 日, its tail, x
        var viewer = TerminalGrid(columns: 1, rows: 1)
        let okFull = viewer.apply(full)
        #expect(okFull)
        #expect(viewer == a)
        var b = a
        b[1, 0] = GridCell(text: "a")
        b[4, 1] = GridCell(text: "!")
        b.cursor = nil
        let diff = b.frame(since: a, seq: 2)
        #expect(!diff.full && diff.runs.map(\.text) == ["a", "!"])
        let okDiff = viewer.apply(diff)
        #expect(okDiff)
        #expect(viewer == b)
        #expect(viewer.text == "hallo\nworl!\n日x\n", "the wide character's right half adds no text")
        // Over the wire and back.
        let json = try JSONEncoder().encode(diff)
        #expect(try JSONDecoder().decode(ScreenShareFrame.self, from: json) == diff)
    }

    @Test func aResizeIsAFullFrameAndSplitsApplyInOrder() {
        let a = Self.grid(["one"], columns: 10, rows: 2)
        let b = Self.grid((0..<30).map { "row \($0) " + String(repeating: "z", count: 10) }, columns: 40, rows: 30)
        let f = b.frame(since: a, seq: 7)
        #expect(f.full, "another size: everything")
        let parts = f.split(maxRuns: 4)
        #expect(f.runs.count == 90, "row, N, zzz…: blanks between words are not sent in a full frame")
        #expect(parts.count == 23 && parts.map(\.seq) == Array(7..<30) && parts.filter(\.full).count == 1)
        var v = a
        for p in parts { let ok = v.apply(p); #expect(ok) }
        #expect(v == b)
    }

    @Test func malformedFramesChangeNothing() {
        var g = Self.grid(["keep"])
        let before = g
        let badStyle = ScreenShareFrame(seq: 1, full: false, columns: 20, rows: 4, cursor: nil, styles: [], runs: [.init(x: 0, y: 0, text: "x", style: 0)])
        let outside = ScreenShareFrame(seq: 1, full: false, columns: 20, rows: 4, cursor: nil, styles: [.plain], runs: [.init(x: 0, y: 9, text: "x", style: 0)])
        let huge = ScreenShareFrame(seq: 1, full: true, columns: 5000, rows: 4, cursor: nil, styles: [], runs: [])
        let otherSize = ScreenShareFrame(seq: 1, full: false, columns: 30, rows: 4, cursor: nil, styles: [.plain], runs: [])
        for f in [badStyle, outside, huge, otherSize] { let ok = g.apply(f); #expect(!ok) }
        #expect(g == before)
    }
}
