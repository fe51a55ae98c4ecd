import CallsVideo
import Foundation
import Testing

/// Text in pixels: FreeType with the monospace font fontconfig finds (scripts/install-deps.sh
/// installs fonts-dejavu-core), and the test pattern's name and clock drawn with it.
struct TextRasterizerTests {
    @Test func aMonospaceLineIsAsWideAsItsCharactersAndHasInk() throws {
        let font = try #require(TextRasterizer.fontFile(for: "monospace"), "fontconfig finds a monospace font")
        #expect(FileManager.default.fileExists(atPath: font), "\(font)")
        let r = try #require(TextRasterizer(pixelSize: 24))
        let two = r.render("ab"), four = r.render("abcd")
        #expect(four.width == 2 * two.width, "monospace: \(four.width) vs \(two.width)")
        #expect(two.height == four.height && two.height >= 24 && two.height <= 36, "one line: \(two.height) px")
        let ink = four.coverage.filter { $0 > 128 }.count
        #expect(ink > 40 && ink < four.coverage.count / 2, "glyphs have ink, not a filled box: \(ink)")
        #expect(r.render("I").coverage != r.render("W").coverage, "different letters, different pixels")
        #expect(r.render(" ").coverage.allSatisfy { $0 == 0 }, "a space is blank")
    }

    @Test func thePatternCarriesTheNameAndARunningClock() throws {
        _ = try #require(TextRasterizer(pixelSize: 24), "a font is installed")
        let w = 320, h = 180
        let ada = try TestPatternSource(name: "ada", width: w, height: h).read(at: 5_000_000_000)
        let grace = try TestPatternSource(name: "grace hopper", width: w, height: h).read(at: 5_000_000_000)
        // The text line: between the sweep (ends near 0.58 h) and the stamp (bottom sixth).
        let band = (h * 3 / 5)..<(h * 5 / 6)
        func luma(_ f: VideoFrame, _ xs: Range<Int>) -> [UInt8] { band.flatMap { y in xs.map { f.bytes[y * w + $0] } } }
        // The ink alone (the background is the participant's colour): where it is near white.
        func ink(_ f: VideoFrame, _ xs: Range<Int>) -> [Bool] { luma(f, xs).map { $0 > 150 } }
        let left = 0..<(w / 2), right = (w * 3 / 4)..<w
        let bright = luma(ada, left).filter { $0 > 200 }.count, dark = luma(ada, left).filter { $0 < 40 }.count
        #expect(bright > 30 && dark > 200, "white letters on a dark plate at the left: \(bright) bright, \(dark) dark")
        let namesDiffer = ink(ada, left) != ink(grace, left), clocksEqual = ink(ada, right) == ink(grace, right)
        #expect(namesDiffer, "the name is the participant's")
        #expect(clocksEqual, "the clock does not depend on the name")

        // The clock runs from the first frame: 0:00.0, then a tenth later something else.
        let clocked = TestPatternSource(name: "ada", width: w, height: h)
        let first = try clocked.read(at: 7_000_000_000)
        let same = try clocked.read(at: 7_040_000_000)
        let later = try clocked.read(at: 8_300_000_000)
        let unchanged = ink(first, right) == ink(same, right), changed = ink(first, right) != ink(later, right)
        #expect(unchanged, "within the same tenth the clock is unchanged")
        #expect(changed, "1.3 s later it shows another time")
        #expect(TestPatternSource.clockText(elapsed: 0) == "0:00.0")
        #expect(TestPatternSource.clockText(elapsed: 83_456_000_000) == "1:23.4")
        #expect(TestPatternSource.clockText(elapsed: 3_600_000_000_000) == "60:00.0")
        // The machine-readable stamp is still there, untouched.
        #expect(FrameStamp.read(later) == 8_300)
    }
}
