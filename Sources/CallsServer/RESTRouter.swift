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
        case route("GET", "v3/users"):
            try requireAPIKey(r)
            let (page, perPage) = try paging(r)
            let p = try store.users(page: page, perPage: perPage)
            return list(p.items, p)
        case route("GET", "v3/users/*"):
            try requireAPIKey(r)
            guard let u = try store.user(uid: parts[2]) else { throw ServerError.uidNotFound(parts[2]) }
            return ok(u)
        case route("PUT", "v3/users/*"):
            try requireAPIKey(r)
            struct Body: Decodable { var name: String?; var avatar: String? }
            let b: Body = try decode(r)
            guard b.name != nil || b.avatar != nil else { throw ServerError.badRequest("Give name and/or avatar.") }
            if let n = b.name, clean(n) == nil { throw ServerError.badRequest("The name is empty.") }
            guard let u = try store.updateUser(uid: parts[2], name: clean(b.name), avatar: b.avatar.map { String($0.prefix(2048)) })
            else { throw ServerError.uidNotFound(parts[2]) }
            return ok(u)
        case route("DELETE", "v3/users/*"):
            try requireAPIKey(r)
            guard try store.deleteUser(uid: parts[2]) else { throw ServerError.uidNotFound(parts[2]) }
            return ok(["success": true])
        case route("POST", "v3/users/*/auth_tokens"):
            try requireAPIKey(r)
            let uid = parts[2]
            guard try store.user(uid: uid) != nil else { throw ServerError.uidNotFound(uid) }
            let token = try store.createAuthToken(uid: uid)
            return ok(AuthTokenBody(uid: uid, authToken: token, createdAt: epochMilliseconds() / 1000))
        case route("GET", "v3/users/*/auth_tokens"):
            try requireAPIKey(r)
            guard try store.user(uid: parts[2]) != nil else { throw ServerError.uidNotFound(parts[2]) }
            return ok(try store.authTokens(uid: parts[2]))
        case route("DELETE", "v3/users/*/auth_tokens"):
            try requireAPIKey(r)
            guard try store.user(uid: parts[2]) != nil else { throw ServerError.uidNotFound(parts[2]) }
            return ok(DeletedBody(success: true, deleted: try store.deleteAuthTokens(uid: parts[2])))
        case route("DELETE", "v3/users/*/auth_tokens/*"):
            try requireAPIKey(r)
            guard try store.deleteAuthToken(uid: parts[2], token: parts[4]) else {
                throw ServerError(404, "ERR_AUTH_TOKEN_NOT_FOUND", "No such auth token for '\(parts[2])'.")
            }
            return ok(DeletedBody(success: true, deleted: 1))
        case route("POST", "v3/sdk/login"):
            return try login(r)
        case route("GET", "v3/me"):
            return ok(try requireUser(r))
        case route("POST", "v3.0/call_tokens"):
            try requireAppID(r)
            struct Body: Decodable { var sessionId: String; var uid: String?; var role: String? }
            let b: Body = try decode(r)
            let uid: String
            var role: String?
            if r.header("apikey") != nil {
                // The operator (your backend) issues tokens for any user, optionally with a role.
                try requireAPIKey(r)
                guard let u = b.uid else { throw ServerError.badRequest("uid is required with the apikey.") }
                guard try store.user(uid: u) != nil else { throw ServerError.uidNotFound(u) }
                guard b.role == nil || b.role.flatMap(ParticipantRole.init(rawValue:)) != nil else {
                    throw ServerError.badRequest("role must be moderator or participant.")
                }
                uid = u
                role = b.role
            } else {
                uid = try requireUser(r).uid
                guard b.role == nil else { throw ServerError(403, "ERR_ROLE_NOT_ALLOWED", "Only the operator (apikey) may grant a role.") }
            }
            try validate(sessionId: b.sessionId)
            let now = Int64(Date().timeIntervalSince1970)
            let token = signer.sign(CallTokenClaims(app: keys.appId, sub: uid, sid: b.sessionId, iat: now,
                                                    exp: now + config.callTokenTTLSeconds, role: role))
            return ok(["token": token])
        case route("GET", "v3/calls"):
            var f = try callFilter(r)
            f.visibleTo = try callViewer(r)
            let (page, perPage) = try paging(r)
            let p = try store.calls(f, page: page, perPage: perPage)
            return list(p.items.map { CallRecord($0) }, p)
        case route("GET", "v3/calls/*/transcriptions"):
            let viewer = try callViewer(r)
            guard let call = try store.latestCall(sessionId: parts[2]),
                  viewer == nil || call.participants.contains(where: { $0.uid == viewer }) else {
                throw ServerError.sessionNotFound(parts[2])
            }
            let page = try intParam(r, "page", default: 1, range: 1...1_000_000)
            let perPage = try intParam(r, "perPage", default: 100, range: 1...1000)
            let p = try store.transcripts(sessionId: parts[2], page: page, perPage: perPage)
            return list(p.items, p)
        case route("GET", "v3/calls/*/messages"):
            let viewer = try callViewer(r)
            guard let call = try store.latestCall(sessionId: parts[2]),
                  viewer == nil || call.participants.contains(where: { $0.uid == viewer }) else {
                throw ServerError.sessionNotFound(parts[2])
            }
            let (page, perPage) = try paging(r)
            let p = try store.chatMessages(sessionId: parts[2], page: page, perPage: perPage)
            return list(p.items, p)
        case route("GET", "v3/calls/*"):
            let viewer = try callViewer(r)
            guard let call = try store.latestCall(sessionId: parts[2]),
                  viewer == nil || call.participants.contains(where: { $0.uid == viewer }) else {
                throw ServerError.sessionNotFound(parts[2])
            }
            return ok(CallRecord(call))
        default:
            let known = ["healthz", "v3/app", "v3/users", "v3/users/*", "v3/users/*/auth_tokens", "v3/users/*/auth_tokens/*",
                         "v3/sdk/login", "v3/me", "v3.0/call_tokens", "v3/calls", "v3/calls/*", "v3/calls/*/messages", "v3/calls/*/transcriptions"]
            if known.contains(where: { p in ["GET", "POST", "PUT", "DELETE"].contains { m in route(m, p) } || matches(parts, p) }) { throw ServerError(405, "ERR_METHOD_NOT_ALLOWED", "\(r.method) is not allowed on \(r.path).") }
            throw ServerError(404, "ERR_NOT_FOUND", "No endpoint \(r.method) \(r.path).")
        }
    }

    private func matches(_ parts: [String], _ pattern: String) -> Bool {
        let pat = pattern.split(separator: "/").map(String.init)
        return pat.count == parts.count && zip(pat, parts).allSatisfy { $0 == "*" || $0 == $1 }
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

    func requireAPIKey(_ r: HTTPRequest) throws {
        guard let k = r.header("apikey"), !k.isEmpty else { throw ServerError.emptyAPIKey }
        guard Crypto.constantTimeEqual(Array(k.utf8), Array(keys.apiKey.utf8)) else { throw ServerError.apiKeyNotFound }
    }

    func requireAppID(_ r: HTTPRequest) throws {
        guard let a = r.header("appid"), !a.isEmpty else { throw ServerError.emptyAppID }
        guard a == keys.appId else { throw ServerError.appIDMismatch }
    }

    func requireUser(_ r: HTTPRequest) throws -> StoredUser {
        guard let t = r.header("authtoken"), !t.isEmpty else { throw ServerError.emptyAuthToken }
        guard let u = try store.user(authToken: t) else { throw ServerError.authTokenNotFound }
        return u
    }

    func validate(uid: String) throws {
        guard Self.isIdentifier(uid, max: 100) else {
            throw ServerError(400, "ERR_UID_INVALID", "A uid is 1–100 characters of letters, digits, '_', '-', '.', '@'.")
        }
    }

    func validate(sessionId: String) throws {
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

    func clean(_ s: String?) -> String? {
        guard let t = s?.trimmingCharacters(in: .whitespacesAndNewlines), !t.isEmpty else { return nil }
        return String(t.prefix(100))
    }

    func decode<T: Decodable>(_ r: HTTPRequest) throws -> T {
        guard !r.body.isEmpty else { throw ServerError.badRequest("A JSON body is required.") }
        do { return try JSONDecoder().decode(T.self, from: Data(r.body)) } catch {
            throw ServerError.badRequest("The body is not valid JSON with the required fields.")
        }
    }

    func ok<T: Encodable>(_ data: T) -> HTTPResponse {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? enc.encode(["data": data])) ?? Data("{}".utf8)
        return HTTPResponse(status: 200, contentType: "application/json", body: Array(body))
    }
}

