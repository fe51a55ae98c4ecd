import CallsCore
import CometChatCallsSDK
import Foundation

extension CometChat {
    /// The kind of device token (`POST /v3/users/{uid}/push_tokens`).
    public enum PushPlatform: String, Sendable {
        /// A PushKit VoIP token: incoming calls ring the phone through APNs (the default).
        case apnsVoip = "apns_voip"
        /// A regular APNs token (alerts; calls do not ring it).
        case apns
        /// A Firebase Cloud Messaging token: incoming calls ring the phone through FCM.
        case fcm
    }

    /// Registers the logged-in user's device token with the server, which then pushes incoming
    /// calls to it (and their end, so the phone stops ringing). `appBundleId` is the app's
    /// bundle id (APNs; the server's configured one when nil). Registering the token again
    /// (a new login on the device) moves it to the new user.
    public static func registerTokenForPushNotification(token: String, platform: PushPlatform = .apnsVoip, appBundleId: String? = nil,
                                                        onSuccess: @escaping (String) -> Void,
                                                        onError: @escaping (CometChatException?) -> Void) {
        var fields = ["token": token, "platform": platform.rawValue]
        if let appBundleId { fields["appBundleId"] = appBundleId }
        let body = fields
        pushTokens(onSuccess: onSuccess, onError: onError) { (rest, uid, auth) async throws(CometChatCallException) in
            struct Stored: Decodable, Sendable { var token: String }
            let b = try await rest.call("POST", "/v3/users/\(uid)/push_tokens", headers: ["authToken": auth], body: body, as: Stored.self)
            return b.token
        }
    }

    /// Removes a token (PushKit invalidated it, or the user logs out on this device); nil
    /// removes every token of the logged-in user.
    public static func unregisterTokenForPushNotification(token: String?, onSuccess: @escaping (String) -> Void,
                                                          onError: @escaping (CometChatException?) -> Void) {
        pushTokens(onSuccess: onSuccess, onError: onError) { (rest, uid, auth) async throws(CometChatCallException) in
            struct Deleted: Decodable, Sendable { var deleted: Int }
            let path = token.map { "/v3/users/\(uid)/push_tokens/\($0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? $0)" }
                ?? "/v3/users/\(uid)/push_tokens"
            let b = try await rest.call("DELETE", path, headers: ["authToken": auth], as: Deleted.self)
            return "\(b.deleted) token(s) removed"
        }
    }

    private static func pushTokens(onSuccess: @escaping (String) -> Void, onError: @escaping (CometChatException?) -> Void,
                                   _ body: @escaping @Sendable (RESTClient, String, String) async throws(CometChatCallException) -> String) {
        let (url, settings, user, auth) = state.withLock { ($0.serverURL, $0.settings, $0.user, $0.authToken) }
        let deliver = Deliver(queue: settings?.callbackQueue ?? .main)
        let box = Handlers<String>(success: onSuccess, failure: { onError($0) })
        guard let url, let settings, let user, let auth else {
            return deliver { box.failure(CometChatException(errorCode: CometChatException.notLoggedIn, errorDescription: "Log in first (CometChat.login).")) }
        }
        let rest = RESTClient(baseURL: url, appID: settings.appID, trust: settings.trust)
        Task {
            do throws(CometChatCallException) {
                let result = try await body(rest, user.uid, auth)
                deliver { box.success(result) }
            } catch {
                let e = CometChatException(errorCode: error.errorCode, errorDescription: error.errorDescription)
                deliver { box.failure(e) }
            }
        }
    }
}
