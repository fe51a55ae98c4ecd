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

    /// What the page is sent with: only this server's own script and style run in it (no inline
    /// code, nothing from elsewhere), it connects only back here (the REST redeem and the
    /// signalling WebSocket), its type is not sniffed, it is not framed, and the link (a grant)
    /// does not leak to other sites.
    static let securityHeaders: [(name: String, value: String)] = [
        ("content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
            + "media-src 'self' blob: mediastream:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ]

    /// The page: which call and how many are in it now (never who: anyone with the link reads
    /// it); with an invite, the browser's way in (`/web/call.js`: name, devices, preview, then
    /// the call); and how to join from a terminal or the app. `iceServers` is the JSON the page
    /// hands `RTCPeerConnection` (a TURN server, when the operator runs one).
    static func html(sessionId: String, publicURL: String, present: Int, status: String?, invite: String? = nil,
                     appId: String = "", iceServers: String = "[]") -> String {
        let sid = escape(sessionId)
        let link = escape(link(publicURL: publicURL, sessionId: sessionId))
        let who = present == 0 ? "Nobody is in the call right now."
            : present == 1 ? "One person is in the call now." : "\(present) people are in the call now."
        let state = status.map { " Status: \(escape($0))." } ?? ""
        let terminal = invite.map { "<pre>callroom join '\(link)?invite=\(escape($0))' --name YOUR_NAME</pre><p>This invite lets you in as a guest: no account, just a name.</p>" }
            ?? "<pre>callroom join \(link) --uid YOUR_UID --auth-token TOKEN</pre><p>With an account of this app (your backend gives you the auth token).</p>"
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="light dark">
            <title>Join \(sid) · CallRoom</title><link rel="stylesheet" href="/web/call.css"></head>
            <body data-session="\(sid)" data-invite="\(escape(invite ?? ""))" data-app-id="\(escape(appId))" data-ice-servers="\(escape(iceServers))">
            <main id="prejoin">
            <h1>Join the call \(sid)</h1>
            <p>\(who)\(state)</p>
            <div id="notice" class="notice hidden" role="status" aria-live="polite"></div>
            <div class="prejoin">
            <div class="preview card"><video id="preview-video" class="hidden" autoplay muted playsinline></video>
            <div id="preview-placeholder" class="placeholder">Camera preview</div></div>
            <div class="card">
            <label for="name">Your name</label><input id="name" type="text" maxlength="80" autocomplete="name" placeholder="How the others see you">
            <label for="mic">Microphone</label><select id="mic"></select>
            <div class="meter" aria-label="Microphone level"><div id="meter-level"></div></div>
            <label for="camera">Camera</label><select id="camera"></select>
            <p id="camera-note" class="status"></p>
            <div class="actions"><button id="join" class="primary">Join</button><button id="join-audio">Join with audio only</button></div>
            </div></div>
            <details><summary>Join from a terminal or the app instead</summary>
            \(terminal)
            <p><a href="callroom://call/\(sid)">Open in CallRoom</a> · <a href="\(link)">\(link)</a></p>
            </details>
            </main>
            <div id="call" class="call hidden">
            <div id="indicators" class="indicators hidden" role="status" aria-live="polite"></div>
            <div id="shares" class="shares hidden" aria-label="Shared terminals"></div>
            <div class="stage"><div id="tiles" class="tiles" aria-label="Participants"></div>
            <aside id="side" class="side hidden">
            <section id="people-panel"><header><strong id="count"></strong><button data-close aria-label="Close">✕</button></header><div id="host-controls" class="host-controls hidden"></div><ul id="people"></ul></section>
            <section id="chat-panel" class="hidden"><header><strong>Chat</strong><button data-close aria-label="Close">✕</button></header>
            <ul id="messages"></ul><form id="chat-form"><input id="chat-text" type="text" maxlength="2000" aria-label="Message"><button class="primary">Send</button></form></section>
            </aside></div>
            <div id="captions" class="captions hidden" aria-label="Captions"></div><div id="captions-read" class="sr-only" aria-live="polite"></div>
            <div id="status" class="status" role="status" aria-live="polite"></div>
            <nav class="bar"><button id="mute" aria-pressed="false">Mute</button><button id="camera-toggle">Camera off</button><button id="share-screen" class="hidden" aria-pressed="false">Share screen</button>
            <button id="hand" aria-pressed="false">Raise hand</button><button id="cc" class="hidden">Hide captions</button><button id="panel-chat">Chat</button><button id="panel-people">People</button>
            <button id="copy-link">Copy invite link</button><button id="lock" class="hidden">Lock room</button><button id="leave" class="danger">Leave</button></nav>
            </div>
            <main id="ended" class="hidden"><h1 id="ended-text"></h1><p><a href="">Join again</a></p></main>
            <script src="/web/call.js"></script>
            </body></html>
            """
    }

    /// The page's own files (Resources/web), by name, with their types.
    static let assets: [String: String] = ["call.js": "text/javascript; charset=utf-8", "call.css": "text/css; charset=utf-8"]

    /// An asset's bytes (read once from the bundle), or nil for any other name.
    static func asset(_ name: String) -> [UInt8]? {
        guard assets[name] != nil else { return nil }
        return loadedAssets[name]
    }

    private static let loadedAssets: [String: [UInt8]] = {
        var out: [String: [UInt8]] = [:]
        for name in assets.keys {
            let parts = name.split(separator: ".")
            if let url = Bundle.module.url(forResource: String(parts[0]), withExtension: String(parts[1]), subdirectory: "web"),
               let data = try? Data(contentsOf: url) {
                out[name] = Array(data)
            }
        }
        return out
    }()

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
