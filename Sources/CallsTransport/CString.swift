extension String {
    /// Decodes a NUL-terminated C buffer (UTF-8, invalid bytes repaired).
    init(cBuffer buf: [CChar]) {
        let bytes = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes the first `count` bytes of a C buffer exactly (UTF-8, invalid bytes repaired): a
    /// NUL inside stays in the string, where `init(cBuffer:)` would end it there — a request's
    /// head read this way cannot be cut short by a `%00` or a NUL byte, and is refused whole.
    init(cBuffer buf: [CChar], count: Int) {
        let bytes = buf.prefix(Swift.max(0, Swift.min(count, buf.count))).map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
