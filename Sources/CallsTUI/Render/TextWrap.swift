/// Word-aware wrapping measured in display cells: lines break at spaces; a word longer than a
/// line breaks after a '.' or before an upper-case letter (camelCase) when it can, else where
/// it must. Continuation lines start with `indent` spaces. Pure; any thread.
public enum TextWrap {
    public static func wrap(_ text: String, width: Int, indent: Int = 0) -> [String] { wrap(text, width: width, indent: indent, fastPaths: true) }

    static func wrap(_ text: String, width: Int, indent: Int, fastPaths: Bool) -> [String] {
        guard width > 0 else { return [] }
        // Most lines fit: no work beyond measuring them.
        if fastPaths, !text.utf8.contains(0x0A), DisplayWidth.of(text) <= width { return [text] }
        if fastPaths, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return wrapASCII(Array(text.utf8), width: width, indent: indent) }
        let indent = width > indent + 4 ? indent : 0
        var out: [String] = []
        // The text's own indentation stays on its first line (a summary's "  events …").
        let lead = keptIndentation(text.utf8.prefix { $0 == 0x20 }.count, width: width)
        var line = String(repeating: " ", count: lead)
        var lineWidth = lead
        var hasWord = false
        func room() -> Int { out.isEmpty ? width : width - indent }
        func flush() {
            out.append((out.isEmpty ? "" : String(repeating: " ", count: indent)) + line)
            line = ""
            lineWidth = 0
            hasWord = false
        }
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                var w = String(word)
                var ww = DisplayWidth.of(w)
                let sep = hasWord ? 1 : 0
                if lineWidth + sep + ww <= room() {
                    if sep == 1 { line += " " }
                    line += w
                    lineWidth += sep + ww
                    hasWord = true
                    continue
                }
                // A word longer than any line starts on this one when a fair part of it fits.
                let left = room() - lineWidth - sep
                if hasWord, ww > width - indent, left >= 8 {
                    let (head, tail) = split(w, cells: left)
                    line += (sep == 1 ? " " : "") + head
                    flush()
                    w = tail
                    ww = DisplayWidth.of(w)
                } else if hasWord {
                    flush()
                } else {
                    line = ""  // an indentation with no room for the word after it is dropped
                    lineWidth = 0
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
                hasWord = true
            }
            if !line.isEmpty || out.isEmpty { flush() }
        }
        return out
    }

    /// How many of the `spaces` a text starts with stay on its first line: all of them when
    /// they take less than half of `width`, else none.
    static func keptIndentation(_ spaces: Int, width: Int) -> Int { spaces < width / 2 ? spaces : 0 }

    /// `wrap` for printable ASCII (a byte is a cell), without building words: the same breaks.
    static func wrapASCII(_ b: [UInt8], width: Int, indent: Int) -> [String] {
        let indent = width > indent + 4 ? indent : 0
        let pad = String(repeating: " ", count: indent)
        var out: [String] = []
        var start = 0
        while start < b.count && b[start] == 32 { start += 1 }
        // The text's own indentation stays on its first line, as in `wrap`.
        if start < b.count { start -= keptIndentation(start, width: width) }
        func upper(_ c: UInt8) -> Bool { c >= 65 && c <= 90 }
        func lower(_ c: UInt8) -> Bool { c >= 97 && c <= 122 }
        while start < b.count {
            let room = out.isEmpty ? width : width - indent
            // Where words begin on this line: after the indentation kept on the first.
            var first = start
            while first < b.count && b[first] == 32 { first += 1 }
            var end = start + room
            var next: Int
            if end >= b.count {
                end = b.count
                next = b.count
            } else if b[end] == 32 {
                next = end + 1
            } else {
                // The last space before the limit, unless the word after it is longer than a
                // whole line and a fair part of it fits here.
                var space = -1
                var i = end - 1
                while i > first { if b[i] == 32 { space = i; break }; i -= 1 }
                var wordEnd = end
                while wordEnd < b.count && b[wordEnd] != 32 { wordEnd += 1 }
                let wordLength = space >= 0 ? wordEnd - space - 1 : wordEnd - first
                if space >= 0 && !(wordLength > width - indent && end - space - 1 >= 8) {
                    end = space
                    next = space + 1
                } else if space < 0 && first > start {
                    // Only the indentation before a word too long for the rest: drop it.
                    start = first
                    continue
                } else {
                    // Break inside the word: after a '.', or before a capital (camelCase).
                    let wordStart = space >= 0 ? space + 1 : start
                    var cut = end
                    var j = end
                    while j > max(wordStart + 1, wordStart + (end - wordStart) / 2) {
                        if b[j - 1] == 46 || (upper(b[j]) && lower(b[j - 1])) { cut = j; break }
                        j -= 1
                    }
                    end = cut
                    next = cut
                }
            }
            var e = end
            while e > start && b[e - 1] == 32 { e -= 1 }
            out.append((out.isEmpty ? "" : pad) + String(decoding: b[start..<e], as: UTF8.self))
            start = next
            while start < b.count && b[start] == 32 { start += 1 }
        }
        return out.isEmpty ? [""] : out
    }

    /// Splits a word that is too long: at the last '.' or camelCase boundary that fits (past
    /// half the line), else at the cell limit.
    static func split(_ word: String, cells: Int) -> (String, String) {
        if word.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII: bytes are cells.
            let bytes = Array(word.utf8)
            let fit = max(1, min(cells, bytes.count))
            var cut = fit
            if fit < bytes.count {
                func upper(_ b: UInt8) -> Bool { b >= 65 && b <= 90 }
                func lower(_ b: UInt8) -> Bool { b >= 97 && b <= 122 }
                for i in stride(from: fit, to: max(1, fit / 2), by: -1) where bytes[i - 1] == 46 || (upper(bytes[i]) && lower(bytes[i - 1])) {
                    cut = i
                    break
                }
            }
            return (String(decoding: bytes[..<cut], as: UTF8.self), String(decoding: bytes[cut...], as: UTF8.self))
        }
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
