import CallsCore
import CallsSecurity
import CallsStore
import CallsTransport
import Foundation

/// Sends FCM HTTP v1 data messages (`POST /v1/projects/<project>/messages:send`) with an OAuth
/// access token that it gets from the service account's `token_uri` by the JWT-bearer grant
/// (an RS256 assertion: `iss` the service account, `scope` firebase.messaging, `aud` the token
/// URI, one hour), kept until a minute before it expires. Answers as FCM documents them:
/// `UNREGISTERED` purges the token, 401 gets a new access token and retries once, 429 and 5xx
/// back off (honouring `Retry-After`).
///
/// Thread rules: the push sender's thread only (it owns the libcurl handle and the token).
final class FCMProvider: PushProvider {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private let config: FCMConfig
    private let account: ServiceAccount
    private let client: CurlClient
    private let log: ServerLog
    private var accessToken: String?
    private var accessTokenExpiresAt: Int64 = 0
    /// Access tokens obtained so far (for tests and the log).
    private(set) var tokensFetched = 0

    init(config: FCMConfig, account: ServiceAccount, log: ServerLog) throws(CurlError) {
        self.config = config
        self.account = account
        self.log = log
        client = try CurlClient(caFile: config.caFile, version: .http2OverTLS)
    }

    func send(_ push: StoredPush, now: Int64) -> PushOutcome {
        var outcome = attempt(push, now: now, fresh: false)
        if case .retry(401, _, _) = outcome { outcome = attempt(push, now: now, fresh: true) }
        return outcome
    }

    private func attempt(_ push: StoredPush, now: Int64, fresh: Bool) -> PushOutcome {
        if fresh || accessToken == nil || now >= accessTokenExpiresAt {
            if let failure = fetchAccessToken(now: now) { return failure }
        }
        guard let accessToken else { return .retry(status: nil, reason: "no access token", afterMs: nil) }
        let url = "\(config.endpoint)/v1/projects/\(account.projectId)/messages:send"
        let headers = ["authorization: Bearer \(accessToken)", "content-type: application/json; charset=utf-8"]
        switch client.post(url, headers: headers, body: Array(push.body.utf8), timeoutMs: 5000) {
        case .failure(let e):
            return .retry(status: nil, reason: e.description, afterMs: nil)
        case .success(let r):
            let obj = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
            if r.status == 200 { return .sent(status: 200, providerId: obj?["name"] as? String) }
            let error = obj?["error"] as? [String: Any]
            let details = (error?["details"] as? [[String: Any]]) ?? []
            let code = details.compactMap { $0["errorCode"] as? String }.first ?? (error?["status"] as? String) ?? "HTTP \(r.status)"
            let retryAfter = r.headers["retry-after"].flatMap { Int64($0) }.map { $0 * 1000 }
            switch (r.status, code) {
            case (_, "UNREGISTERED"): return .failed(status: r.status, reason: code, purgeToken: true)
            case (401, _):
                self.accessToken = nil
                return .retry(status: 401, reason: code, afterMs: nil)
            case (429, _), (500..., _): return .retry(status: r.status, reason: code, afterMs: retryAfter)
            default: return .failed(status: r.status, reason: code, purgeToken: false)
            }
        }
    }

    /// The JWT-bearer exchange; nil on success, else what to record for the push.
    private func fetchAccessToken(now: Int64) -> PushOutcome? {
        struct Claims: Encodable { var iss: String; var scope: String; var aud: String; var iat: Int64; var exp: Int64 }
        let iat = now / 1000
        let assertion: String
        do {
            var header: [String: String] = [:]
            if let kid = account.privateKeyId { header["kid"] = kid }
            assertion = try account.signer.sign(header: header, claims: Claims(iss: account.clientEmail, scope: Self.scope,
                                                                              aud: account.tokenURI, iat: iat, exp: iat + 3600))
        } catch {
            return .failed(status: nil, reason: "cannot sign the OAuth assertion: \(error)", purgeToken: false)
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        switch client.post(account.tokenURI, headers: ["content-type: application/x-www-form-urlencoded"], body: Array(form.utf8), timeoutMs: 5000) {
        case .failure(let e):
            return .retry(status: nil, reason: "OAuth: \(e.description)", afterMs: nil)
        case .success(let r):
            let obj = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
            guard r.status == 200, let token = obj?["access_token"] as? String else {
                let why = (obj?["error_description"] as? String) ?? (obj?["error"] as? String) ?? "HTTP \(r.status)"
                log.error("FCM OAuth token refused", ["status": "\(r.status)", "error": why, "account": account.clientEmail])
                return r.status >= 500 || r.status == 429 ? .retry(status: r.status, reason: "OAuth: \(why)", afterMs: nil)
                    : .failed(status: r.status, reason: "OAuth: \(why)", purgeToken: false)
            }
            let lifetime = (obj?["expires_in"] as? Int).map(Int64.init) ?? 3600
            accessToken = token
            accessTokenExpiresAt = now + max(60, lifetime - 60) * 1000
            tokensFetched += 1
            return nil
        }
    }
}
