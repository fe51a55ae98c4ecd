import CallsCore
import CallsSecurity
import CallsTransport
import Foundation

/// The REST API: validate → authorise → delegate to the store. Runs on the REST worker queue,
/// never on the web service thread. Every endpoint is documented in docs/protocol.md.
struct RESTRouter: Sendable {
    let store: CallStore
    let keys: ServerKeys
    let signer: CallTokenSigner
    let config: ServerConfiguration
    let mediaPort: Int

    func handle(_ r: HTTPRequest) -> HTTPResponse {
        do {
            return try route(r)
        } catch let e as ServerError {
            return HTTPResponse(status: e.status, json: e.json)
        } catch {
            return HTTPResponse(status: 500, json: ServerError.storage.json)
        }
    }

    private func route(_ r: HTTPRequest) throws -> HTTPResponse {
        let parts = r.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        func route(_ method: String, _ pattern: String) -> Bool {
            guard r.method == method else { return false }
            let pat = pattern.split(separator: "/").map(String.init)
            return pat.count == parts.count && zip(pat, parts).allSatisfy { $0 == "*" || $0 == $1 }
        }
        switch true {
        case route("GET", "healthz"):
            return HTTPResponse(status: 200, json: #"{"status":"ok"}"#)
        case route("GET", "v3/app"):
            return ok(AppInfo(appId: keys.appId, region: config.region, mediaPort: mediaPort))
        case route("POST", "v3/users"):
            try requireAPIKey(r)
            struct Body: Decodable { var uid: String; var name: String?; var avatar: String? }
            let b: Body = try decode(r)
            try validate(uid: b.uid)
            guard let u = try store.createUser(uid: b.uid, name: clean(b.name) ?? b.uid, avatar: b.avatar) else {
                throw ServerError(409, "ERR_UID_ALREADY_EXISTS", "A user with uid '\(b.uid)' exists already.")
            }
            return ok(u)
        case route("GET", "v3/users/*"):
            try requireAPIKey(r)
            guard let u = try store.user(uid: parts[2]) else { throw ServerError.uidNotFound(parts[2]) }
            return ok(u)
        case route("POST", "v3/users/*/auth_tokens"):
            try requireAPIKey(r)
            let uid = parts[2]
            guard try store.user(uid: uid) != nil else { throw ServerError.uidNotFound(uid) }
            let token = try store.createAuthToken(uid: uid)
            return ok(AuthTokenBody(uid: uid, authToken: token, createdAt: epochMilliseconds() / 1000))
        case route("POST", "v3/sdk/login"):
            return try login(r)
        case route("GET", "v3/me"):
            return ok(try requireUser(r))
        case route("POST", "v3.0/call_tokens"):
            try requireAppID(r)
            let user = try requireUser(r)
            struct Body: Decodable { var sessionId: String }
            let b: Body = try decode(r)
            try validate(sessionId: b.sessionId)
            let now = Int64(Date().timeIntervalSince1970)
            let token = signer.sign(CallTokenClaims(app: keys.appId, sub: user.uid, sid: b.sessionId, iat: now,
                                                    exp: now + config.callTokenTTLSeconds))
            return ok(["token": token])
        case route("GET", "v3/calls/*"):
            try requireAPIKey(r)
            guard let call = try store.latestCall(sessionId: parts[2]) else { throw ServerError.sessionNotFound(parts[2]) }
            return ok(CallBody(call))
        default:
            let known = [["healthz"], ["v3", "app"], ["v3", "users"], ["v3", "sdk", "login"], ["v3", "me"], ["v3.0", "call_tokens"]]
            if known.contains(parts) { throw ServerError(405, "ERR_METHOD_NOT_ALLOWED", "\(r.method) is not allowed on \(r.path).") }
            throw ServerError(404, "ERR_NOT_FOUND", "No endpoint \(r.method) \(r.path).")
        }
    }

    private func login(_ r: HTTPRequest) throws -> HTTPResponse {
        try requireAppID(r)
        struct Body: Decodable { var uid: String; var authKey: String; var name: String? }
        let b: Body = try decode(r)
        guard Crypto.constantTimeEqual(Array(b.authKey.utf8), Array(keys.authKey.utf8)) else { throw ServerError.authKeyInvalid }
        try validate(uid: b.uid)
        var user = try store.user(uid: b.uid)
        if user == nil {
            guard config.autoCreateUsers else { throw ServerError.uidNotFound(b.uid) }
            user = try store.createUser(uid: b.uid, name: clean(b.name) ?? b.uid) ?? store.user(uid: b.uid)
        }
        guard let u = user else { throw ServerError.uidNotFound(b.uid) }
        let token = try store.createAuthToken(uid: u.uid)
        return ok(LoginBody(uid: u.uid, name: u.name, avatar: u.avatar, authToken: token))
    }

    // MARK: Validation and auth

    private func requireAPIKey(_ r: HTTPRequest) throws {
        guard let k = r.header("apikey"), !k.isEmpty else { throw ServerError.emptyAPIKey }
        guard Crypto.constantTimeEqual(Array(k.utf8), Array(keys.apiKey.utf8)) else { throw ServerError.apiKeyNotFound }
    }

    private func requireAppID(_ r: HTTPRequest) throws {
        guard let a = r.header("appid"), !a.isEmpty else { throw ServerError.emptyAppID }
        guard a == keys.appId else { throw ServerError.appIDMismatch }
    }

    private func requireUser(_ r: HTTPRequest) throws -> StoredUser {
        guard let t = r.header("authtoken"), !t.isEmpty else { throw ServerError.emptyAuthToken }
        guard let u = try store.user(authToken: t) else { throw ServerError.authTokenNotFound }
        return u
    }

    private func validate(uid: String) throws {
        guard Self.isIdentifier(uid, max: 100) else {
            throw ServerError(400, "ERR_UID_INVALID", "A uid is 1–100 characters of letters, digits, '_', '-', '.', '@'.")
        }
    }

    private func validate(sessionId: String) throws {
        guard Self.isIdentifier(sessionId, max: 128) else {
            throw ServerError(400, "ERR_SESSION_ID_INVALID", "A session id is 1–128 characters of letters, digits, '_', '-', '.', '@', ':'.")
        }
    }

    static func isIdentifier(_ s: String, max: Int) -> Bool {
        guard !s.isEmpty, s.utf8.count <= max else { return false }
        return s.unicodeScalars.allSatisfy { c in
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || "_-.@:".unicodeScalars.contains(c)
        }
    }

    private func clean(_ s: String?) -> String? {
        guard let t = s?.trimmingCharacters(in: .whitespacesAndNewlines), !t.isEmpty else { return nil }
        return String(t.prefix(100))
    }

    private func decode<T: Decodable>(_ r: HTTPRequest) throws -> T {
        guard !r.body.isEmpty else { throw ServerError.badRequest("A JSON body is required.") }
        do { return try JSONDecoder().decode(T.self, from: Data(r.body)) } catch {
            throw ServerError.badRequest("The body is not valid JSON with the required fields.")
        }
    }

    private func ok<T: Encodable>(_ data: T) -> HTTPResponse {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? enc.encode(["data": data])) ?? Data("{}".utf8)
        return HTTPResponse(status: 200, contentType: "application/json", body: Array(body))
    }
}

// MARK: Response bodies

struct AppInfo: Encodable { var appId: String; var region: String; var mediaPort: Int }
struct AuthTokenBody: Encodable { var uid: String; var authToken: String; var createdAt: Int64 }
struct LoginBody: Encodable { var uid: String; var name: String; var avatar: String?; var authToken: String }

struct CallBody: Encodable {
    struct P: Encodable {
        var uid: String; var pid: String; var name: String; var joinedAt: Int64; var leftAt: Int64?; var isJoined: Bool
    }
    var sessionId: String
    var type: String
    var mode: String
    var status: String
    var initiatedAt: Int64
    var startedAt: Int64?
    var endedAt: Int64?
    var participants: [P]

    init(_ c: StoredCall) {
        sessionId = c.sessionId
        type = c.type
        mode = c.mode
        status = c.status
        initiatedAt = c.initiatedAt
        startedAt = c.startedAt
        endedAt = c.endedAt
        participants = c.participants.map {
            P(uid: $0.uid, pid: $0.pid, name: $0.name, joinedAt: $0.joinedAt, leftAt: $0.leftAt, isJoined: $0.leftAt == nil)
        }
    }
}
