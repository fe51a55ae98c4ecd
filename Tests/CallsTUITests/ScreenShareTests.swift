import CallRoomTestSupport
import CallsCore
import CallsVideo
@testable import CallsTUI
import Foundation
import XCTest

/// A real tmux pane read back as a grid (tmux is the terminal emulator), and the shared grid
/// on the call screen: exact text, colours, a cut when the area is smaller.
final class ScreenShareTests: XCTestCase {
    func testATmuxPaneReadsBackCellForCell() throws {
        let socket = "callroom-capture-test-\(getpid())"
        func tmux(_ args: [String]) throws -> String { try TmuxPane.run(["-f", "/dev/null"] + args, socket: socket, capture: args.first != "new-session").output }
        _ = try tmux(["new-session", "-d", "-s", "s", "-x", "40", "-y", "5",
                      "printf '\\033[31mred\\033[0m plain \\033[1;44mbold on blue\\033[0m 日本 \\033[38;5;208mo\\033[38;2;1;2;3mr\\033[0m\\n'; sleep 20"])
        defer { _ = try? tmux(["kill-server"]) }
        let lines = try eventuallyValue(2, poll: 0.05) { () -> [String]? in
            let l = try tmux(["capture-pane", "-p", "-e", "-t", "s"]).components(separatedBy: "\n")
            return l.first?.contains("plain") == true ? l : nil
        } ?? []
        let g = TerminalCapture.grid(lines: lines, columns: 40, rows: 5, cursor: GridPoint(x: 0, y: 1))
        XCTAssertEqual(g.line(0).trimmingCharacters(in: .whitespaces), "red plain bold on blue 日本 or")
        XCTAssertEqual(g[0, 0].style.fg, 1, "red")
        XCTAssertEqual(g[4, 0].style, .plain)
        XCTAssertEqual(g[10, 0].style.bold, true)
        XCTAssertEqual(g[10, 0].style.bg, 4, "blue background")
        XCTAssertEqual(g[23, 0].text, "日")
        XCTAssertEqual(g[24, 0].text, "", "the wide character's right half")
        XCTAssertEqual(g[25, 0].text, "本")
        XCTAssertEqual(g[28, 0].style.fg, 208, "256-colour index")
        XCTAssertEqual(g[29, 0].style.fg, GridStyle.rgbFlag | 0x010203, "24-bit")
        XCTAssertEqual(g.cursor, GridPoint(x: 0, y: 1))
    }

    func testTheSharedTerminalTakesTheTileArea() {
        var m = Fixture.model(count: 2)
        m.pictureMode = .indexed256
        var g = TerminalGrid(columns: 30, rows: 3)
        for (x, ch) in "make test: 3 failed".enumerated() { g[x, 0] = GridCell(text: String(ch), style: x < 4 ? GridStyle(fg: 1) : GridStyle(fg: 208)) }
        m.screens["pid-u1"] = g
        let b = CallScreenRenderer.render(m, width: 120, height: 40)
        XCTAssertTrue(b.text.contains("Ada Lovelace is sharing · 30×3"))
        XCTAssertTrue(b.text.contains("make test: 3 failed"), "exact text")
        XCTAssertFalse(b.text.contains("cut:"))
        let row = b.text.components(separatedBy: "\n").firstIndex { $0.contains("make test") } ?? 0
        let x = b.text.components(separatedBy: "\n")[row].firstIndex(of: "m").map { b.text.components(separatedBy: "\n")[row].distance(from: b.text.components(separatedBy: "\n")[row].startIndex, to: $0) } ?? 0
        XCTAssertEqual(b[x, row].style.fg, .red, "ANSI red stays a text colour")
        XCTAssertEqual(b[x + 5, row].style.pictureFG, 208, "256-colour index kept")
        let small = CallScreenRenderer.render(m, width: 32, height: 10)
        XCTAssertTrue(small.text.contains("cut") || small.text.contains("sharing"), small.text)
    }
}
