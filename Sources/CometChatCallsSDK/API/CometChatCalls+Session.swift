import CallsCore
import Foundation

extension CometChatCalls {
    /// Issues a call token for `sessionID` for the logged-in user.
    public static func generateToken(sessionID: String, onSuccess: @escaping (String?) -> Void,
                                     onError: @escaping (CometChatCallException?) -> Void) {
        run(onSuccess: { (t: String) in onSuccess(t) }, onError: { onError($0) }) { () async throws(CometChatCallException) in
            try await generateToken(sessionID: sessionID)
        }
    }

    /// v4 form: the auth token is given explicitly (it must be the logged-in user's).
    public static func generateToken(authToken: String, sessionID: String, onSuccess: @escaping (String?) -> Void,
                                     onError: @escaping (CometChatCallException?) -> Void) {
        run(onSuccess: { (t: String) in onSuccess(t) }, onError: { onError($0) }) { () async throws(CometChatCallException) in
            let (c, _) = try requireClient()
            if c.user?.authToken != authToken { _ = try await c.login(authToken: authToken) }
            return try await c.generateToken(sessionID: sessionID)
        }
    }

    /// Generates a token and joins `sessionID`. `onSuccess` gets the session id; `onError`
    /// fires once, only on a real failure (codes in docs/sdk.md).
    public static func joinSession(sessionID: String, callSetting: SessionSettingsBuilder.SessionSettings,
                                   container: (any CallContainer)?, onSuccess: @escaping (String) -> Void,
                                   onError: @escaping (CometChatCallException?) -> Void) {
        let box = UncheckedBox(container)
        run(onSuccess: onSuccess, onError: { onError($0) }) { () async throws(CometChatCallException) in
            let token = try await generateToken(sessionID: sessionID)
            try await join(callToken: token, expectedSessionID: sessionID, settings: callSetting, container: box.value)
            return sessionID
        }
    }

    /// Joins the session a call token was issued for.
    public static func joinSession(callToken: String, callSetting: SessionSettingsBuilder.SessionSettings,
                                   container: (any CallContainer)?, onSuccess: @escaping (String) -> Void,
                                   onError: @escaping (CometChatCallException?) -> Void) {
        let box = UncheckedBox(container)
        run(onSuccess: onSuccess, onError: { onError($0) }) { () async throws(CometChatCallException) in
            try await join(callToken: callToken, settings: callSetting, container: box.value)
            return CallSession.shared.currentClient?.participants.first?.mid ?? ""
        }
    }

    // MARK: async forms

    public static func generateToken(sessionID: String) async throws(CometChatCallException) -> String {
        let (c, _) = try requireClient()
        return try await c.generateToken(sessionID: sessionID)
    }

    /// Joins with a token; the container (if any) starts rendering on the callback queue.
    public static func joinSession(callToken: String, callSetting: SessionSettingsBuilder.SessionSettings,
                                   container: (any CallContainer)? = nil) async throws(CometChatCallException) {
        try await join(callToken: callToken, settings: callSetting, container: container)
    }

    /// CallRoom: redeems an invite (`invite=` of a shared link) for a call token of its session —
    /// as the logged-in user, or, not logged in, as a guest known by `name` (a guest invite).
    public static func redeemInvite(_ invite: String, name: String?) async throws(CometChatCallException) -> (sessionID: String, callToken: String) {
        let (c, _) = try requireClient()
        return try await c.redeemInvite(invite, name: name)
    }

    /// Generates a token and joins.
    public static func joinSession(sessionID: String, callSetting: SessionSettingsBuilder.SessionSettings,
                                   container: (any CallContainer)? = nil) async throws(CometChatCallException) {
        let token = try await generateToken(sessionID: sessionID)
        try await join(callToken: token, expectedSessionID: sessionID, settings: callSetting, container: container)
    }

    private static func join(callToken: String, expectedSessionID: String? = nil, settings: SessionSettingsBuilder.SessionSettings,
                             container: (any CallContainer)?) async throws(CometChatCallException) {
        let (c, queue) = try requireClient()
        guard c.user != nil else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "Log in before joining a session.")
        }
        guard !callToken.isEmpty else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "The call token is empty.")
        }
        let session = CallSession.shared
        session.beginSurface(settings)
        let box = UncheckedBox(container)
        // Attach before joining so `callSessionDidStart` precedes the first listener callback.
        queue.async { if let c = box.value { session.attach(container: c); c.callSessionDidStart(session, settings: settings) } }
        do { try await c.join(callToken: callToken, sessionID: expectedSessionID, settings: settings) } catch {
            queue.async { if let c = box.value { session.attach(container: nil); c.callSessionDidEnd(session) } }
            throw error
        }
        session.watchAudioDevices()
        if settings.autoStartRecording { session.startRecording() }
        if settings.autoStartTranscription { session.startTranscription() }
    }
}
