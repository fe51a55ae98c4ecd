import CallsVideo
import Foundation
import Testing

/// The test pattern drawn as character cells by chafa: golden renders in each mode (a change
/// in chafa or in our settings shows up as a diff), and the shape and colours checked directly.
struct TerminalPictureTests {
    static let frame: VideoFrame = {
        // A fixed pattern: capture time 0, frame 0 of the sweep.
        (try? TestPatternSource(name: "golden", width: 320, height: 180).read(at: 0)) ?? VideoFrame(width: 320, height: 180)
    }()

    /// A picture as text: its characters, then its colours row by row.
    static func text(_ p: Picture) -> String {
        var s = "\(p.mode.rawValue) \(p.columns)x\(p.rows)\n"
        for y in 0..<p.rows { s += String(String.UnicodeScalarView((0..<p.columns).map { p[$0, y].char })) + "\n" }
        for y in 0..<p.rows { s += (0..<p.columns).map { x in String(format: "%x/%x", p[x, y].fg, p[x, y].bg) }.joined(separator: " ") + "\n" }
        return s
    }

    @Test(arguments: [(PictureMode.truecolor, true), (.indexed256, true), (.indexed16, true), (.monochrome, true), (.indexed256, false), (.monochrome, false)])
    func golden(mode: PictureMode, unicode: Bool) throws {
        let r = TerminalPicture(mode: mode, unicode: unicode)
        let fit = TerminalPicture.fit(width: 320, height: 180, columns: 40, rows: 12)
        let text = Self.text(r.render(Self.frame, columns: fit.columns, rows: fit.rows))
        let name = "pattern-\(mode.rawValue)-\(unicode ? "unicode" : "ascii").txt"
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden").appendingPathComponent(name).path
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" { try text.write(toFile: path, atomically: true, encoding: .utf8) }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == golden, "\(name) differs from its golden file; rerun with UPDATE_GOLDEN=1 if intended")
    }

    @Test func fitKeepsTheShape() {
        // 16:9 into 120x40 cells: 120 columns need 34 rows (half-block pixels are square).
        #expect(TerminalPicture.fit(width: 320, height: 180, columns: 120, rows: 40) == (120, 34))
        #expect(TerminalPicture.fit(width: 320, height: 180, columns: 120, rows: 10) == (36, 10))
        #expect(TerminalPicture.fit(width: 320, height: 180, columns: 0, rows: 10) == (0, 0))
    }

    @Test func truecolorCellsCarryTheBarsColours() {
        let r = TerminalPicture(mode: .truecolor, unicode: true)
        let p = r.render(Self.frame, columns: 35, rows: 10)
        // The top row's cells over each bar: both halves the bar's colour (within rounding).
        for (i, c) in TestPatternSource.bars.enumerated() {
            let cell = p[i * 5 + 2, 0]
            for packed in [cell.fg, cell.bg] where cell.char != " " || packed == cell.bg {
                let rr = Int(packed >> 16 & 0xFF), gg = Int(packed >> 8 & 0xFF), bb = Int(packed & 0xFF)
                #expect(abs(rr - c.r) < 30 && abs(gg - c.g) < 30 && abs(bb - c.b) < 30, "bar \(i): \(rr),\(gg),\(bb) vs \(c)")
            }
        }
        // Mirrored: the first bar is the last.
        let m = r.render(Self.frame, columns: 35, rows: 10, mirrored: true)
        #expect(m[2, 0].bg == p[32, 0].bg)
    }

    @Test func asciiUsesOnlyASCII() {
        let p = TerminalPicture(mode: .monochrome, unicode: false).render(Self.frame, columns: 40, rows: 12)
        #expect(p.cells.allSatisfy { $0.char.isASCII })
        #expect(Set(p.cells.map(\.char)).count > 2, "brightness shows as different characters")
    }

    @Test func detection() {
        #expect(PictureMode.detect(colors: 1 << 24, environment: [:]) == .truecolor)
        #expect(PictureMode.detect(colors: 256, environment: ["COLORTERM": "truecolor"]) == .indexed256)
        #expect(PictureMode.detect(colors: 8, environment: [:]) == .indexed16)
        #expect(PictureMode.detect(colors: 256, environment: ["NO_COLOR": "1"]) == .monochrome)
        #expect(PictureMode.detect(colors: 0, environment: [:]) == .monochrome)
    }
}
