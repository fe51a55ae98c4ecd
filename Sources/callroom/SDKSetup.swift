import CallsCore
import CometChatCallsSDK
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Initialises the SDK and logs in the way `callroom join` and `callroom demo` need:
/// through the documented public API only.
enum SDKSetup {
    struct Options: Sendable {
        var server: String?
        var settingsFile: String?
        var appID: String?
        var uid: String
        var name: String?
        var authKey: String?
        var authToken: String?
    }

    /// Reads the server's public app id (`GET /v3/app`) when the user did not give one.
    static func fetchAppID(server: URL) async throws(CometChatCallException) -> String {
        struct Body: Decodable { var data: App }
        struct App: Decodable { var appId: String }
        do {
            let (data, _) = try await URLSession.shared.data(from: server.appendingPathComponent("v3/app"))
            return try JSONDecoder().decode(Body.self, from: data).data.appId
        } catch {
            throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "cannot reach \(server.absoluteString): \(error.localizedDescription)")
        }
    }

    /// A call token with the moderator role for `uid`, issued by the operator (`apikey`):
    /// what a backend does for a meeting's host. The user must exist (log in first).
    static func moderatorToken(server: String, apiKey: String, appID: String, uid: String, sessionID: String) async throws(CometChatCallException) -> String {
        struct Body: Decodable { var data: Token }
        struct Token: Decodable { var token: String }
        guard let url = URL(string: server)?.appendingPathComponent("v3.0/call_tokens") else {
            throw CometChatCallException(errorCode: "HOST_INVALID", errorDescription: "'\(server)' is not a server URL")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue(apiKey, forHTTPHeaderField: "apikey")
        request.setValue(appID, forHTTPHeaderField: "appId")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: ["sessionId": sessionID, "uid": uid, "role": ParticipantRole.moderator.rawValue])
        do {
            let (data, response) = try await URLSession.shared.data(for: request)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                throw CometChatCallException(errorCode: "API_ERROR", errorDescription: String(decoding: data, as: UTF8.self))
            }
            return try JSONDecoder().decode(Body.self, from: data).data.token
        } catch let e as CometChatCallException {
            throw e
        } catch {
            throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "cannot reach \(server): \(error.localizedDescription)")
        }
    }

    static func initAndLogin(_ o: Options) async throws(CometChatCallException) -> CallsUser {
        if let file = o.settingsFile {
            try CometChatCalls.initFromSettings(path: file)
        } else {
            var s = o.server ?? ""
            if !s.contains("://") { s = "http://" + s }
            guard let url = URL(string: s), url.host != nil else {
                throw CometChatCallException(errorCode: "HOST_INVALID", errorDescription: "'\(o.server ?? "")' is not a server URL")
            }
            let appID: String
            if let a = o.appID { appID = a } else { appID = try await fetchAppID(server: url) }
            try CometChatCalls.initialize(CallAppSettingsBuilder().set(appID: appID).set(region: "local").set(host: s).build())
        }
        if let token = o.authToken { return try await CometChatCalls.login(authToken: token) }
        guard let key = o.authKey else {
            throw CometChatCallException(errorCode: "AUTH_TOKEN_ERROR", errorDescription: "give --auth-key or --auth-token")
        }
        let user = try await CometChatCalls.login(UID: o.uid, authKey: key)
        return user
    }
}
