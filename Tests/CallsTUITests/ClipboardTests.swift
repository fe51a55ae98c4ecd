import CallRoomTestSupport
@testable import CallsTUI
import Foundation
import XCTest

/// The invite-link copy through a desktop clipboard program, with stand-in programs on PATH:
/// the text reaches the tool, a copy leaves nothing behind (each once leaked a `Process` and its
/// pipes: Foundation keeps an unwaited one), and a tool that hangs costs at most its timeout.
final class ClipboardTests: XCTestCase {
    func tool(_ dir: TemporaryDirectory, _ name: String, _ body: String) throws {
        let path = dir.file(name)
        try "#!/bin/sh\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
    }

    func testACopyGoesToTheToolAndLeavesNothingBehind() throws {
        let dir = TemporaryDirectory("callroom-clip")
        defer { dir.remove() }
        try tool(dir, "xclip", "cat > \"\(dir.file("clipboard"))\"")
        let clipboard = Clipboard(environment: ["PATH": dir.path, "DISPLAY": ":9"], terminalDeclaresOSC52: false, writeToTerminal: { _ in })
        XCTAssertEqual(clipboard.copy("https://example.test/i/first"), .tool("xclip"))
        XCTAssertEqual(try String(contentsOfFile: dir.file("clipboard"), encoding: .utf8), "https://example.test/i/first")
        let before = openDescriptorCount()
        for i in 0..<30 { XCTAssertEqual(clipboard.copy("link \(i)"), .tool("xclip")) }
        XCTAssertEqual(try String(contentsOfFile: dir.file("clipboard"), encoding: .utf8), "link 29")
        XCTAssertLessThanOrEqual(openDescriptorCount(), before + 2, "30 copies: \(before) descriptors before, \(openDescriptorCount()) after")
    }

    func testAToolThatHangsIsGivenUpOnAndTheNextOneTried() throws {
        let dir = TemporaryDirectory("callroom-clip")
        defer { dir.remove() }
        try tool(dir, "xclip", "exec sleep 30")
        try tool(dir, "xsel", "cat > \"\(dir.file("clipboard"))\"")
        let clipboard = Clipboard(environment: ["PATH": dir.path, "DISPLAY": ":9"], terminalDeclaresOSC52: false, writeToTerminal: { _ in })
        let start = Date()
        XCTAssertEqual(clipboard.copy("https://example.test/i/x"), .tool("xsel"))
        XCTAssertLessThan(Date().timeIntervalSince(start), 4, "xclip's two seconds, then xsel")
        XCTAssertEqual(try String(contentsOfFile: dir.file("clipboard"), encoding: .utf8), "https://example.test/i/x")
    }
}
