import Foundation

/// Who a connection's client is, for the per-address limits and the logs, and whom those limits
/// leave alone.
///
/// - A request or WebSocket from a trusted proxy (`trustedProxies`) is counted as the client the
///   proxy names in `X-Forwarded-For`: the entry furthest right that is not itself a trusted
///   proxy — each proxy appends the address it was connected from, so what a client wrote
///   itself is to the left of that and never believed. No header, or nothing readable where the
///   client should be: the proxy's own address. From any other peer the header is ignored.
/// - A trusted proxy's TCP connections are not held to the per-address cap at accept (it speaks
///   for many; the clients behind it are counted once their request's head is read).
/// - Loopback clients are held to no per-address limit while `exemptLoopback` (the operator's
///   own load generators and demos).
///
/// Thread rules: a value.
public struct ClientAddresses: Sendable {
    public var trustedProxies: [IPNetwork]
    public var exemptLoopback: Bool

    public init(trustedProxies: [IPNetwork] = [], exemptLoopback: Bool = true) {
        self.trustedProxies = trustedProxies
        self.exemptLoopback = exemptLoopback
    }

    public func isTrustedProxy(_ peer: String) -> Bool {
        guard !trustedProxies.isEmpty, let a = IPAddress(peer) else { return false }
        return isTrusted(a)
    }

    private func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// Whether `client` is held to no per-address limit.
    public func isExempt(_ client: String) -> Bool { exemptLoopback && Self.isLoopback(client) }

    /// The client behind a request or WebSocket that came from `peer` carrying `forwardedFor`
    /// (the `X-Forwarded-For` headers' entries, comma-separated, in the order they came; read
    /// only when `peer` is a trusted proxy).
    public func client(peer: String, forwardedFor: @autoclosure () -> String?) -> String {
        guard isTrustedProxy(peer), let forwardedFor = forwardedFor() else { return peer }
        var client = peer
        for entry in forwardedFor.split(separator: ",").reversed() {
            guard let a = Self.forwardedAddress(entry) else { return client }
            client = a.description
            if !isTrusted(a) { return client }
        }
        return client
    }

    /// An entry of `X-Forwarded-For`: an address, with the port or the brackets some proxies write
    /// (`192.0.2.7:51234`, `[2001:db8::7]:443`); nil for anything else (`unknown`, a name).
    static func forwardedAddress(_ entry: Substring) -> IPAddress? {
        let e = entry.trimmingCharacters(in: .whitespaces)
        if let a = IPAddress(e) { return a }
        if e.hasPrefix("["), let close = e.firstIndex(of: "]") {
            return IPAddress(String(e[e.index(after: e.startIndex)..<close]))
        }
        if let colon = e.firstIndex(of: ":"), e.filter({ $0 == ":" }).count == 1 {
            return IPAddress(String(e[..<colon])).flatMap { $0.isIPv4 ? $0 : nil }
        }
        return nil
    }

    /// A loopback address (or name): a listen host, or a peer as accept or libwebsockets gives it.
    public static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.") || address == "localhost"
    }
}
