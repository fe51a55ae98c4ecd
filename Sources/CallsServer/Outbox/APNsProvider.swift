import CallsCore
import CallsSecurity
import CallsStore
import CallsTransport
import Foundation

/// The APNs provider token: an ES256 JWT (`kid` key id, `iss` team id, `iat`) reused for 50
/// minutes (Apple refuses tokens older than an hour and throttles new ones more often than
/// every 20 minutes), or made anew when APNs says it expired. A value; no clock of its own.
struct APNsProviderToken: Sendable {
    static let refreshAfterSeconds: Int64 = 50 * 60
    let keyId: String
    let teamId: String
    private(set) var jwt: String?
    private(set) var issuedAt: Int64 = 0

    init(keyId: String, teamId: String) {
        self.keyId = keyId
        self.teamId = teamId
    }

    /// The token to send at `now` (seconds), signing a new one when none is fresh.
    mutating func current(now: Int64, signer: JWTSigner) throws(SigningKeyError) -> String {
        if let jwt, now - issuedAt < Self.refreshAfterSeconds, now >= issuedAt { return jwt }
        return try renew(now: now, signer: signer)
    }

    mutating func renew(now: Int64, signer: JWTSigner) throws(SigningKeyError) -> String {
        struct Claims: Encodable { var iss: String; var iat: Int64 }
        let t = try signer.sign(header: ["kid": keyId], claims: Claims(iss: teamId, iat: now))
        jwt = t
        issuedAt = now
        return t
    }
}

/// Sends VoIP pushes through APNs over HTTP/2 (libcurl): `POST /3/device/<token>` with the
/// provider token, `apns-topic: <bundle>.voip`, `apns-push-type: voip`, `apns-priority: 10`,
/// `apns-expiration` (the push's expiry) and `apns-id`. Answers as Apple documents them:
/// 410 `Unregistered` and 400 `BadDeviceToken` purge the token, 403 `ExpiredProviderToken`
/// signs a new provider token and retries once, 429 and 5xx back off.
///
/// Thread rules: the push sender's thread only (it owns the libcurl handle and the token).
final class APNsProvider: PushProvider {
    /// Apple's limit for a VoIP payload is 5 KB; this server keeps to 4 KB (calls-api.md §9).
    static let maxPayloadBytes = 4096

    private let config: APNsConfig
    private let signer: JWTSigner
    private let client: CurlClient
    private var token: APNsProviderToken
    private let log: ServerLog
    /// Provider tokens signed so far (for tests and the log).
    private(set) var tokensSigned = 0

    init(config: APNsConfig, signer: JWTSigner, log: ServerLog) throws(CurlError) {
        self.config = config
        self.signer = signer
        self.log = log
        client = try CurlClient(caFile: config.caFile, version: .http2Required)
        token = APNsProviderToken(keyId: config.keyId, teamId: config.teamId)
    }

    /// Loads the `.p8` key (refusing one readable by others).
    static func signer(_ config: APNsConfig) throws(PushKeyError) -> JWTSigner {
        let pem = try PushKeyError.readPrivate(config.keyFile, what: "APNs key file")
        do { return try JWTSigner(pem: pem, algorithm: .es256) } catch {
            throw PushKeyError(message: "APNs key file \(config.keyFile) is not a .p8 key (\(error))")
        }
    }

    func send(_ push: StoredPush, now: Int64) -> PushOutcome {
        guard push.body.utf8.count <= Self.maxPayloadBytes else {
            log.warn("push not sent: payload too large", ["push": push.pushId, "bytes": "\(push.body.utf8.count)"])
            return .failed(status: nil, reason: "PayloadTooLarge (not sent: \(push.body.utf8.count) bytes > \(Self.maxPayloadBytes))", purgeToken: false)
        }
        guard let topic = push.topic else { return .failed(status: nil, reason: "no topic (token registered without a bundle id)", purgeToken: false) }
        var outcome = attempt(push, topic: topic, now: now, renew: false)
        if case .retry(403, "ExpiredProviderToken", _) = outcome {
            outcome = attempt(push, topic: topic, now: now, renew: true)
        }
        return outcome
    }

    private func attempt(_ push: StoredPush, topic: String, now: Int64, renew: Bool) -> PushOutcome {
        let jwt: String
        do {
            let before = token.issuedAt
            jwt = renew ? try token.renew(now: now / 1000, signer: signer) : try token.current(now: now / 1000, signer: signer)
            if token.issuedAt != before { tokensSigned += 1 }
        } catch {
            return .failed(status: nil, reason: "cannot sign the provider token: \(error)", purgeToken: false)
        }
        let headers = [
            "authorization: bearer \(jwt)",
            "apns-topic: \(topic)",
            "apns-push-type: voip",
            "apns-priority: 10",
            "apns-expiration: \(push.expiresAt / 1000)",
            "apns-id: \(push.pushId)",
            "content-type: application/json",
        ]
        switch client.post("\(config.endpoint)/3/device/\(push.token)", headers: headers, body: Array(push.body.utf8), timeoutMs: 5000) {
        case .failure(let e):
            return .retry(status: nil, reason: e.description, afterMs: nil)
        case .success(let r):
            if r.status == 200 { return .sent(status: 200, providerId: r.headers["apns-id"] ?? push.pushId) }
            let reason = ((try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any])?["reason"] as? String ?? "HTTP \(r.status)"
            switch (r.status, reason) {
            case (410, _), (400, "BadDeviceToken"): return .failed(status: r.status, reason: reason, purgeToken: true)
            case (403, "ExpiredProviderToken"): return .retry(status: 403, reason: reason, afterMs: nil)
            case (403, _):
                log.error("APNs refused the provider token", ["reason": reason, "key_id": config.keyId, "team_id": config.teamId])
                return .failed(status: 403, reason: reason, purgeToken: false)
            case (429, _), (500..., _): return .retry(status: r.status, reason: reason, afterMs: nil)
            default: return .failed(status: r.status, reason: reason, purgeToken: false)
            }
        }
    }
}
