/// A block of addresses written as CIDR (`10.0.0.0/8`, `2001:db8::/32`) or one address (`/32`
/// or `/128`): the configured trusted proxies.
///
/// Thread rules: a value.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public let base: IPAddress
    public let prefixLength: Int

    /// nil for anything that is not an address with an optional prefix length in range. Bits set
    /// past the prefix are refused (`10.0.0.1/8` is a typo for one address or for the block; the
    /// operator says which).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = IPAddress(String(parts[0])) else { return nil }
        let bits = address.bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard let n = Int(parts[1]), parts[1].allSatisfy(\.isASCIIDigit), (0...bits).contains(n) else { return nil }
            length = n
        }
        guard address.masked(to: length) == address else { return nil }
        base = address
        prefixLength = length
    }

    public func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == base.bytes.count && address.masked(to: prefixLength) == base
    }

    public var description: String { "\(base)/\(prefixLength)" }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension IPNetwork {
    /// Loopback and the private networks (RFC 1918, IPv6 unique local): where an operator's own
    /// monitoring lives, and no one on the internet is (`metricsAllow`'s default).
    public static let loopbackAndPrivate: [IPNetwork] = [
        "127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7",
    ].compactMap(IPNetwork.init)

    /// Where the server never connects on anyone's word — a webhook, a live stream, whoever
    /// named it: link-local (169.254.169.254 is the metadata service of most clouds, with their
    /// credentials), unspecified, multicast and broadcast addresses, and the metadata services
    /// outside those blocks (AWS's IPv6 one, Alibaba's). Loopback and private networks stay
    /// allowed: a self-hosted receiver or Icecast lives there.
    public static let neverDialled: [IPNetwork] = [
        "169.254.0.0/16", "fe80::/10", "0.0.0.0/8", "::/128", "224.0.0.0/4", "ff00::/8", "255.255.255.255/32",
        "fd00:ec2::254/128", "100.100.100.200/32",
    ].compactMap(IPNetwork.init)
}
