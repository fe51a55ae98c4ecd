/// Turns the store's SQL, written once in SQLite's dialect, into PostgreSQL's: the differences
/// the store uses and nothing more, checked by `PostgresDialectTests` and by every store test
/// running against a real PostgreSQL.
///
/// ```
///  ?  (outside quotes)                    ─▶ $1, $2, …
///  INTEGER PRIMARY KEY AUTOINCREMENT      ─▶ BIGSERIAL PRIMARY KEY
///  INTEGER  (a column type)               ─▶ BIGINT          (times are milliseconds: 64 bits)
///  MAX(a, b) / MIN(a, b)  (two arguments) ─▶ GREATEST(a, b) / LEAST(a, b)   (aggregates stay)
///  rowid                                  ─▶ seq             (a BIGSERIAL column the PostgreSQL
///                                                             migrations add where it is used)
///  BEGIN IMMEDIATE                        ─▶ BEGIN
/// ```
/// Pure; any thread.
package enum PostgresDialect {
    package static func translate(_ sql: String) -> String {
        var out = ""
        out.reserveCapacity(sql.count + 16)
        let chars = Array(sql)
        var i = 0, param = 0
        var inString = false
        while i < chars.count {
            let c = chars[i]
            if inString {
                out.append(c)
                if c == "'" { inString = false }
                i += 1
                continue
            }
            if c == "'" { inString = true; out.append(c); i += 1; continue }
            if c == "?" {
                param += 1
                out += "$\(param)"
                i += 1
                continue
            }
            if c.isLetter || c == "_" {
                var j = i
                while j < chars.count, chars[j].isLetter || chars[j].isNumber || chars[j] == "_" { j += 1 }
                let word = String(chars[i..<j])
                let upper = word.uppercased()
                // Not part of a qualified name like `m.rowid`'s owner: only the word itself is rewritten.
                switch upper {
                case "AUTOINCREMENT":
                    break  // with INTEGER PRIMARY KEY below
                case "INTEGER":
                    if followed(chars, j, by: ["PRIMARY", "KEY", "AUTOINCREMENT"]) {
                        out += "BIGSERIAL PRIMARY KEY"
                        j = skip(chars, j, words: 3)
                    } else {
                        out += "BIGINT"
                    }
                case "ROWID":
                    out += "seq"
                case "IMMEDIATE" where out.uppercased().hasSuffix("BEGIN "):
                    out.removeLast()
                case "MAX", "MIN":
                    if next(chars, j) == "(", hasTopLevelComma(chars, from: nextIndex(chars, j)) {
                        out += upper == "MAX" ? "GREATEST" : "LEAST"
                    } else {
                        out += word
                    }
                default:
                    out += word
                }
                i = j
                continue
            }
            out.append(c)
            i += 1
        }
        return out
    }

    private static func nextIndex(_ c: [Character], _ from: Int) -> Int {
        var k = from
        while k < c.count, c[k].isWhitespace { k += 1 }
        return k
    }

    private static func next(_ c: [Character], _ from: Int) -> Character? {
        let k = nextIndex(c, from)
        return k < c.count ? c[k] : nil
    }

    /// Whether the words after `from` are `words` (case-insensitive).
    private static func followed(_ c: [Character], _ from: Int, by words: [String]) -> Bool {
        var k = from
        for w in words {
            k = nextIndex(c, k)
            var j = k
            while j < c.count, c[j].isLetter { j += 1 }
            guard String(c[k..<j]).uppercased() == w else { return false }
            k = j
        }
        return true
    }

    private static func skip(_ c: [Character], _ from: Int, words: Int) -> Int {
        var k = from
        for _ in 0..<words {
            k = nextIndex(c, k)
            while k < c.count, c[k].isLetter { k += 1 }
        }
        return k
    }

    /// Whether the parenthesis at `open` holds a comma at its own depth (two or more arguments).
    private static func hasTopLevelComma(_ c: [Character], from open: Int) -> Bool {
        guard open < c.count, c[open] == "(" else { return false }
        var depth = 0, k = open, quoted = false
        while k < c.count {
            let ch = c[k]
            if quoted { if ch == "'" { quoted = false } } else {
                switch ch {
                case "'": quoted = true
                case "(": depth += 1
                case ")":
                    depth -= 1
                    if depth == 0 { return false }
                case "," where depth == 1: return true
                default: break
                }
            }
            k += 1
        }
        return false
    }
}
