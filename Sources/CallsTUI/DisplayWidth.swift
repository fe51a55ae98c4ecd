@preconcurrency import CNcurses

/// How many terminal cells text takes: wcwidth(3) semantics per grapheme cluster, measured in a
/// UTF-8 locale whatever the process locale is (so layout agrees with what ncurses draws).
///
/// A cluster is as wide as its base character (East Asian wide and emoji presentation: 2;
/// combining marks and zero-width joiners add nothing); a variation selector 16 makes a text
/// symbol an emoji (2). Controls count as 0. Pure; any thread.
public enum DisplayWidth {
    /// Cells of one grapheme cluster (0, 1 or 2).
    public static func of(_ c: Character) -> Int {
        let scalars = c.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value >= 0x20 && first.value < 0x7F { return 1 }
        if scalars.count > 1, scalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        if first.properties.isEmojiPresentation { return 2 }
        let w = Int(callroom_wcwidth(first.value))
        if w == -2 { return first.properties.isEmojiPresentation ? 2 : 1 }  // no UTF-8 locale at all
        if w < 0 { return 0 }
        return w
    }

    /// Cells of a string.
    public static func of<S: StringProtocol>(_ s: S) -> Int {
        var n = 0
        for c in s { n += of(c) }
        return n
    }

    /// The longest prefix of `s` that fits in `cells`, ending with `ellipsis` when `s` was cut.
    public static func truncate(_ s: String, to cells: Int, ellipsis: String = "…") -> String {
        guard cells > 0 else { return "" }
        if of(s) <= cells { return s }
        let room = cells - of(ellipsis)
        guard room >= 0 else { return String(prefix(ellipsis, cells: cells)) }
        return prefix(s, cells: room) + ellipsis
    }

    /// The longest prefix of `s` that fits in `cells` (a wide character never half-drawn).
    public static func prefix<S: StringProtocol>(_ s: S, cells: Int) -> String {
        var out = ""
        var used = 0
        for c in s {
            let w = of(c)
            if used + w > cells { break }
            out.append(c)
            used += w
        }
        return out
    }

    /// The longest suffix of `s` that fits in `cells` (the end of a line being typed).
    public static func suffix(_ s: String, cells: Int) -> String {
        var out: [Character] = []
        var used = 0
        for c in s.reversed() {
            let w = of(c)
            if used + w > cells { break }
            out.append(c)
            used += w
        }
        return String(out.reversed())
    }

    /// `s` padded with spaces (or cut) to exactly `cells`.
    public static func pad(_ s: String, to cells: Int) -> String {
        let t = prefix(s, cells: cells)
        return t + String(repeating: " ", count: max(0, cells - of(t)))
    }
}
