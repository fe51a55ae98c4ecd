/// The error every failing SDK call reports: a documented code and a human-readable text.
/// Codes are listed in docs/sdk.md. Immutable; safe to pass between threads.
public final class CometChatCallException: Error, Sendable, CustomStringConvertible {
    public let errorCode: String
    public let errorDescription: String

    public init(errorCode: String, errorDescription: String) {
        self.errorCode = errorCode
        self.errorDescription = errorDescription
    }

    public var description: String { "\(errorCode): \(errorDescription)" }

    // MARK: Documented codes
    static let settingsFileNotFound = "SETTINGS_FILE_NOT_FOUND"
    static let settingsFileInvalid = "SETTINGS_FILE_INVALID"
    static let settingsMissingAppID = "SETTINGS_MISSING_APP_ID"
    static let settingsMissingRegion = "SETTINGS_MISSING_REGION"
    static let alreadyInitialized = "ALREADY_INITIALIZED"
    static let notInitialized = "INIT_ERROR"
    static let notLoggedIn = "AUTH_TOKEN_ERROR"
    static let sessionIDError = "SESSION_ID_ERROR"
    static let apiError = "API_ERROR"
    static let networkError = "NETWORK_ERROR"
    static let alreadyInSession = "SESSION_ALREADY_ACTIVE"
    static let audioError = "AUDIO_ERROR"
    static let videoError = "VIDEO_ERROR"
    static let hostInvalid = "HOST_INVALID"
}
