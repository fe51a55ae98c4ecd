/// A 16-byte media bind token, hashable for table look-ups.
struct BindToken: Hashable, Sendable {
    var hi: UInt64
    var lo: UInt64

    init?(_ bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        guard b.count == 16 else { return nil }
        hi = b[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        lo = b[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// An immutable snapshot of who may send media and to whom, built by the room registry on
/// every membership change and swapped into the relay (which never locks on the hot path).
struct RelayTable: Sendable {
    struct Member: Sendable {
        var key: UInt64
        var room: Int
        var ssrc: UInt32
    }

    var members: [UInt64: Member] = [:]
    var byToken: [BindToken: UInt64] = [:]
    /// Member keys per room index.
    var rooms: [Int: [UInt64]] = [:]

    static let empty = RelayTable()
}
