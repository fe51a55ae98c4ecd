import Foundation

/// The claims of a CallRoom call token: a JWT (RFC 7519) signed with HS256, scoped to one
/// app, one user and one session, with an expiry.
public struct CallTokenClaims: Codable, Sendable, Equatable {
    /// App id (`app`).
    public var app: String
    /// User id (`sub`).
    public var sub: String
    /// Session id (`sid`).
    public var sid: String
    /// Issued at, seconds since the epoch.
    public var iat: Int64
    /// Expires at, seconds since the epoch.
    public var exp: Int64
    /// Optional role (`moderator`) granted to the holder.
    public var role: String?
    /// The token's own id (`jti`, 16 random bytes in hex): logs and revocation name it.
    public var jti: String?
    /// Who may accept it (`aud`): `callroom:<appId>`, the signalling of this app's server.
    public var aud: String?
    /// True on a token for a ringing call's room (`call_…`), minted once the server checked
    /// that `sub` is one of the call's parties; such a room admits no token without it.
    public var party: Bool?
    /// The id of the auth token that asked for it (`GET /v3/users/{uid}/auth_tokens`' `tokenId`):
    /// revoking that one auth token refuses this call token too. Absent on the operator's tokens.
    public var atid: String?
    /// The invite grant it was redeemed from (its id): revoking the invite refuses this token,
    /// and a removal keeps the grant out of the session too.
    public var gid: String?

    public init(app: String, sub: String, sid: String, iat: Int64, exp: Int64, role: String? = nil, jti: String? = nil, aud: String? = nil,
                party: Bool? = nil, atid: String? = nil, gid: String? = nil) {
        self.app = app
        self.sub = sub
        self.sid = sid
        self.iat = iat
        self.exp = exp
        self.role = role
        self.jti = jti
        self.aud = aud
        self.party = party
        self.atid = atid
        self.gid = gid
    }

    /// The audience of an invite grant (a link's `invite=`): it is never a call token.
    public static func inviteAudience(appId: String) -> String { "callroom-invite:" + appId }

    /// Ringing calls' rooms have ids with this prefix, and admit only the call's parties.
    public static let ringingSessionPrefix = "call_"

    /// The audience a server of app `appId` accepts.
    public static func audience(appId: String) -> String { "callroom:" + appId }
}

/// Why a call token was refused.
public enum CallTokenError: Error, Equatable, Sendable {
    case malformed
    case unsupportedAlgorithm
    case badSignature
    case expired
    /// Not meant for this server (`aud` missing or another's).
    case wrongAudience
}

/// Signs and verifies call tokens with one server secret. Immutable; safe from any thread.
public struct CallTokenSigner: Sendable {
    private let secret: [UInt8]

    public init(secret: [UInt8]) { self.secret = secret }

    private static let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))

    /// A signed compact JWT for `claims`.
    public func sign(_ claims: CallTokenClaims) -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = .sortedKeys
        let payload = Base64URL.encode(Array((try? enc.encode(claims)) ?? Data()))
        let input = Self.header + "." + payload
        let sig = Crypto.hmacSHA256(key: secret, message: Array(input.utf8))
        return input + "." + Base64URL.encode(sig)
    }

    /// Verifies the signature, expiry and (when given) audience, and returns the claims.
    public func verify(_ token: String, now: Int64 = Int64(Date().timeIntervalSince1970), audience: String? = nil) throws(CallTokenError) -> CallTokenClaims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(String(parts[0])),
              let payloadBytes = Base64URL.decode(String(parts[1])),
              let sig = Base64URL.decode(String(parts[2])) else { throw .malformed }
        struct Header: Decodable { var alg: String }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else { throw .malformed }
        guard header.alg == "HS256" else { throw .unsupportedAlgorithm }
        let expected = Crypto.hmacSHA256(key: secret, message: Array((parts[0] + "." + parts[1]).utf8))
        guard Crypto.constantTimeEqual(expected, sig) else { throw .badSignature }
        guard let claims = try? JSONDecoder().decode(CallTokenClaims.self, from: Data(payloadBytes)) else { throw .malformed }
        guard claims.exp > now else { throw .expired }
        if let audience, claims.aud != audience { throw .wrongAudience }
        return claims
    }
}
