import CallsSupport

/// The code of a refused REST request (`{"error":{"code","message"}}`) and the HTTP status it
/// always comes with; docs/protocol.md lists them (and a test checks the two agree).
public enum RESTErrorCode: String, Codable, Sendable, CaseIterable {
    case emptyAPIKey = "AUTH_ERR_EMPTY_APIKEY"
    case apiKeyNotFound = "AUTH_ERR_APIKEY_NOT_FOUND"
    case emptyAuthToken = "AUTH_ERR_EMPTY_AUTH_TOKEN"
    case authTokenNotFound = "AUTH_ERR_AUTH_TOKEN_NOT_FOUND"
    case emptyAppID = "AUTH_ERR_EMPTY_APPID"
    case appIDMismatch = "AUTH_ERR_APPID_MISMATCH"
    case authKeyInvalid = "AUTH_ERR_AUTH_KEY_INVALID"
    case authKeyLoginDisabled = "AUTH_ERR_AUTH_KEY_DISABLED"
    case badRequest = "ERR_BAD_REQUEST"
    case uidInvalid = "ERR_UID_INVALID"
    case sessionIdInvalid = "ERR_SESSION_ID_INVALID"
    case uidNotFound = "ERR_UID_NOT_FOUND"
    case uidAlreadyExists = "ERR_UID_ALREADY_EXISTS"
    case authTokenNotFoundForUser = "ERR_AUTH_TOKEN_NOT_FOUND"
    case roleNotAllowed = "ERR_ROLE_NOT_ALLOWED"
    case rateLimited = "ERR_RATE_LIMITED"
    case callSessionNotFound = "ERR_CALL_SESSION_NOT_FOUND"
    case guidInvalid = "ERR_GUID_INVALID"
    case guidNotFound = "ERR_GUID_NOT_FOUND"
    case guidAlreadyExists = "ERR_GUID_ALREADY_EXISTS"
    case notGroupOwner = "ERR_NOT_GROUP_OWNER"
    case deliveryNotFound = "ERR_DELIVERY_NOT_FOUND"
    case pushTokenInvalid = "ERR_PUSH_TOKEN_INVALID"
    case pushTokenNotFound = "ERR_PUSH_TOKEN_NOT_FOUND"
    case forbidden = "ERR_FORBIDDEN"
    case webhookInvalid = "ERR_WEBHOOK_INVALID"
    case webhookNotFound = "ERR_WEBHOOK_NOT_FOUND"
    case webhookAlreadyExists = "ERR_WEBHOOK_ALREADY_EXISTS"
    case webhookInConfig = "ERR_WEBHOOK_IN_CONFIG"
    case notFound = "ERR_NOT_FOUND"
    case methodNotAllowed = "ERR_METHOD_NOT_ALLOWED"
    case bodyTooLarge = "ERR_BODY_TOO_LARGE"
    /// A request body sent chunked (`Transfer-Encoding`): the API takes a `Content-Length`.
    case lengthRequired = "ERR_LENGTH_REQUIRED"
    case unavailable = "ERR_UNAVAILABLE"
    case storage = "ERR_STORAGE"
    /// A call token for a ringing call's room asked for by (or for) someone not its party.
    case notCallParty = "ERR_NOT_CALL_PARTY"
    /// An invite that does not verify, has expired, was revoked or is used up.
    case inviteInvalid = "ERR_INVITE_INVALID"
    /// Something one user or session may hold is full: a session's live invites, a participant's
    /// invites of it, a user's groups.
    case limitReached = "ERR_LIMIT_REACHED"

    /// The HTTP status this code is sent with.
    public var status: Int {
        switch self {
        case .emptyAPIKey, .apiKeyNotFound, .emptyAuthToken, .authTokenNotFound, .emptyAppID, .appIDMismatch, .authKeyInvalid: return 401
        case .badRequest, .uidInvalid, .sessionIdInvalid, .guidInvalid, .pushTokenInvalid, .webhookInvalid: return 400
        case .roleNotAllowed, .notGroupOwner, .forbidden, .authKeyLoginDisabled, .notCallParty, .inviteInvalid: return 403
        case .uidNotFound, .authTokenNotFoundForUser, .callSessionNotFound, .notFound, .guidNotFound, .deliveryNotFound, .pushTokenNotFound, .webhookNotFound: return 404
        case .methodNotAllowed: return 405
        case .uidAlreadyExists, .guidAlreadyExists, .webhookAlreadyExists, .webhookInConfig: return 409
        case .bodyTooLarge: return 413
        case .lengthRequired: return 411
        case .rateLimited, .limitReached: return 429
        case .storage: return 500
        case .unavailable: return 503
        }
    }

    /// The error body (`{"error":{"code","message"}}`).
    public func json(_ message: String) -> String {
        #"{"error":{"code":"\#(rawValue)","message":\#(JSONText.quote(message))}}"#
    }
}
