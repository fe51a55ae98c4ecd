/// The characters the call screen draws with: Unicode in a UTF-8 locale, plain ASCII otherwise
/// (LANG=C turns every non-ASCII character into '?', so none is used there). A value; any thread.
public struct GlyphSet: Equatable, Sendable {
    /// Whether these are the Unicode glyphs (else plain ASCII).
    public let isUnicode: Bool
    public var separator: String
    public var dash: String
    public var ellipsis: String
    public var up: String
    public var down: String
    public var meterFull: String
    public var meterEmpty: String
    /// Eight steps of a level history, quietest first.
    public var spark: [String]
    public var selected: String
    public var unselected: String
    public var hand: String
    public var muted: String
    public var speaking: String
    public var pinned: String
    public var sharing: String
    public var recording: String
    public var camOff: String
    /// Connection quality bars: good, fair, poor.
    public var net: (good: String, fair: String, poor: String)
    /// Box drawing: horizontal, vertical, corners (top-left, top-right, bottom-left, bottom-right).
    public var box: (h: Unicode.Scalar, v: Unicode.Scalar, tl: Unicode.Scalar, tr: Unicode.Scalar, bl: Unicode.Scalar, br: Unicode.Scalar)
    /// Big-initials blocks: full, upper half, lower half.
    public var block: (full: Character, upper: Character, lower: Character)

    /// The two sets differ in every glyph; which one it is decides equality.
    public static func == (a: GlyphSet, b: GlyphSet) -> Bool { a.isUnicode == b.isUnicode }

    public static let unicode = GlyphSet(
        isUnicode: true, separator: "·", dash: "—", ellipsis: "…", up: "↑", down: "↓", meterFull: "█", meterEmpty: "·",
        spark: ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"], selected: "●", unselected: "○",
        hand: "▲", muted: "✖", speaking: "♪", pinned: "◆", sharing: "▣", recording: "●", camOff: "▨",
        net: ("▂▄▆", "▂▄ ", "▂  "), box: ("─", "│", "┌", "┐", "└", "┘"), block: ("█", "▀", "▄"))

    public static let ascii = GlyphSet(
        isUnicode: false, separator: "-", dash: "-", ellipsis: "~", up: "^", down: "v", meterFull: "#", meterEmpty: ".",
        spark: ["_", ".", ":", "-", "=", "+", "*", "#"], selected: "*", unselected: " ",
        hand: "^", muted: "x", speaking: ">", pinned: "@", sharing: "#", recording: "*", camOff: "%",
        net: ("|||", "|| ", "|  "), box: ("-", "|", "+", "+", "+", "+"), block: ("#", "\"", "_"))

    public static func `for`(unicode: Bool) -> GlyphSet { unicode ? .unicode : .ascii }
}
