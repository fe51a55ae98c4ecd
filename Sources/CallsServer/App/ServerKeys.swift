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

    /// The keys given on the command line or in the config (each overrides keys.json).
    public struct Given: Sendable, Equatable {
        public var appId: String?
        public var apiKey: String?
        public var authKey: String?
        public init(appId: String? = nil, apiKey: String? = nil, authKey: String? = nil) {
            self.appId = appId; self.apiKey = apiKey; self.authKey = authKey
        }
    }

    /// Loads the keys of `dataDir`, with `given` in place of the stored ones (not saved). On
    /// first start it creates keys.json from `given` and generates the rest, so the file holds
    /// what the server uses and a later start without the flags keeps the same keys. Returns
    /// whether keys.json was created now, and the names of the keys generated now (`appId`,
    /// `apiKey`, `authKey`: printed once).
    static func loadOrCreate(dataDir: String, given: Given = Given()) throws(ServerStartError)
        -> (keys: ServerKeys, created: Bool, generated: [String]) {
        let path = (dataDir as NSString).appendingPathComponent("keys.json")
        if let data = FileManager.default.contents(atPath: path) {
            guard var keys = try? JSONDecoder().decode(ServerKeys.self, from: data), !keys.appId.isEmpty,
                  Hex.decode(keys.tokenSecret)?.count ?? 0 >= 16 else {
                throw .badKeysFile(path)
            }
            keys.apply(given)
            return (keys, false, [])
        }
        var keys = generate()
        keys.apply(given)
        let generated = [("appId", given.appId), ("apiKey", given.apiKey), ("authKey", given.authKey)].filter { $0.1 == nil }.map(\.0)
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? enc.encode(keys), PrivateFiles.write(data, to: path) else {
            throw .cannotWrite(path)
        }
        return (keys, true, generated)
    }

    private mutating func apply(_ given: Given) {
        if let v = given.appId { appId = v }
        if let v = given.apiKey { apiKey = v }
        if let v = given.authKey { authKey = v }
    }
}
