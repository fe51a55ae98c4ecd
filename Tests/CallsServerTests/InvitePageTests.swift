@testable import CallsServer
import CallRoomTestSupport
import Foundation
import XCTest

/// The invite page and the app-link files over real HTTP.
final class InvitePageTests: XCTestCase {
    /// (#34: it named everyone in the call to anyone who knew the session id; now a count.)
    func testTheInvitePageNamesTheCallButNotWhoIsInIt() throws {
        let h = try ServerHarness {
            $0.publicURL = "https://calls.example.com"
            $0.appleAppIDs = ["TEAM.com.example.calls"]
            $0.androidApps = [AndroidApp(name: "com.example.calls", fingerprints: ["AB:CD"])]
        }
        defer { h.stop(); h.removeData() }
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: try h.callToken(uid: "mallory", session: "standup"), displayName: "<script>alert(1)</script> & co")))
        XCTAssertEqual(p.joined()?.inviteLink, "https://calls.example.com/call/standup", "joined carries the public link for the invite button")
        let page = BlockingHTTP.request("GET", h.server.url + "/call/standup")
        XCTAssertEqual(page.status, 200)
        let html = page.text
        XCTAssertTrue(html.contains("Join the call standup"), html)
        XCTAssertTrue(html.contains("One person is in the call now."), html)
        XCTAssertFalse(html.contains("alert(1)") || html.contains("mallory"), "no names to someone not authenticated: \(html)")
        XCTAssertFalse(html.contains("<script>"), "no inline script")
        XCTAssertEqual(page.headers["x-content-type-options"], "nosniff")
        XCTAssertTrue(page.headers["content-security-policy"]?.contains("default-src 'none'") == true, "\(page.headers)")
        XCTAssertEqual(page.headers["referrer-policy"], "no-referrer")
        XCTAssertFalse(html.contains("auth-key"), "the page never asks for the shared key")
        let invited = BlockingHTTP.request("GET", h.server.url + "/call/standup?invite=aa.bb-cc_dd").text
        XCTAssertTrue(invited.contains("callroom join 'https://calls.example.com/call/standup?invite=aa.bb-cc_dd' --name YOUR_NAME"), invited)
        let hostile = BlockingHTTP.request("GET", h.server.url + "/call/standup?invite=%3Cscript%3E").text
        XCTAssertEqual(hostile.components(separatedBy: "<script").count, 2, "only a grant's characters come back: the page's own script is the one tag")
        XCTAssertTrue(hostile.contains(#"<script src="/web/call.js"></script>"#) && hostile.contains(#"data-invite="""#), hostile)
        // The browser's way in: its own script and style, nothing inline, nothing from elsewhere.
        XCTAssertTrue(invited.contains(#"data-invite="aa.bb-cc_dd""#) && invited.contains(#"<link rel="stylesheet" href="/web/call.css">"#))
        let csp = page.headers["content-security-policy"] ?? ""
        XCTAssertTrue(csp.contains("script-src 'self'") && csp.contains("connect-src 'self'") && !csp.contains("unsafe"), csp)
        let script = BlockingHTTP.request("GET", h.server.url + "/web/call.js")
        XCTAssertEqual(script.status, 200)
        XCTAssertTrue(script.headers["content-type"]?.hasPrefix("text/javascript") == true && script.text.contains("webrtcOffer"))
        XCTAssertEqual(BlockingHTTP.request("GET", h.server.url + "/web/call.css").status, 200)
        // One cache-control each, its own: the server's default no-store stood beside the
        // script's no-cache (two that contradict), and twice on the page.
        for (path, want) in [("/call/standup", "no-store"), ("/web/call.js", "no-cache")] {
            let (raw, _) = RawHTTP.exchange(port: h.server.port, Array("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            let head = raw.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
            let values = head.filter { $0.lowercased().hasPrefix("cache-control:") }.map { $0.dropFirst("cache-control:".count).trimmingCharacters(in: .whitespaces) }
            XCTAssertEqual(values, [want], "\(path): \(head)")
        }
        XCTAssertEqual(BlockingHTTP.request("GET", h.server.url + "/web/..%2Fkeys.json").status, 404, "only the page's own files")
        XCTAssertTrue(html.contains("callroom join https://calls.example.com/call/standup"), "the public link, not loopback")
        XCTAssertTrue(html.contains(#"href="callroom://call/standup""#))
        XCTAssertEqual(h.request("GET", "/v3/app").data["publicURL"] as? String, "https://calls.example.com")
        p.send(.leave)
        XCTAssertTrue(p.waitClosed())
        XCTAssertTrue(BlockingHTTP.request("GET", h.server.url + "/call/standup").text.contains("Nobody is in the call"))
        XCTAssertEqual(BlockingHTTP.request("GET", h.server.url + "/call/bad%20id!").status, 400)

        let aasa = h.request("GET", "/.well-known/apple-app-site-association")
        XCTAssertEqual(aasa.status, 200)
        let details = ((aasa.json["applinks"] as? [String: Any])?["details"] as? [[String: Any]])?.first
        XCTAssertEqual(details?["appIDs"] as? [String], ["TEAM.com.example.calls"])
        XCTAssertEqual((details?["components"] as? [[String: String]])?.first?["/"], "/call/*")
        let links = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(BlockingHTTP.request("GET", h.server.url + "/.well-known/assetlinks.json").text.utf8)) as? [[String: Any]])
        XCTAssertEqual((links.first?["target"] as? [String: Any])?["package_name"] as? String, "com.example.calls")
    }

    /// `mediaPublicAddress`: clients are told where to send media instead of guessing the signalling host.
    func testJoinedAdvertisesTheMediaPublicAddress() throws {
        let h = try ServerHarness { $0.mediaPublicAddress = "203.0.113.9:40000" }
        defer { h.stop(); h.removeData() }
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: try h.callToken(uid: "ann", session: "nat"))))
        let j = try XCTUnwrap(p.joined())
        XCTAssertEqual(j.mediaHost, "203.0.113.9")
        XCTAssertEqual(j.mediaPort, 40000)
        let plain = try ServerHarness()
        defer { plain.stop(); plain.removeData() }
        let q = try SignalProbe(url: plain.server.url)
        q.send(.join(.init(callToken: try plain.callToken(uid: "ann", session: "lan"))))
        XCTAssertNil(try XCTUnwrap(q.joined()).mediaHost, "not configured: the client uses the signalling host")
        var bad = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: plain.dir + "-bad")
        bad.mediaPublicAddress = "not a host/x"
        XCTAssertThrowsError(try CallServer(configuration: bad).start()) { XCTAssertTrue("\($0)".contains("mediaPublicAddress")) }
    }
}
