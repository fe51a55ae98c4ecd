import CallsCore

/// An error the server reports to a REST client: a documented code (which fixes the HTTP
/// status) and a message.
public struct ServerError: Error, Equatable, Sendable {
    public var code: RESTErrorCode
    public var message: String

    public init(_ code: RESTErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var status: Int { code.status }

    /// `{"error":{"code","message"}}`
    public var json: String { code.json(message) }

    static let emptyAPIKey = ServerError(.emptyAPIKey, "The apikey header is missing.")
    static let apiKeyNotFound = ServerError(.apiKeyNotFound, "The apikey is not valid for this app.")
    static let emptyAuthToken = ServerError(.emptyAuthToken, "The authToken header is missing.")
    static let authTokenNotFound = ServerError(.authTokenNotFound, "The authToken is not valid.")
    static let emptyAppID = ServerError(.emptyAppID, "The appId header is missing.")
    static let appIDMismatch = ServerError(.appIDMismatch, "The appId does not belong to this server.")
    static let authKeyInvalid = ServerError(.authKeyInvalid, "The auth key is not valid for this app.")
    static func badRequest(_ m: String) -> ServerError { ServerError(.badRequest, m) }
    static func uidNotFound(_ uid: String) -> ServerError { ServerError(.uidNotFound, "No user with uid '\(uid)'.") }
    static func sessionNotFound(_ s: String) -> ServerError { ServerError(.callSessionNotFound, "No call with session id '\(s)'.") }
    static func groupNotFound(_ g: String) -> ServerError { ServerError(.guidNotFound, "No group with guid '\(g.prefix(100))'.") }
    static let storage = ServerError(.storage, "The server could not read or write its database.")
    static let storageFull = ServerError(.storage, "The server's disk is full: nothing was stored. Try again once there is room.")
    static let databaseUnavailable = ServerError(.unavailable, "The server's database is unavailable; nothing was changed. Retry shortly.")
}
