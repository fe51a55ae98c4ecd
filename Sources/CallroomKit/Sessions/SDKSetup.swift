import CallsCore
import CallsTransport
import CometChatCallsSDK
import Foundation

/// Initialises the SDK and logs in the way `callroom join` and `callroom demo` need:
/// through the documented public API only.
package enum SDKSetup {
    /// A server as the user gave it (`host:port` or a URL): `http://` when no scheme is given;
    /// nil when it names no host, another scheme than `http`/`https`, or a user (`mailto:x@y`
    /// would otherwise read as `http://mailto:x@y`).
    package static func serverURL(_ given: String) -> URL? {
        guard let url = URL(string: given.contains("://") ? given : "http://" + given), url.host != nil, url.user == nil,
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        return url
    }

    package struct Options: Sendable {
        package var server: String?
        package var settingsFile: String?
        package var appID: String?
        package var uid: String
        package var name: String?
        package var authKey: String?
        package var authToken: String?
        /// An invite link's grant: without a key or token, joining as a guest (no login).
        package var invite: String? = nil
        /// `--ca-file` / `--insecure` for an https:// server.
        package var caFile: String? = nil
        package var insecure = false
        package var trust: TLSTrust { TLSTrust(caFile: caFile, insecure: insecure) }

        /// Reads `--ca-file FILE` and `--insecure` (the scanner must know both), and refuses a
        /// `--server` that is no http(s) URL as bad usage (exit 2) before anything connects.
        package mutating func readConnection(_ args: ArgumentScanner) {
            if let s = server, serverURL(s) == nil {
                Console.fail("--server \(s) is not a server URL (http://HOST:PORT or https://HOST[:PORT])")
            }
            caFile = args["ca-file"]
            insecure = args.has("insecure")
            if let f = caFile, !FileManager.default.isReadableFile(atPath: f) { Console.fail("--ca-file \(f) cannot be read") }
        }
    }

    /// `session` when the server would take it as a session id; otherwise the command stops (exit
    /// 2) saying why — before it looks for a terminal or a server. (The id is quoted with its
    /// control characters escaped: it may come from someone else's link.)
    package static func requireSessionID(_ session: String) -> String {
        guard WireIdentifier.isValid(session, max: WireIdentifier.sessionIDMax) else {
            Console.fail("\(session.debugDescription) is not a session id: 1–\(WireIdentifier.sessionIDMax) characters of \(WireIdentifier.characters)")
        }
        return session
    }

    /// `--name NAME`: nil when not given; a blank name is bad usage (exit 2).
    package static func displayName(_ args: ArgumentScanner) -> String? {
        guard let name = args["name"] else { return nil }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { Console.fail("--name must not be empty") }
        return name
    }

    /// The two TLS options every command that talks to a server takes.
    package static let tlsUsage = """
          --ca-file FILE       trust the CAs in this PEM file for an https:// server (e.g. a
                               development server's DATA_DIR/tls/cert.pem); default: the system's
          --insecure           do not check an https:// server's certificate (test servers only)
        """

    /// Reads the server's public app id (`GET /v3/app`) when the user did not give one.
    package static func fetchAppID(server: URL, trust: TLSTrust = .system) async throws(CometChatCallException) -> String {
        struct App: Decodable, Sendable { var appId: String }
        return try await RESTClient(baseURL: server, appID: "", trust: trust).call("GET", "/v3/app", as: App.self).appId
    }

    /// A call token with the moderator role for `uid`, issued by the operator (`apikey`):
    /// what a backend does for a meeting's host. The user must exist (log in first).
    package static func moderatorToken(server: String, apiKey: String, appID: String, uid: String, sessionID: String,
                               trust: TLSTrust = .system) async throws(CometChatCallException) -> String {
        struct Token: Decodable, Sendable { var token: String }
        guard let url = URL(string: server) else {
            throw CometChatCallException(errorCode: "HOST_INVALID", errorDescription: "'\(server)' is not a server URL")
        }
        return try await RESTClient(baseURL: url, appID: appID, trust: trust).call(
            "POST", "/v3.0/call_tokens", headers: ["apikey": apiKey],
            body: ["sessionId": sessionID, "uid": uid, "role": ParticipantRole.moderator.rawValue], as: Token.self).token
    }

    package static func initAndLogin(_ o: Options) async throws(CometChatCallException) -> CallsUser {
        if let file = o.settingsFile {
            try CometChatCalls.initFromSettings(path: file)
        } else {
            guard let url = serverURL(o.server ?? "") else {
                throw CometChatCallException(errorCode: "HOST_INVALID", errorDescription: "'\(o.server ?? "")' is not a server URL")
            }
            let appID: String
            if let a = o.appID { appID = a } else { appID = try await fetchAppID(server: url, trust: o.trust) }
            try CometChatCalls.initialize(CallAppSettingsBuilder().set(appID: appID).set(region: "local").set(host: url.absoluteString)
                .set(caFile: o.caFile).set(insecureTLS: o.insecure).build())
        }
        if let token = o.authToken { return try await CometChatCalls.login(authToken: token) }
        // A guest with an invite logs in as nobody: redeeming the invite makes them its guest.
        if o.invite != nil && o.authKey == nil { return CallsUser(uid: "", name: o.name ?? "", status: "guest", authToken: "") }
        guard let key = o.authKey else {
            throw CometChatCallException(errorCode: "AUTH_TOKEN_ERROR", errorDescription: "give --auth-key or --auth-token")
        }
        let user = try await CometChatCalls.login(UID: o.uid, authKey: key)
        return user
    }
}
