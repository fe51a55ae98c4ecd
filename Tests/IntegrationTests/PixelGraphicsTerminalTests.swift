import CZlib
import CallRoomTestSupport
import Foundation
import XCTest

/// The call screen's pixel pictures, end to end: `callroom demo` runs on a pty whose "terminal"
/// (scripts/graphics-terminal.py) answers the queries as kitty, as a sixel terminal, or as one
/// with neither. The screen asks (never assumes), then draws video with what was answered —
/// kitty images that decode to whole frames and are deleted on exit, sixel images that libsixel
/// decodes — or, with neither, character cells only.
final class PixelGraphicsTerminalTests: XCTestCase {
    func run(_ answer: String, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let tmp = TemporaryDirectory("callroom-pixels")
        defer { tmp.remove() }
        let out = tmp.file("\(answer).out")
        let p = try ManagedProcess("/usr/bin/env", [
            "python3", BuiltProducts.packageRoot + "/scripts/graphics-terminal.py", "--answer", answer, "--size", "120x40", "--cell", "10x20",
            "--out", out, "--keys", "3.5:q,3.9:q,5:x", "--timeout", "25", "--",
            // swift test sets NO_COLOR=1, which (rightly) keeps character cells.
            "env", "-u", "NO_COLOR", "TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", BuiltProducts.path("callroom"), "demo", "--bots", "2",
        ])
        XCTAssertEqual(p.wait(timeout: 40), 0, "the demo ran and left: \(p.errorOutput)", file: file, line: line)
        return Array(try XCTUnwrap(FileManager.default.contents(atPath: out), file: file, line: line))
    }

    /// Byte ranges of `start` … `end` sequences in `b`.
    func sequences(_ b: [UInt8], start: [UInt8], end: [UInt8]) -> [ArraySlice<UInt8>] {
        var out: [ArraySlice<UInt8>] = []
        var i = 0
        while let s = find(b, start, from: i) {
            guard let e = find(b, end, from: s + start.count) else { break }
            out.append(b[s..<(e + end.count)])
            i = e + end.count
        }
        return out
    }

    func find(_ b: [UInt8], _ needle: [UInt8], from: Int) -> Int? {
        guard needle.count <= b.count, from <= b.count - needle.count else { return nil }
        var i = from
        while i <= b.count - needle.count {
            if b[i] == needle[0] && Array(b[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    let esc: UInt8 = 0x1B
    var st: [UInt8] { [esc, 0x5C] }

    func testKittyImagesCarryWholeFramesAndGoOnExit() throws {
        let b = try run("kitty")
        let apcs = sequences(b, start: [esc, 0x5F, 0x47], end: st)  // ESC _ G … ESC \
        let firsts = apcs.filter { String(decoding: $0, as: UTF8.self).contains("a=T,") }
        XCTAssertGreaterThan(firsts.count, 10, "live video: many frames in 3 s")
        // The first image whole: its chunks from its a=T to the chunk with m=0.
        let text = String(decoding: b, as: UTF8.self)
        let start = try XCTUnwrap(text.range(of: "\u{1B}_Ga=T,"))
        let head = text[start.lowerBound...].prefix(200)
        func key(_ k: String) -> Int? {
            head.split(separator: ";").first?.split(separator: ",").first { $0.hasPrefix(k + "=") }.flatMap { Int($0.dropFirst(k.count + 1)) }
        }
        let (w, h) = (try XCTUnwrap(key("s")), try XCTUnwrap(key("v")))
        XCTAssertTrue(head.contains("f=24") && head.contains("o=z") && head.contains("z=-1"), String(head))
        XCTAssertTrue((16...640).contains(w) && (16...360).contains(h), "a tile's frame: \(w)x\(h)")
        var payload = ""
        var rest = text[start.lowerBound...]
        while let semi = rest.firstIndex(of: ";"), let end = rest.range(of: "\u{1B}\\") {
            let control = rest[rest.startIndex..<semi]
            payload += rest[rest.index(after: semi)..<end.lowerBound]
            if control.contains("m=0") { break }
            rest = rest[end.upperBound...]
            guard rest.hasPrefix("\u{1B}_G") else { return XCTFail("chunks follow each other") }
        }
        let packed = Array(try XCTUnwrap(Data(base64Encoded: payload)))
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        var length = uLongf(rgb.count)
        XCTAssertEqual(uncompress(&rgb, &length, packed, uLong(packed.count)), Z_OK)
        XCTAssertEqual(Int(length), w * h * 3, "the whole frame")
        var colours = Set<Int>()
        for i in stride(from: 0, to: rgb.count - 2, by: 3) {
            let r = Int(rgb[i]) << 16, g = Int(rgb[i + 1]) << 8
            colours.insert(r | g | Int(rgb[i + 2]))
        }
        XCTAssertGreaterThan(colours.count, 3, "a picture, not a flat colour")
        // Placed inside the screen, cursor saved before and restored after.
        let before = text[..<start.lowerBound].suffix(16)
        XCTAssertTrue(before.contains("\u{1B}7\u{1B}["), String(before))
        // Leaving deletes every image (kitty would keep them), after the last one.
        let last = try XCTUnwrap(text.range(of: "\u{1B}_Ga=T,", options: .backwards))
        XCTAssertTrue(text[last.upperBound...].contains("\u{1B}_Ga=d,d=A,q=2\u{1B}\\"), "images deleted on exit")
        XCTAssertFalse(text.contains("\u{1B}P0;1;0q") || text.contains("\u{1B}Pq"), "no sixel")
    }

    func testSixelImagesDecode() throws {
        let b = try run("sixel")
        let text = String(decoding: b, as: UTF8.self)
        XCTAssertFalse(text.contains("\u{1B}_Ga=T"), "no kitty images on a sixel terminal")
        let images = sequences(b, start: [esc, 0x50], end: st).filter { $0.contains(0x71) }  // DCS … q … ST
        XCTAssertGreaterThan(images.count, 10, "live video in sixel")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sixel2png") else {
            throw XCTSkip("sixel2png (Debian libsixel-bin, scripts/install-deps.sh) is not installed")
        }
        let tmp = TemporaryDirectory("callroom-sixel")
        defer { tmp.remove() }
        let image = try XCTUnwrap(images.last)
        XCTAssertTrue(FileManager.default.createFile(atPath: tmp.file("i.six"), contents: Data(image)))
        let p = try ManagedProcess("/usr/bin/sixel2png", ["-i", tmp.file("i.six"), "-o", tmp.file("i.png")])
        XCTAssertEqual(p.wait(timeout: 10), 0, p.errorOutput)
        let png = try XCTUnwrap(FileManager.default.contents(atPath: tmp.file("i.png")))
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "libsixel decoded it")
        let w = png[16..<20].reduce(0) { $0 << 8 | Int($1) }, h = png[20..<24].reduce(0) { $0 << 8 | Int($1) }
        XCTAssertTrue(w >= 40 && h >= 40 && w % 10 == 0, "whole cells of 10 px: \(w)x\(h)")
    }

    func testATerminalWithNeitherGetsCharacterCells() throws {
        let text = String(decoding: try run("none"), as: UTF8.self)
        XCTAssertTrue(text.contains(TerminalQueries.kitty), "the screen asked")
        XCTAssertFalse(text.contains("\u{1B}_Ga=T"), "no kitty images")
        XCTAssertFalse(text.contains("\u{1B}Pq") || text.range(of: "\u{1B}P[0-9;]*q", options: .regularExpression) != nil, "no sixel")
        XCTAssertTrue(text.contains("▀"), "video as half blocks")
    }
}

enum TerminalQueries {
    static let kitty = "\u{1B}_Gi=31,s=1,v=1,a=q"
}
