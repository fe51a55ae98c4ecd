/// The identifiers the wire carries — uids, guids, session ids: 1 to `max` characters of ASCII
/// letters, digits and `_` `-` `.` `@` `:`. The server refuses anything else (`ERR_UID_INVALID`,
/// `ERR_GUID_INVALID`, `ERR_SESSION_ID_INVALID`); clients check before they ask. A value; any thread.
public enum WireIdentifier {
    /// The longest session id.
    public static let sessionIDMax = 128
    /// The longest uid or guid.
    public static let userIDMax = 100
    /// The characters allowed, as people read them.
    public static let characters = "letters, digits, '_', '-', '.', '@', ':'"

    public static func isValid(_ s: String, max: Int) -> Bool {
        guard !s.isEmpty, s.utf8.count <= max else { return false }
        return s.unicodeScalars.allSatisfy { c in
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || "_-.@:".unicodeScalars.contains(c)
        }
    }
}
