@preconcurrency import CNcurses

/// How many terminal cells text takes: wcwidth(3) semantics per grapheme cluster, measured in a
/// UTF-8 locale whatever the process locale is (so layout agrees with what ncurses draws).
///
/// A cluster is as wide as its base character (East Asian wide and emoji presentation: 2;
/// combining marks and zero-width joiners add nothing); a variation selector 16 makes a text
/// symbol an emoji (2). Controls count as 0. Pure; any thread.
public enum DisplayWidth {
    /// Cells of one code point on its own: 1 for printable ASCII and most scripts, 2 for East
    /// Asian wide and emoji-presentation characters, 0 for combining marks, joiners, variation
    /// selectors and controls.
    @inline(__always)
    public static func of(_ s: Unicode.Scalar) -> Int {
        let v = s.value
        if v >= 0x20 && v < 0x7F { return 1 }
        if v < 0xA0 { return 0 }
        if v < 0x300 { return 1 }
        let w = Int(callroom_wcwidth(v))
        if w == -2 { return s.properties.isEmojiPresentation ? 2 : 1 }  // no UTF-8 locale at all
        return max(0, w)
    }

    /// Whether `s` continues the cluster before it: zero width joiners, variation selectors,
    /// combining marks (and, after a joiner, the next emoji).
    @inline(__always)
    static func extends(_ s: Unicode.Scalar) -> Bool { s.value >= 0x300 && of(s) == 0 }

    /// Cells of one grapheme cluster (0, 1 or 2): its base, widened to 2 by a variation
    /// selector 16 (emoji presentation).
    public static func of(_ c: Character) -> Int {
        let scalars = c.unicodeScalars
        guard let first = scalars.first else { return 0 }
        let w = of(first)
        if w == 1, scalars.count > 1, scalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        return w
    }

    /// Cells of a string: the sum over its clusters, measured scalar by scalar (a joiner makes
    /// the next emoji part of the same cluster).
    public static func of<S: StringProtocol>(_ s: S) -> Int {
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return s.utf8.count }
        var n = 0
        var last = 0
        var joined = false
        for u in s.unicodeScalars {
            if joined { joined = false; continue }
            if u.value == 0x200D { joined = true; continue }
            if u.value == 0xFE0F { if last == 1 { n += 1; last = 2 }; continue }
            let w = of(u)
            n += w
            if w > 0 { last = w }
        }
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
