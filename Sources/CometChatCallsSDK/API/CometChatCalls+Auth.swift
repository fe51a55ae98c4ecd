import CallsCore
import Foundation

extension CometChatCalls {
    /// Logs in with the app's auth key (development; a dev server may create the user).
    public static func login(UID: String, authKey: String, onSuccess: @escaping (CallsUser) -> Void,
                             onError: @escaping (CometChatCallException) -> Void) {
        run(onSuccess: onSuccess, onError: onError) { () async throws(CometChatCallException) in try await login(UID: UID, authKey: authKey) }
    }

    /// Logs in with the REST API key (server-side tools only): issues an auth token for `UID`.
    public static func login(UID: String, apiKey: String, onSuccess: @escaping (CallsUser) -> Void,
                             onError: @escaping (CometChatCallException) -> Void) {
        run(onSuccess: onSuccess, onError: onError) { () async throws(CometChatCallException) in try await login(UID: UID, apiKey: apiKey) }
    }

    /// Logs in with an auth token from your backend.
    public static func login(authToken: String, onSuccess: @escaping (CallsUser) -> Void,
                             onError: @escaping (CometChatCallException) -> Void) {
        run(onSuccess: onSuccess, onError: onError) { () async throws(CometChatCallException) in try await login(authToken: authToken) }
    }

    /// Logs out (leaving any session first).
    public static func logout(onSuccess: @escaping (String) -> Void, onError: @escaping (CometChatCallException) -> Void) {
        run(onSuccess: onSuccess, onError: onError) { () async throws(CometChatCallException) in try await logout() }
    }

    /// The logged-in user, or nil.
    public static func getLoggedInUser() -> CallsUser? { state.withLock { $0.client?.user } }

    // MARK: async forms

    public static func login(UID: String, authKey: String) async throws(CometChatCallException) -> CallsUser {
        let (c, _) = try requireClient()
        return try await c.login(uid: UID, authKey: authKey)
    }

    public static func login(UID: String, apiKey: String) async throws(CometChatCallException) -> CallsUser {
        let (c, _) = try requireClient()
        struct Token: Decodable, Sendable { var authToken: String }
        let rest = RESTClient(baseURL: c.serverURL, appID: c.appID, trust: c.trust)
        let t = try await rest.call("POST", "/v3/users/\(UID)/auth_tokens", headers: ["apikey": apiKey], as: Token.self)
        return try await c.login(authToken: t.authToken)
    }

    public static func login(authToken: String) async throws(CometChatCallException) -> CallsUser {
        let (c, _) = try requireClient()
        return try await c.login(authToken: authToken)
    }

    @discardableResult
    public static func logout() async throws(CometChatCallException) -> String {
        let (c, _) = try requireClient()
        if c.isSessionActive { await c.leave() }
        c.logout()
        return "logged out"
    }

    /// Runs an async SDK call and delivers its result to documented-style handlers on the callback queue.
    static func run<T: Sendable>(onSuccess: @escaping (T) -> Void, onError: @escaping (CometChatCallException) -> Void,
                                 _ body: @escaping @Sendable () async throws(CometChatCallException) -> T) {
        let queue = callbackQueue
        let handlers = UncheckedBox((onSuccess, onError))
        Task {
            do throws(CometChatCallException) {
                let v = try await body()
                queue.async { handlers.value.0(v) }
            } catch {
                queue.async { handlers.value.1(error) }
            }
        }
    }
}
