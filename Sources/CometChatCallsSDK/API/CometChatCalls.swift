import CallsCore
import Foundation
import Synchronization

/// The SDK's entry point: init → login → generateToken → joinSession.
///
/// Thread rules: every method may be called from any thread. Completion handlers run on the
/// callback queue (main unless `CallAppSettingsBuilder.set(callbackQueue:)` says otherwise);
/// because the documented handlers are not `@Sendable`, call these methods from that queue.
public final class CometChatCalls: Sendable {
    struct State {
        var settings: CallAppSettings?
        var serverURL: URL?
        var client: CallsClient?
    }
    static let state = Locked<State>(State())

    private init() {}

    /// The settings the SDK was initialised with, if any.
    public static var appSettings: CallAppSettings? { state.withLock { $0.settings } }

    /// A fresh session settings builder: `CometChatCalls.sessionSettingsBuilder.setTitle("x").build()`.
    public static var sessionSettingsBuilder: SessionSettingsBuilder { SessionSettingsBuilder() }

    // MARK: Init

    /// Initialises from `cometchat-settings.json` (see docs/sdk.md for where it is looked up).
    @discardableResult
    public static func initFromSettings(onSuccess: @escaping (String) -> Void,
                                        onError: @escaping (CometChatCallException?) -> Void) -> CometChatCalls? {
        initFromSettings(path: nil, onSuccess: onSuccess, onError: onError)
    }

    /// CallRoom: initialises from a settings file at an explicit path.
    @discardableResult
    public static func initFromSettings(path: String?, onSuccess: @escaping (String) -> Void,
                                        onError: @escaping (CometChatCallException?) -> Void) -> CometChatCalls? {
        do {
            let settings = try SettingsFile.load(path: path)
            try configure(settings)
            deliver(settings.callbackQueue) { onSuccess("CometChatCalls initialised for app \(settings.appID)") }
            return CometChatCalls()
        } catch {
            deliver(.main) { onError(error) }
            return nil
        }
    }

    /// Initialises from built settings: `CometChatCalls(callsAppSettings: CallAppSettingsBuilder()…build(), …)`.
    @discardableResult
    public init(callsAppSettings: CallAppSettings, onSuccess: @escaping (String) -> Void,
                onError: @escaping (CometChatCallException?) -> Void) {
        do {
            try Self.configure(callsAppSettings)
            Self.deliver(callsAppSettings.callbackQueue) { onSuccess("CometChatCalls initialised for app \(callsAppSettings.appID)") }
        } catch {
            Self.deliver(callsAppSettings.callbackQueue) { onError(error) }
        }
    }

    /// async form of `initFromSettings`.
    public static func initFromSettings(path: String? = nil) throws(CometChatCallException) {
        try configure(try SettingsFile.load(path: path))
    }

    /// async form of the builder init.
    public static func initialize(_ settings: CallAppSettings) throws(CometChatCallException) {
        try configure(settings)
    }

    private static func configure(_ settings: CallAppSettings) throws(CometChatCallException) {
        guard !settings.appID.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CometChatCallException(errorCode: CometChatCallException.settingsMissingAppID, errorDescription: "The app id is empty.")
        }
        guard !settings.region.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CometChatCallException(errorCode: CometChatCallException.settingsMissingRegion, errorDescription: "The region is empty.")
        }
        let url = try settings.resolvedServerURL()
        let session = CallSession.shared
        let client = CallsClient(serverURL: url, appID: settings.appID, eventQueue: settings.callbackQueue, trust: settings.trust) { event in
            session.dispatch(event)
        }
        let ok = state.withLock { s -> Bool in
            guard s.settings == nil else { return false }
            s = State(settings: settings, serverURL: url, client: client)
            return true
        }
        guard ok else {
            throw CometChatCallException(errorCode: CometChatCallException.alreadyInitialized,
                                         errorDescription: "CometChatCalls is already initialised; a second init does not re-configure it.")
        }
        session.attach(client: client)
    }

    static func deliver(_ queue: DispatchQueue, _ body: @escaping () -> Void) {
        let box = UncheckedBox(body)
        queue.async { box.value() }
    }

    static func requireClient() throws(CometChatCallException) -> (CallsClient, DispatchQueue) {
        guard let (c, q) = state.withLock({ s in s.client.map { ($0, s.settings?.callbackQueue ?? .main) } }) else {
            throw CometChatCallException(errorCode: CometChatCallException.notInitialized,
                                         errorDescription: "Call CometChatCalls.initFromSettings or the builder init first.")
        }
        return (c, q)
    }

    static var callbackQueue: DispatchQueue { state.withLock { $0.settings?.callbackQueue } ?? .main }

    /// Forgets the configuration and login (tests only; leaves any session first).
    static func resetForTesting() {
        state.withLock { $0 = State() }
        CallSession.shared.attach(client: nil)
        CallSession.shared.clearAllListeners()
    }
}
