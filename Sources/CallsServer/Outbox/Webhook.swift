import CallsCore
import CallsStore
import CallsTransport
import Foundation

extension WebhookConfig {
    /// Why a webhook was refused (config file or REST): the message names the field.
    struct Invalid: Error, Equatable, Sendable { var message: String }

    /// A webhook from untrusted fields: an http(s) URL, a secret of at least 16 characters,
    /// known trigger names (nil: all), an id of letters, digits, `_-.` (≤ 64).
    static func validated(id: String, url: String?, secret: String?, triggers: [String]?) throws(Invalid) -> WebhookConfig {
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }) else {
            throw Invalid(message: "id must be 1–64 letters, digits, '_', '-', '.'")
        }
        guard let url, url.hasPrefix("http://") || url.hasPrefix("https://"), let host = URL(string: url)?.host else {
            throw Invalid(message: "url must be an http:// or https:// URL")
        }
        // (The deliverer checks the address it connects to as well: a name that resolves to one
        // of these is refused there.)
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let address = IPAddress(literal), IPNetwork.neverDialled.contains(where: { $0.contains(address) }) {
            throw Invalid(message: "url must not point at a link-local, multicast or unspecified address or a cloud metadata service (\(address))")
        }
        guard let secret, secret.count >= 16 else { throw Invalid(message: "secret must be a string of at least 16 characters") }
        var set: Set<String>?
        if let names = triggers {
            guard !names.isEmpty else { throw Invalid(message: "triggers must be a non-empty list of names") }
            if let bad = names.first(where: { !ServerConfigFile.webhookTriggers.contains($0) }) {
                throw Invalid(message: "triggers: unknown trigger '\(bad)' (known: \(ServerConfigFile.webhookTriggers.sorted().joined(separator: ", ")))")
            }
            set = Set(names)
        }
        return WebhookConfig(id: id, url: url, secret: secret, triggers: set)
    }
}
