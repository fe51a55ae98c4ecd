extension String {
    /// Decodes a NUL-terminated C buffer (UTF-8, invalid bytes repaired).
    init(cBuffer buf: [CChar]) {
        let bytes = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
