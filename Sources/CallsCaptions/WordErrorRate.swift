/// Word error rate: (substitutions + deletions + insertions) / reference words, over words
/// normalised to lower case without punctuation (the usual scoring of recognisers).
public enum WordErrorRate {
    public static func words(_ text: String) -> [String] {
        text.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "'" }.map(String.init)
    }

    /// Edit distance between the word sequences, and the reference's length.
    public static func errors(reference: String, hypothesis: String) -> (errors: Int, words: Int) {
        let r = words(reference), h = words(hypothesis)
        guard !r.isEmpty else { return (h.count, 0) }
        var prev = Array(0...h.count)
        var row = [Int](repeating: 0, count: h.count + 1)
        for i in 1...r.count {
            row[0] = i
            for j in stride(from: 1, through: h.count, by: 1) {
                row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (r[i - 1] == h[j - 1] ? 0 : 1))
            }
            swap(&prev, &row)
        }
        return (prev[h.count], r.count)
    }

    public static func rate(reference: String, hypothesis: String) -> Double {
        let e = errors(reference: reference, hypothesis: hypothesis)
        return e.words == 0 ? 0 : Double(e.errors) / Double(e.words)
    }
}
