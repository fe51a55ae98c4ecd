/// An error the server reports to a client: a documented code, a message and an HTTP status.
/// Every code is listed in docs/protocol.md.
public struct ServerError: Error, Equatable, Sendable {
    public var status: Int
    public var code: String
    public var message: String

    public init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// `{"error":{"code","message"}}`
    public var json: String {
        #"{"error":{"code":"\#(code)","message":\#(JSONText.quote(message))}}"#
    }

    static let emptyAPIKey = ServerError(401, "AUTH_ERR_EMPTY_APIKEY", "The apikey header is missing.")
    static let apiKeyNotFound = ServerError(401, "AUTH_ERR_APIKEY_NOT_FOUND", "The apikey is not valid for this app.")
    static let emptyAuthToken = ServerError(401, "AUTH_ERR_EMPTY_AUTH_TOKEN", "The authToken header is missing.")
    static let authTokenNotFound = ServerError(401, "AUTH_ERR_AUTH_TOKEN_NOT_FOUND", "The authToken is not valid.")
    static let emptyAppID = ServerError(401, "AUTH_ERR_EMPTY_APPID", "The appId header is missing.")
    static let appIDMismatch = ServerError(401, "AUTH_ERR_APPID_MISMATCH", "The appId does not belong to this server.")
    static let authKeyInvalid = ServerError(401, "AUTH_ERR_AUTH_KEY_INVALID", "The auth key is not valid for this app.")
    static func badRequest(_ m: String) -> ServerError { ServerError(400, "ERR_BAD_REQUEST", m) }
    static func uidNotFound(_ uid: String) -> ServerError { ServerError(404, "ERR_UID_NOT_FOUND", "No user with uid '\(uid)'.") }
    static func sessionNotFound(_ s: String) -> ServerError { ServerError(404, "ERR_CALL_SESSION_NOT_FOUND", "No call with session id '\(s)'.") }
    static let storage = ServerError(500, "ERR_STORAGE", "The server could not read or write its database.")
}

/// Minimal JSON text helpers for hand-built error bodies.
enum JSONText {
    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
