import CZlib
import CallsVideo
@testable import CallsTUI
import Foundation
import XCTest

/// Video as pixels: what the terminal's answers mean (kitty, sixel, neither), the kitty
/// sequence carrying exactly the frame's pixels, chafa's sixel decoded from outside
/// (`sixel2png`), tiles that leave their picture cells blank for the driver, and the writer
/// sending a picture only when its frame or place changes.
final class TerminalGraphicsTests: XCTestCase {
    func testTheTerminalsAnswersDecideNeverItsName() {
        let da1Sixel = "\u{1B}[?62;4;6;22c", da1Plain = "\u{1B}[?62;6;22c"
        XCTAssertEqual(TerminalGraphics.parse(reply: "\u{1B}_Gi=31;OK\u{1B}\\" + da1Plain), .kitty)
        XCTAssertEqual(TerminalGraphics.parse(reply: "\u{1B}_Gi=31;OK\u{1B}\\" + da1Sixel), .kitty, "kitty wins where both work")
        XCTAssertEqual(TerminalGraphics.parse(reply: "\u{1B}_Gi=31;ENOTSUPPORTED:x\u{1B}\\" + da1Sixel), .sixel)
        XCTAssertEqual(TerminalGraphics.parse(reply: da1Sixel), .sixel)
        XCTAssertEqual(TerminalGraphics.parse(reply: "\u{1B}[?4;6c"), .cells, "the first number is the class, not an attribute")
        XCTAssertEqual(TerminalGraphics.parse(reply: da1Plain), .cells, "tmux without sixel, most terminals")
        XCTAssertEqual(TerminalGraphics.parse(reply: ""), .cells, "no answer at all")
        XCTAssertEqual(TerminalGraphics.parse(reply: "\u{1B}[?62;14;4"), .cells, "an unfinished answer")
        XCTAssertTrue(TerminalGraphics.isComplete(da1Plain))
        XCTAssertFalse(TerminalGraphics.isComplete("\u{1B}_Gi=31;OK\u{1B}\\"))
        XCTAssertEqual(TerminalGraphics.detect(environment: ["CALLROOM_GRAPHICS": "sixel"]), .sixel, "the override")
        XCTAssertEqual(TerminalGraphics.detect(environment: ["NO_COLOR": "1"]), .cells)
    }

    /// A kitty sequence taken apart: the first chunk's keys, the chunks, the inflated pixels.
    func decodeKitty(_ s: String, pixels n: Int, file: StaticString = #filePath, line: UInt = #line) throws -> (keys: [String: String], chunks: Int, rgb: [UInt8]) {
        let chunks = s.components(separatedBy: "\u{1B}\\").filter { !$0.isEmpty }
        var payload = "", first: [String: String] = [:]
        for (i, c) in chunks.enumerated() {
            XCTAssertTrue(c.hasPrefix("\u{1B}_G"), "APC G", file: file, line: line)
            let parts = c.dropFirst(3).split(separator: ";", maxSplits: 1).map(String.init)
            XCTAssertEqual(parts.count, 2, file: file, line: line)
            let keys = Dictionary(parts[0].split(separator: ",").map { kv -> (String, String) in
                let p = kv.split(separator: "=", maxSplits: 1).map(String.init)
                return (p[0], p.count > 1 ? p[1] : "")
            }, uniquingKeysWith: { a, _ in a })
            XCTAssertEqual(keys["m"], i == chunks.count - 1 ? "0" : "1", "chunk \(i): more follow but the last", file: file, line: line)
            XCTAssertLessThanOrEqual(parts[1].utf8.count, 4096, file: file, line: line)
            if i == 0 { first = keys }
            payload += parts[1]
        }
        let packed = Array(try XCTUnwrap(Data(base64Encoded: payload), file: file, line: line))
        var rgb = [UInt8](repeating: 0, count: n * 3)
        var length = uLongf(rgb.count)
        XCTAssertEqual(uncompress(&rgb, &length, packed, uLong(packed.count)), Z_OK, "zlib data", file: file, line: line)
        XCTAssertEqual(Int(length), n * 3, file: file, line: line)
        return (first, chunks.count, rgb)
    }

    func testTheKittySequenceCarriesTheFramesPixels() throws {
        let frame = try TestPatternSource(name: "ada", width: 320, height: 180).read(at: 0)
        let rgba = TerminalPicture(mode: .truecolor, unicode: true).rgba(frame, width: 160, height: 90)
        let s = TerminalGraphicsEncoder.kitty(rgba: rgba, width: 160, height: 90, id: 7, columns: 40, rows: 11)
        let (keys, _, pixels) = try decodeKitty(s, pixels: 160 * 90)
        XCTAssertEqual(keys["a"], "T"); XCTAssertEqual(keys["f"], "24"); XCTAssertEqual(keys["o"], "z")
        XCTAssertEqual(keys["s"], "160"); XCTAssertEqual(keys["v"], "90"); XCTAssertEqual(keys["i"], "7")
        XCTAssertEqual(keys["c"], "40"); XCTAssertEqual(keys["r"], "11")
        XCTAssertEqual(keys["z"], "-1", "under the text"); XCTAssertEqual(keys["C"], "1", "the cursor stays")
        XCTAssertLessThan(s.utf8.count, 160 * 90 * 3 / 4, "the pattern compresses: \(s.utf8.count) bytes")
        var expected: [UInt8] = []
        for i in 0..<(160 * 90) { expected += [rgba[4 * i], rgba[4 * i + 1], rgba[4 * i + 2]] }
        XCTAssertEqual(pixels, expected, "exactly the frame's pixels, as RGB")
        // The first bar (white) at the top left, the sixth (red) further along.
        XCTAssertGreaterThan(pixels[0], 200); XCTAssertGreaterThan(pixels[1], 200)
        let red = (10 * 160 + 5 * 160 / 7 + 10) * 3
        XCTAssertGreaterThan(pixels[red], 200); XCTAssertLessThan(pixels[red + 1], 60)
        XCTAssertEqual(TerminalGraphicsEncoder.kittyDelete(id: 7), "\u{1B}_Ga=d,d=I,i=7,q=2\u{1B}\\")

        // A camera's noise does not compress: many chunks, the same pixels back.
        var rng = SystemRandomNumberGenerator()
        let noise = (0..<(160 * 90 * 4)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let (_, chunks, back) = try decodeKitty(TerminalGraphicsEncoder.kitty(rgba: noise, width: 160, height: 90, id: 1, columns: 40, rows: 11),
                                                pixels: 160 * 90)
        XCTAssertGreaterThan(chunks, 10, "43,200 bytes in 4096-byte chunks")
        XCTAssertEqual(back[3], noise[4], "RGB of RGBA")
        XCTAssertEqual(back[5], noise[6])
    }

    func testChafasSixelDecodesToThePicture() throws {
        let frame = try TestPatternSource(name: "ada", width: 320, height: 180).read(at: 0)
        let rgba = TerminalPicture(mode: .truecolor, unicode: true).rgba(frame, width: 320, height: 180)
        let sixel = try XCTUnwrap(TerminalGraphicsEncoder().sixel(rgba: rgba, width: 320, height: 180, columns: 32, rows: 9,
                                                                  cellWidth: 10, cellHeight: 20))
        XCTAssertTrue(sixel.hasPrefix("\u{1B}P"), "a DCS")
        XCTAssertTrue(sixel.contains("q"), "sixel data")
        XCTAssertTrue(sixel.hasSuffix("\u{1B}\\"), "ended by ST")
        // Decoded by libsixel, not by us.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sixel2png") else {
            throw XCTSkip("sixel2png (Debian libsixel-bin, scripts/install-deps.sh) is not installed")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sixel-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let six = dir.appendingPathComponent("p.six").path, png = dir.appendingPathComponent("p.png").path
        try sixel.write(toFile: six, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sixel2png")
        p.arguments = ["-i", six, "-o", png]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let data = try XCTUnwrap(FileManager.default.contents(atPath: png))
        XCTAssertEqual(Array(data.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "a PNG")
        // IHDR: the picture is 32 × 10 px cells wide and 9 × 20 tall.
        let w = data[16..<20].reduce(0) { $0 << 8 | Int($1) }, h = data[20..<24].reduce(0) { $0 << 8 | Int($1) }
        XCTAssertEqual(w, 320)
        XCTAssertEqual(h, 180)
    }

    func testPixelTilesLeaveTheirCellsBlankUnderTheBadges() {
        var m = Fixture.model(count: 4)
        m.pictureMode = .truecolor
        m.graphics = .kitty
        let frame = VideoTileTests.pattern
        for (i, pid) in ["pid-you", "pid-u1", "pid-u2"].enumerated() { m.video[pid] = TileVideo(frame: frame, serial: UInt64(i + 1), mirrored: pid == "pid-you") }
        let b = CallScreenRenderer.render(m, width: 120, height: 40)
        XCTAssertEqual(Set(b.pixelPictures.map(\.pid)), ["pid-you", "pid-u1", "pid-u2"])
        for p in b.pixelPictures {
            for y in p.rect.y..<p.rect.maxY { for x in p.rect.x..<p.rect.maxX { XCTAssertEqual(b[x, y].char, " ", "\(p.pid) \(x),\(y) is the picture's") } }
            XCTAssertFalse(b[p.rect.x, p.rect.y].style.isPicture)
        }
        XCTAssertTrue(b.text.contains("Grace Hopper") && b.text.contains("muted"), "names and badges stay as text")
        XCTAssertFalse(b.cells.contains { $0.style.isPicture }, "no picture cells: the pixels are the driver's")
        m.graphics = .cells
        XCTAssertTrue(CallScreenRenderer.render(m, width: 120, height: 40).pixelPictures.isEmpty)
    }

    func testTheWriterSendsOnlyWhatChanged() throws {
        let frame = VideoTileTests.pattern
        func pic(_ pid: String, serial: UInt64, x: Int = 2) -> PixelPicture {
            PixelPicture(pid: pid, rect: Rect(x: x, y: 3, width: 30, height: 8), video: TileVideo(frame: frame, serial: serial, mirrored: false))
        }
        var out: [String] = []
        // No time budget here (a debug build on a busy machine can take 4 ms for one image);
        // the budget's own behaviour is `slow`'s, below.
        let kitty = PixelPictureWriter(graphics: .kitty)
        kitty.budgetNanoseconds = .max
        XCTAssertFalse(kitty.update([pic("a", serial: 1), pic("b", serial: 1, x: 40)], cell: (8, 16)) { out.append($0) })
        XCTAssertEqual(kitty.imagesSent, 2)
        XCTAssertTrue(out.joined().hasPrefix("\u{1B}7\u{1B}[4;3H\u{1B}_Ga=T"), "cursor saved, moved to row 4 col 3, the image")
        XCTAssertFalse(kitty.update([pic("a", serial: 1), pic("b", serial: 1, x: 40)], cell: (8, 16)) { out.append($0) })
        XCTAssertEqual(kitty.imagesSent, 2, "the same frames: nothing sent")
        out = []
        XCTAssertFalse(kitty.update([pic("a", serial: 2)], cell: (8, 16)) { out.append($0) })
        XCTAssertEqual(kitty.imagesSent, 3, "a's new frame")
        XCTAssertTrue(out.joined().contains("\u{1B}_Ga=d,d=I,i=2,q=2"), "b's tile went: its image deleted")

        let sixel = PixelPictureWriter(graphics: .sixel)
        sixel.budgetNanoseconds = .max
        XCTAssertFalse(sixel.update([pic("a", serial: 1)], cell: (8, 16)) { _ in })
        XCTAssertFalse(sixel.update([pic("a", serial: 2)], cell: (8, 16)) { _ in }, "a new frame in place: drawn over")
        XCTAssertTrue(sixel.update([pic("a", serial: 2, x: 10)], cell: (8, 16)) { _ in }, "moved: the screen must be repainted first")
        XCTAssertTrue(sixel.update([], cell: (8, 16)) { _ in }, "gone: likewise")
        XCTAssertEqual(sixel.imagesSent, 2)

        // Out of budget: one picture a call, the longest waiting first, the rest pending.
        let slow = PixelPictureWriter(graphics: .kitty)
        slow.budgetNanoseconds = 0
        let three = [pic("a", serial: 1), pic("b", serial: 1, x: 40), pic("c", serial: 1, x: 80)]
        _ = slow.update(three, cell: (8, 16)) { _ in }
        XCTAssertEqual(slow.imagesSent, 1)
        XCTAssertTrue(slow.pending)
        _ = slow.update(three, cell: (8, 16)) { _ in }
        _ = slow.update(three, cell: (8, 16)) { _ in }
        XCTAssertEqual(slow.imagesSent, 3, "each in turn")
        XCTAssertFalse(slow.pending)
        let next = [pic("a", serial: 2), pic("b", serial: 2, x: 40), pic("c", serial: 2, x: 80)]
        var order: [String] = []
        for _ in 0..<3 { _ = slow.update(next, cell: (8, 16)) { out in order.append(out.contains("i=1,") ? "a" : out.contains("i=2,") ? "b" : "c") } }
        XCTAssertEqual(order, ["a", "b", "c"], "the one sent longest ago goes first")
    }
}
