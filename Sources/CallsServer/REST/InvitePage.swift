import CallsCore
import Foundation

/// An Android app that opens `/call/*` links: its package and signing-certificate SHA-256s.
public struct AndroidApp: Sendable, Equatable {
    public var name: String
    public var fingerprints: [String]
    public init(name: String, fingerprints: [String]) { self.name = name; self.fingerprints = fingerprints }
}

/// The invite link's page and the app-link files (issue #14): what `GET /call/{sessionId}`,
/// `/.well-known/apple-app-site-association` and `/.well-known/assetlinks.json` answer. Plain
/// HTML (no script), every value escaped. A value; any thread.
struct InvitePage {
    /// `&`, `<`, `>`, `"` and `'` as entities: nothing a name contains can become markup.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    /// `PUBLIC_URL/call/SESSION` (the session id percent-encoded as a path segment).
    static func link(publicURL: String, sessionId: String) -> String {
        publicURL + "/call/" + (sessionId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? sessionId)
    }

    /// What the page is sent with: no script, style, frame or form of anyone's runs in it, its
    /// type is not sniffed, and the link (a session id) does not leak to other sites.
    static let securityHeaders: [(name: String, value: String)] = [
        ("content-security-policy", "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
    ]

    /// The page: which call, how many are in it now (never who: anyone with the link reads it),
    /// and how to join from a terminal or the app.
    static func html(sessionId: String, publicURL: String, present: Int, status: String?, invite: String? = nil) -> String {
        let sid = escape(sessionId)
        let link = escape(link(publicURL: publicURL, sessionId: sessionId))
        let who = present == 0 ? "<p>Nobody is in the call right now.</p>"
            : present == 1 ? "<p>One person is in the call now.</p>" : "<p>\(present) people are in the call now.</p>"
        let state = status.map { "<p>Status: \(escape($0))</p>" } ?? ""
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Join \(sid) · CallRoom</title></head>
            <body>
            <h1>Join the call \(sid)</h1>
            \(state)\(who)
            <h2>From a terminal</h2>
            \(invite.map { "<pre>callroom join '\(link)?invite=\(escape($0))' --name YOUR_NAME</pre><p>This invite lets you in as a guest: no account, just a name.</p>" }
                ?? "<pre>callroom join \(link) --uid YOUR_UID --auth-token TOKEN</pre><p>With an account of this app (your backend gives you the auth token).</p>")
            <h2>From the app</h2>
            <p><a href="callroom://call/\(escape(sessionId))">Open in CallRoom</a> · <a href="\(link)">\(link)</a></p>
            </body></html>
            """
    }

    /// `apple-app-site-association`: the apps that open `/call/*` links.
    static func appleAppSiteAssociation(appIDs: [String]) -> String {
        let details = appIDs.map { ["appIDs": [$0], "components": [["/": "/call/*"]]] as [String: Any] }
        let o: [String: Any] = ["applinks": ["details": details]]
        return String(decoding: (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8),
                      as: UTF8.self)
    }

    /// `assetlinks.json`: the Android apps (package, certificate fingerprints) that open them.
    static func assetLinks(packages: [AndroidApp]) -> String {
        let list = packages.map { p -> [String: Any] in
            ["relation": ["delegate_permission/common.handle_all_urls"],
             "target": ["namespace": "android_app", "package_name": p.name, "sha256_cert_fingerprints": p.fingerprints]]
        }
        return String(decoding: (try? JSONSerialization.data(withJSONObject: list, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("[]".utf8),
                      as: UTF8.self)
    }
}
