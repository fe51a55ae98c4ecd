/// Text that people send and others' screens show (display names, chat): no control characters
/// (NUL, ESC and the rest of C0/C1, DEL: a terminal would act on them), no bidirectional
/// overrides (they make a name read as another), whitespace runs collapsed. A value; any thread.
public enum DisplayText {
    /// Whether a terminal or a line of text would treat `u` as something other than text.
    public static func isUnsafe(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        return v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)
            || v == 0x200E || v == 0x200F || v == 0x061C || v == 0xFEFF
    }

    /// A display name: unsafe characters removed, whitespace collapsed and trimmed, at most
    /// `limit` characters; nil when nothing is left.
    public static func name(_ s: String, limit: Int = 100) -> String? {
        var out = String.UnicodeScalarView()
        var space = false
        for u in s.unicodeScalars {
            if u.properties.isWhitespace || u.value == 0x09 || u.value == 0x0A || u.value == 0x0D {
                space = !out.isEmpty
                continue
            }
            if isUnsafe(u) { continue }
            if space { out.append(" "); space = false }
            out.append(u)
        }
        let t = String(out)
        return t.isEmpty ? nil : String(t.prefix(limit))
    }

    /// Chat text: line breaks kept (as `\n`), tabs as spaces, every other unsafe character removed.
    public static func message(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            switch u.value {
            case 0x0A: out.append(u)
            case 0x09: out.append(" ")
            case 0x0D: continue
            default: if !isUnsafe(u) { out.append(u) }
            }
        }
        return String(out)
    }
}
