import CallsSupport

extension ArgumentScanner {
    /// `--duration S` of `demo` and `join --headless`: seconds, more than none and at most a day;
    /// nil when not given. Anything else is a usage error (exit 2).
    package var durationSeconds: Double? {
        guard let d = self["duration"] else { return nil }
        guard let s = Double(d), s > 0, s <= 86_400 else { Console.fail("--duration must be a positive number of seconds, at most 86400") }
        return s
    }
}
