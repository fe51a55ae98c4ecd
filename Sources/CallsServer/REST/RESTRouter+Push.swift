import CallsCore
import CallsTransport
import Foundation

// MARK: Push tokens (`/v3/users/{uid}/push_tokens`)
extension RESTRouter {
    /// The user themself (their authToken) or the operator (apikey); the user must exist.
    func requirePushActor(_ r: HTTPRequest, uid: String) throws {
        if let actor = try callViewer(r), actor != uid {
            throw ServerError(.forbidden, "An auth token may only manage its own user's push tokens.")
        }
        guard try store.user(uid: uid) != nil else { throw ServerError.uidNotFound(uid) }
    }

    func registerPushToken(_ r: HTTPRequest, uid: String) throws -> HTTPResponse {
        try requirePushActor(r, uid: uid)
        struct Body: Decodable { var token: String; var platform: String; var appBundleId: String? }
        let b: Body = try decode(r)
        guard let platform = PushPlatform(rawValue: b.platform) else {
            throw ServerError(.pushTokenInvalid, "platform is one of \(PushPlatform.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        let token = try Self.normalised(token: b.token, platform: platform)
        var bundle = b.appBundleId
        if platform.isAPNs {
            bundle = bundle ?? config.apns?.bundleId
            // A VoIP topic is `<bundle>.voip`: accept either spelling, store the bundle.
            if let v = bundle, v.hasSuffix(".voip") { bundle = String(v.dropLast(5)) }
            guard let id = bundle else { throw ServerError(.pushTokenInvalid, "appBundleId is required for \(platform.rawValue) tokens.") }
            guard ServerConfigFile.isBundleId(id) else { throw ServerError(.pushTokenInvalid, "appBundleId is a bundle id such as com.example.app.") }
        } else if let id = bundle, !ServerConfigFile.isBundleId(id) {
            throw ServerError(.pushTokenInvalid, "appBundleId is a package name such as com.example.app.")
        }
        return ok(try store.registerPushToken(uid: uid, token: token, platform: platform, appBundleId: bundle, at: epochMilliseconds()))
    }

    func deletePushTokens(_ r: HTTPRequest, uid: String, token: String?) throws -> HTTPResponse {
        try requirePushActor(r, uid: uid)
        // Also `{"token": …}` in the body, as PushKit's invalidation hands the app the old token.
        struct Body: Decodable { var token: String? }
        let bodyToken = r.body.isEmpty ? nil : (try decode(r) as Body).token
        let which = token ?? bodyToken
        let n = try store.deletePushTokens(uid: uid, token: which)
        if which != nil && n == 0 { throw ServerError(.pushTokenNotFound, "No such push token for '\(uid)'.") }
        return ok(DeletedBody(success: true, deleted: n))
    }

    /// APNs tokens are hex (PushKit's 32 bytes today; up to 100 allowed), stored lower-case; FCM
    /// registration tokens are up to 4 KB of URL-safe characters.
    static func normalised(token: String, platform: PushPlatform) throws -> String {
        if platform.isAPNs {
            guard (32...200).contains(token.count), token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else {
                throw ServerError(.pushTokenInvalid, "An APNs token is the device token in hex (64 characters today).")
            }
            return token.lowercased()
        }
        guard (1...4096).contains(token.utf8.count),
              token.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_-:.".unicodeScalars.contains($0)) }) else {
            throw ServerError(.pushTokenInvalid, "An FCM token is 1–4096 characters of letters, digits, '_', '-', ':', '.'.")
        }
        return token
    }
}
