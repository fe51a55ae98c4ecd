/// Initials drawn three rows tall with half-block characters (each glyph 3 cells wide), for
/// tiles with room for them. Letters A–Z, digits and '?'; anything else (CJK names) has no big
/// form and is drawn as it is. Pure; any thread.
enum BigInitials {
    static let rows = 3
    static let glyphWidth = 3

    private static let font: [Character: [String]] = [
        "A": ["▄▀▄", "█▀█", "▀ ▀"], "B": ["█▀▄", "█▀▄", "▀▀ "], "C": ["█▀▀", "█  ", "▀▀▀"], "D": ["█▀▄", "█ █", "▀▀ "],
        "E": ["█▀▀", "█▀▀", "▀▀▀"], "F": ["█▀▀", "█▀ ", "▀  "], "G": ["█▀▀", "█ █", "▀▀▀"], "H": ["█ █", "█▀█", "▀ ▀"],
        "I": ["▀█▀", " █ ", "▀▀▀"], "J": ["  █", "  █", "▀▀ "], "K": ["█ █", "█▀▄", "▀ ▀"], "L": ["█  ", "█  ", "▀▀▀"],
        "M": ["█▄█", "█ █", "▀ ▀"], "N": ["█▀▄", "█ █", "▀ ▀"], "O": ["█▀█", "█ █", "▀▀▀"], "P": ["█▀█", "█▀▀", "▀  "],
        "Q": ["█▀█", "█ █", "▀▀█"], "R": ["█▀█", "█▀▄", "▀ ▀"], "S": ["█▀▀", "▀▀█", "▀▀▀"], "T": ["▀█▀", " █ ", " ▀ "],
        "U": ["█ █", "█ █", "▀▀▀"], "V": ["█ █", "█ █", " ▀ "], "W": ["█ █", "█▄█", "▀ ▀"], "X": ["█ █", "▄▀▄", "▀ ▀"],
        "Y": ["█ █", "▀▄▀", " ▀ "], "Z": ["▀▀█", "▄▀ ", "▀▀▀"], "0": ["█▀█", "█ █", "▀▀▀"], "1": ["▄█ ", " █ ", "▀▀▀"],
        "2": ["▀▀█", "█▀▀", "▀▀▀"], "3": ["▀▀█", " ▀█", "▀▀▀"], "4": ["█ █", "▀▀█", "  ▀"], "5": ["█▀▀", "▀▀█", "▀▀▀"],
        "6": ["█▀▀", "█▀█", "▀▀▀"], "7": ["▀▀█", "  █", "  ▀"], "8": ["█▀█", "█▀█", "▀▀▀"], "9": ["█▀█", "▀▀█", "▀▀▀"],
        "?": ["▀▀█", " █▀", " ▀ "],
    ]

    /// The three rows for `initials`, or nil when a character has no big form.
    static func render(_ initials: String, glyphs: GlyphSet) -> [String]? {
        var out = Array(repeating: "", count: rows)
        for (i, c) in initials.enumerated() {
            guard let g = font[c] else { return nil }
            for r in 0..<rows { out[r] += (i > 0 ? " " : "") + g[r] }
        }
        if glyphs.isUnicode { return out }
        let (full, upper, lower) = (String(glyphs.block.full), String(glyphs.block.upper), String(glyphs.block.lower))
        return out.map { $0.replacingOccurrences(of: "█", with: full).replacingOccurrences(of: "▀", with: upper).replacingOccurrences(of: "▄", with: lower) }
    }

    /// Cells the big form of `initials` takes.
    static func width(_ initials: String) -> Int { initials.count * (glyphWidth + 1) - 1 }
}
