/// Word-aware wrapping measured in display cells: lines break at spaces; a word longer than a
/// line breaks after a '.' or before an upper-case letter (camelCase) when it can, else where
/// it must. Continuation lines start with `indent` spaces. Pure; any thread.
public enum TextWrap {
    public static func wrap(_ text: String, width: Int, indent: Int = 0) -> [String] {
        guard width > 0 else { return [] }
        let indent = width > indent + 4 ? indent : 0
        var out: [String] = []
        var line = ""
        var lineWidth = 0
        func room() -> Int { out.isEmpty ? width : width - indent }
        func flush() {
            out.append((out.isEmpty ? "" : String(repeating: " ", count: indent)) + line)
            line = ""
            lineWidth = 0
        }
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                var w = String(word)
                var ww = DisplayWidth.of(w)
                let sep = line.isEmpty ? 0 : 1
                if lineWidth + sep + ww <= room() {
                    if sep == 1 { line += " " }
                    line += w
                    lineWidth += sep + ww
                    continue
                }
                // A word longer than any line starts on this one when a fair part of it fits.
                let left = room() - lineWidth - sep
                if !line.isEmpty, ww > width - indent, left >= 8 {
                    let (head, tail) = split(w, cells: left)
                    line += (sep == 1 ? " " : "") + head
                    flush()
                    w = tail
                    ww = DisplayWidth.of(w)
                } else if !line.isEmpty {
                    flush()
                }
                while ww > room() {
                    let (head, tail) = split(w, cells: room())
                    line = head
                    flush()
                    w = tail
                    ww = DisplayWidth.of(w)
                }
                line = w
                lineWidth = ww
            }
            if !line.isEmpty || out.isEmpty { flush() }
        }
        return out
    }

    /// Splits a word that is too long: at the last '.' or camelCase boundary that fits (past
    /// half the line), else at the cell limit.
    static func split(_ word: String, cells: Int) -> (String, String) {
        let chars = Array(word)
        var used = 0
        var fit = 0
        for c in chars {
            let w = DisplayWidth.of(c)
            if used + w > cells { break }
            used += w
            fit += 1
        }
        fit = max(1, fit)
        var cut = fit
        if fit < chars.count {
            for i in stride(from: fit, to: max(1, fit / 2), by: -1) {
                if chars[i - 1] == "." || (chars[i].isUppercase && chars[i - 1].isLowercase) { cut = i; break }
            }
        }
        return (String(chars[..<cut]), String(chars[cut...]))
    }
}
