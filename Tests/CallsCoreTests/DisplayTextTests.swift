import CallsCore
import Testing

/// Names and chat that reach other people's terminals carry no control characters.
@Suite struct DisplayTextTests {
    @Test func namesLoseEscapesControlsAndBidiOverrides() {
        #expect(DisplayText.name("\u{1B}[31mEvil\u{1B}[0m\u{07}") == "[31mEvil[0m")
        #expect(DisplayText.name("nul\u{0}byte") == "nulbyte")
        #expect(DisplayText.name("\u{202E}gnp.exe") == "gnp.exe", "a right-to-left override is gone")
        #expect(DisplayText.name("  Ada \t\n  Lovelace  ") == "Ada Lovelace")
        #expect(DisplayText.name("\u{9B}2J") == "2J", "a C1 CSI too")
        #expect(DisplayText.name("\u{1B}\u{07}  ") == nil, "nothing printable left")
        #expect(DisplayText.name(String(repeating: "x", count: 300))?.count == 100)
        #expect(DisplayText.name("Zoë 👩‍👩‍👧 李") == "Zoë 👩‍👩‍👧 李", "ordinary Unicode stays, joiners too")
    }

    @Test func chatKeepsLineBreaksOnly() {
        #expect(DisplayText.message("line 1\r\nline\t2\u{1B}]52;c;AAAA\u{07}") == "line 1\nline 2]52;c;AAAA")
    }
}
