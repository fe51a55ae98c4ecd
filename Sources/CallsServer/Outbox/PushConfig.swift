import CallsSecurity
import Foundation

/// The APNs provider this server sends VoIP pushes as (token auth with a `.p8` key).
public struct APNsConfig: Sendable, Equatable {
    public static let production = "https://api.push.apple.com"
    public static let sandbox = "https://api.sandbox.push.apple.com"

    /// The `.p8` file (PKCS#8 PEM, EC P-256). Must not be readable by group or others.
    public var keyFile: String
    /// The key's 10-character id (JWT `kid`) and the team's (JWT `iss`).
    public var keyId: String
    public var teamId: String
    /// The app's bundle id when a token was registered without one.
    public var bundleId: String?
    /// `https://HOST[:PORT]`: production by default (a stand-in in tests).
    public var endpoint: String
    /// Trust this PEM CA bundle instead of the system store.
    public var caFile: String?

    public init(keyFile: String, keyId: String, teamId: String, bundleId: String? = nil, endpoint: String = APNsConfig.production,
                caFile: String? = nil) {
        self.keyFile = keyFile
        self.keyId = keyId
        self.teamId = teamId
        self.bundleId = bundleId
        self.endpoint = endpoint
        self.caFile = caFile
    }
}

/// The Firebase project this server sends FCM HTTP v1 messages to (a service account).
public struct FCMConfig: Sendable, Equatable {
    public static let production = "https://fcm.googleapis.com"

    /// The service account's JSON key file (as Google issues it). Must not be readable by group or others.
    public var serviceAccountFile: String
    public var endpoint: String
    public var caFile: String?

    public init(serviceAccountFile: String, endpoint: String = FCMConfig.production, caFile: String? = nil) {
        self.serviceAccountFile = serviceAccountFile
        self.endpoint = endpoint
        self.caFile = caFile
    }
}

/// A secret file refused at start (the message names the file, never its content).
struct PushKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    var message: String
    var description: String { message }

    /// The file's text, after checking that only its owner may read it.
    static func readPrivate(_ path: String, what: String) throws(PushKeyError) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { throw PushKeyError(message: "\(what) \(path) cannot be read (\(String(cString: strerror(errno))))") }
        let mode = st.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw PushKeyError(message: "\(what) \(path) is readable by others (mode \(String(mode, radix: 8))): run chmod 600 \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw PushKeyError(message: "\(what) \(path) cannot be read") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A Google service account's key file: what the OAuth exchange and FCM's URL need.
struct ServiceAccount: Sendable {
    var projectId: String
    var clientEmail: String
    var privateKeyId: String?
    var tokenURI: String
    var signer: JWTSigner

    static func load(_ path: String) throws(PushKeyError) -> ServiceAccount {
        let text = try PushKeyError.readPrivate(path, what: "FCM service account file")
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              let project = obj["project_id"] as? String, !project.isEmpty,
              let email = obj["client_email"] as? String, !email.isEmpty,
              let pem = obj["private_key"] as? String else {
            throw PushKeyError(message: "FCM service account file \(path) needs project_id, client_email and private_key")
        }
        let uri = (obj["token_uri"] as? String) ?? "https://oauth2.googleapis.com/token"
        guard uri.hasPrefix("https://") else { throw PushKeyError(message: "FCM service account file \(path): token_uri must be https://") }
        let signer: JWTSigner
        do { signer = try JWTSigner(pem: pem, algorithm: .rs256) } catch {
            throw PushKeyError(message: "FCM service account file \(path): private_key is not usable (\(error))")
        }
        return ServiceAccount(projectId: project, clientEmail: email, privateKeyId: obj["private_key_id"] as? String, tokenURI: uri, signer: signer)
    }
}
