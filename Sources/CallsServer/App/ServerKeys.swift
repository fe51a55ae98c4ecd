import CallsCore
import CallsSecurity
import Foundation

/// The app's identity and secrets, kept in `<data-dir>/keys.json` (mode 0600).
public struct ServerKeys: Codable, Sendable, Equatable {
    public var appId: String
    /// Admin key for REST (`apikey` header).
    public var apiKey: String
    /// Dev key clients may log in with (`login(UID:authKey:)`).
    public var authKey: String
    /// HS256 secret for call tokens, hex.
    public var tokenSecret: String

    /// A short hash of all four keys (16 hex digits): nodes of one cluster compare it in Redis,
    /// so a node started with another keys.json is refused at start. Reveals nothing usable.
    var fingerprint: String {
        String(Crypto.sha256Hex(["callroom keys v1", appId, apiKey, authKey, tokenSecret].joined(separator: "\n")).prefix(16))
    }

    static func generate() -> ServerKeys {
        ServerKeys(appId: "app" + Crypto.randomHex(6), apiKey: Crypto.randomHex(20), authKey: Crypto.randomHex(20),
                   tokenSecret: Crypto.randomHex(32))
    }

    /// Loads the keys of `dataDir`, generating and saving them on first start.
    /// Returns whether they were generated now (so they are printed once).
    static func loadOrCreate(dataDir: String) throws(ServerStartError) -> (ServerKeys, generated: Bool) {
        let path = (dataDir as NSString).appendingPathComponent("keys.json")
        if let data = FileManager.default.contents(atPath: path) {
            guard let keys = try? JSONDecoder().decode(ServerKeys.self, from: data), !keys.appId.isEmpty,
                  Hex.decode(keys.tokenSecret)?.count ?? 0 >= 16 else {
                throw .badKeysFile(path)
            }
            return (keys, false)
        }
        let keys = generate()
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? enc.encode(keys), PrivateFiles.write(data, to: path) else {
            throw .cannotWrite(path)
        }
        return (keys, true)
    }
}
