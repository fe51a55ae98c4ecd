import CallRoomTestSupport
import CallsCore
import CallsSecurity
@testable import CallsServer
@testable import CallsStore
import CallsTransport
import CallsObjectStorage
import CallsCaptions
import XCTest

final class ConfigAndMetricsTests: XCTestCase {
    func testWebhookConfiguration() throws {
        let c = try ServerConfigFile.parse(Data(#"{"webhooks":[{"id":"a","url":"https://h/x","secret":"0123456789abcdef","triggers":["call_ended"]},{"url":"http://h/y","secret":"0123456789abcdefg"}],"webhookMaxAttempts":3}"#.utf8))
        XCTAssertEqual(c.webhooks, [WebhookConfig(id: "a", url: "https://h/x", secret: "0123456789abcdef", triggers: ["call_ended"]),
                                    WebhookConfig(id: "webhook-2", url: "http://h/y", secret: "0123456789abcdefg")])
        XCTAssertEqual(c.webhookMaxAttempts, 3)
        for (bad, why) in [(#"{"webhooks":{}}"#, "must be a list"), (#"{"webhooks":[{"url":"ftp://h","secret":"0123456789abcdef"}]}"#, "url must be"),
                           (#"{"webhooks":[{"url":"http://h","secret":"short"}]}"#, "at least 16"),
                           (#"{"webhooks":[{"url":"http://h","secret":"0123456789abcdef","triggers":["call_exploded"]}]}"#, "unknown trigger 'call_exploded'"),
                           (#"{"webhooks":[{"url":"http://h","secret":"0123456789abcdef","hdrs":1}]}"#, "unknown key 'hdrs'"),
                           (#"{"webhooks":[{"id":"x","url":"http://h","secret":"0123456789abcdef"},{"id":"x","url":"http://i","secret":"0123456789abcdef"}]}"#, "used twice")] {
            XCTAssertThrowsError(try ServerConfigFile.parse(Data(bad.utf8)), bad) {
                XCTAssertTrue(($0 as? ServerConfigFile.Invalid)?.message.contains(why) == true, "\($0)")
            }
        }
        // The delay before each retry doubles (jittered in its upper half) and stops growing at 60 s.
        XCTAssertEqual(WebhookDeliverer.backoffMs(afterAttempts: 1, random: 0), 500)
        XCTAssertEqual(WebhookDeliverer.backoffMs(afterAttempts: 1, random: 1), 1000)
        XCTAssertEqual(WebhookDeliverer.backoffMs(afterAttempts: 4, random: 1), 8000)
        XCTAssertEqual(WebhookDeliverer.backoffMs(afterAttempts: 30, random: 1), 60_000)
    }

    /// Browsers' media: the port, off, and the ICE servers the page hands its peer connection.
    func testWebRTCConfiguration() throws {
        let c = try ServerConfigFile.parse(Data(#"{"webrtcPort":7883,"webrtc":true,"webrtcIceServers":[{"urls":["turn:turn.example.com:3478?transport=udp","turns:turn.example.com:5349"],"username":"u","credential":"p"}]}"#.utf8))
        XCTAssertEqual(c.webrtcPort, 7883)
        XCTAssertEqual(c.webrtc, true)
        let servers = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(c.webrtcIceServers).utf8)) as? [[String: Any]])
        XCTAssertEqual(servers.first?["username"] as? String, "u")
        XCTAssertEqual(try ServerConfigFile.parse(Data(#"{"webrtc":false}"#.utf8)).webrtc, false)
        for bad in [#"{"webrtcIceServers":[{"urls":"http://x"}]}"#, #"{"webrtcIceServers":{"urls":"turn:x"}}"#,
                    #"{"webrtcIceServers":[{"urls":"turn:x","password":"p"}]}"#, #"{"webrtcPort":"7883"}"#] {
            XCTAssertThrowsError(try ServerConfigFile.parse(Data(bad.utf8)), bad)
        }
        XCTAssertEqual(ServerConfiguration(dataDir: "/tmp/x").webrtcPort, 0, "on by default, on a free port")
    }

    func testPushConfiguration() throws {
        let c = try ServerConfigFile.parse(Data(#"{"apns":{"keyFile":"/k.p8","keyId":"ABC123DEFG","teamId":"DEF123GHIJ","bundleId":"com.example.app","environment":"sandbox"},"fcm":{"serviceAccountFile":"/sa.json","endpoint":"https://127.0.0.1:9/"}}"#.utf8))
        XCTAssertEqual(c.apns, APNsConfig(keyFile: "/k.p8", keyId: "ABC123DEFG", teamId: "DEF123GHIJ", bundleId: "com.example.app", endpoint: APNsConfig.sandbox))
        XCTAssertEqual(c.fcm, FCMConfig(serviceAccountFile: "/sa.json", endpoint: "https://127.0.0.1:9"))
        XCTAssertEqual(try ServerConfigFile.parse(Data(#"{"apns":{"keyFile":"/k","keyId":"ABC123DEFG","teamId":"DEF123GHIJ"}}"#.utf8)).apns?.endpoint,
                       "https://api.push.apple.com", "production by default")
        for (bad, why) in [(#"{"apns":[]}"#, "'apns' must be an object"), (#"{"apns":{"keyFile":"/k","keyId":"short","teamId":"DEF123GHIJ"}}"#, "apns.keyId"),
                           (#"{"apns":{"keyId":"ABC123DEFG","teamId":"DEF123GHIJ"}}"#, "apns.keyFile"),
                           (#"{"apns":{"keyFile":"/k","keyId":"ABC123DEFG","teamId":"DEF123GHIJ","environment":"staging"}}"#, "production or sandbox"),
                           (#"{"apns":{"keyFile":"/k","keyId":"ABC123DEFG","teamId":"DEF123GHIJ","endpoint":"http://x"}}"#, "https://HOST"),
                           (#"{"apns":{"keyFile":"/k","keyId":"ABC123DEFG","teamId":"DEF123GHIJ","bundleId":"nodots"}}"#, "bundle id"),
                           (#"{"apns":{"keyFile":"/k","keyId":"ABC123DEFG","teamId":"DEF123GHIJ","cert":"x"}}"#, "unknown key 'cert'"),
                           (#"{"fcm":{}}"#, "serviceAccountFile")] {
            XCTAssertThrowsError(try ServerConfigFile.parse(Data(bad.utf8)), bad) {
                XCTAssertTrue(($0 as? ServerConfigFile.Invalid)?.message.contains(why) == true, "\($0)")
            }
        }
    }

    func testObjectStorageConfiguration() throws {
        let dir = TemporaryDirectory("callroom-s3-config")
        defer { dir.remove() }
        let secret = dir.file("secret")
        try "s3cr3t\n".write(toFile: secret, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        let c = try ServerConfigFile.parse(Data(#"{"objectStorage":{"endpoint":"https://s3.example.com/","bucket":"calls","region":"eu-west-1","accessKeyID":"AKID","secretAccessKeyFile":"\#(secret)","prefix":"node/"}}"#.utf8))
        XCTAssertEqual(c.objectStorage, ObjectStorageConfiguration(endpoint: "https://s3.example.com", bucket: "calls", region: "eu-west-1",
                                                                   accessKeyID: "AKID", secretAccessKey: "s3cr3t", prefix: "node/"))
        XCTAssertEqual(try ServerConfigFile.parse(Data(#"{"objectStorage":{"endpoint":"http://127.0.0.1:9000","bucket":"calls","accessKeyID":"A","secretAccessKey":"S"}}"#.utf8)).objectStorage?.region,
                       "us-east-1", "the region when the store has none")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secret)
        let base = #""endpoint":"http://127.0.0.1:9000","bucket":"calls","accessKeyID":"A""#
        for (bad, why) in [(#"{"objectStorage":"s3://calls"}"#, "'objectStorage' must be an object"),
                           (#"{"objectStorage":{\#(base)}}"#, "one of secretAccessKey and secretAccessKeyFile"),
                           (#"{"objectStorage":{\#(base),"secretAccessKey":"S","secretAccessKeyFile":"/x"}}"#, "one of secretAccessKey and secretAccessKeyFile"),
                           (#"{"objectStorage":{\#(base),"secretAccessKeyFile":"\#(secret)"}}"#, "may be read by others"),
                           (#"{"objectStorage":{\#(base),"secretAccessKeyFile":"/nonexistent"}}"#, "cannot be read"),
                           (#"{"objectStorage":{"endpoint":"ftp://x","bucket":"calls","accessKeyID":"A","secretAccessKey":"S"}}"#, "http(s)://HOST[:PORT]"),
                           (#"{"objectStorage":{"endpoint":"http://x","bucket":"Calls_1","accessKeyID":"A","secretAccessKey":"S"}}"#, "objectStorage.bucket"),
                           (#"{"objectStorage":{\#(base),"secretAccessKey":"S","prefix":"../up/"}}"#, "objectStorage.prefix"),
                           (#"{"objectStorage":{\#(base),"secretAccessKey":"S","prefix":"noslash"}}"#, "objectStorage.prefix"),
                           (#"{"objectStorage":{\#(base),"secretAccessKey":"S","acl":"public"}}"#, "unknown key 'acl'")] {
            XCTAssertThrowsError(try ServerConfigFile.parse(Data(bad.utf8)), bad) {
                let message = ($0 as? ServerConfigFile.Invalid)?.message ?? ""
                XCTAssertTrue(message.contains(why), "\(bad): \(message)")
                XCTAssertFalse(message.contains("s3cr3t"), "no secret in the error")
            }
        }
    }

    func testTheCaptionEngineIsChosenAndSaid() {
        var c = ServerConfiguration(dataDir: "/tmp/unused")
        c.captionsEngine = .pocketsphinx
        XCTAssertEqual(CallServer.captionEngine(c).engine.name, "pocketsphinx")
        c.captionsEngine = .whisper
        c.whisperPython = "/nonexistent/python3"
        c.moonshineModelDir = "/nonexistent/model"
        let fallback = CallServer.captionEngine(c)
        XCTAssertEqual(fallback.engine.name, "pocketsphinx", "Whisper asked for, neither it nor Moonshine installed: PocketSphinx")
        XCTAssertEqual(fallback.note.level, .warn)
        XCTAssertTrue(fallback.note.message.contains("not installed at /nonexistent/python3"), fallback.note.message)
        c.captionsEngine = .moonshine
        let both = CallServer.captionEngine(c)
        XCTAssertEqual(both.engine.name, "pocketsphinx", "Moonshine asked for, neither it nor Whisper installed")
        XCTAssertEqual(both.note.level, .warn)
        XCTAssertTrue(both.note.message.contains("its model in /nonexistent/model") && both.note.message.contains("Whisper engine is not installed"), both.note.message)
        c.captionsEngine = .automatic
        XCTAssertEqual(CallServer.captionEngine(c).note.level, .info, "automatic: no warning")
        c.whisperPython = WhisperEngine.defaultPython
        c.moonshineModelDir = MoonshineEngine.defaultModelDir
        let whisper = WhisperEngine().isInstalled, moonshine = MoonshineEngine().isInstalled
        XCTAssertEqual(CallServer.captionEngine(c).engine.name, moonshine ? "moonshine" : whisper ? "whisper" : "pocketsphinx", "the default by measurement")
        c.captionsEngine = .whisper
        XCTAssertEqual(CallServer.captionEngine(c).engine.name, whisper ? "whisper" : moonshine ? "moonshine" : "pocketsphinx", "asked for by name")
        for (bad, why) in [(#"{"captionsEngine":7}"#, "captionsEngine"), (#"{"moonshineModelDir":[]}"#, "moonshineModelDir")] {
            XCTAssertThrowsError(try ServerConfigFile.parse(Data(bad.utf8)), bad) {
                XCTAssertTrue((($0 as? ServerConfigFile.Invalid)?.message ?? "").contains(why), "\($0)")
            }
        }
    }

    func testTLSConfiguration() throws {
        let c = try ServerConfigFile.parse(Data(#"{"tlsCert":"/c.pem","tlsKey":"/k.pem","tlsSelfSigned":false,"allowPlainHTTP":true}"#.utf8))
        XCTAssertEqual(c.tlsCert, "/c.pem")
        XCTAssertEqual(c.tlsKey, "/k.pem")
        XCTAssertEqual(c.tlsSelfSigned, false)
        XCTAssertEqual(c.allowPlainHTTP, true)
        XCTAssertThrowsError(try ServerConfigFile.parse(Data(#"{"tlsSelfSigned":"yes"}"#.utf8))) {
            XCTAssertTrue(($0 as? ServerConfigFile.Invalid)?.message.contains("'tlsSelfSigned' must be true or false") == true, "\($0)")
        }
    }

    func testConfigFileParsing() throws {
        let c = try ServerConfigFile.parse(Data(#"{"listen":"0.0.0.0:1","mediaPort":2,"autoCreateUsers":false,"logFormat":"json","relayThreads":3,"relayMaxDelayMs":150}"#.utf8))
        XCTAssertEqual(c.listen, "0.0.0.0:1")
        XCTAssertEqual(c.mediaPort, 2)
        XCTAssertEqual(c.autoCreateUsers, false)
        XCTAssertEqual(c.logFormat, "json")
        XCTAssertEqual(c.relayThreads, 3)
        XCTAssertEqual(c.relayMaxDelayMs, 150)
        XCTAssertThrowsError(try ServerConfigFile.parse(Data(#"{"listne":"x"}"#.utf8))) {
            XCTAssertTrue(($0 as? ServerConfigFile.Invalid)?.message.contains("unknown key 'listne'") == true)
        }
        XCTAssertThrowsError(try ServerConfigFile.parse(Data(#"{"mediaPort":"7"}"#.utf8)))
        XCTAssertThrowsError(try ServerConfigFile.parse(Data(#"{"mediaPort":true}"#.utf8)))
        XCTAssertThrowsError(try ServerConfigFile.parse(Data(#"{"autoCreateUsers":1}"#.utf8)))
        XCTAssertThrowsError(try ServerConfigFile.parse(Data("[1]".utf8)))
        // Trusted proxies: addresses or CIDR blocks; anything else is named.
        let proxies = try ServerConfigFile.parse(Data(#"{"trustedProxies":["127.0.0.1","10.0.0.0/8","2001:db8::/32"]}"#.utf8)).trustedProxies
        XCTAssertEqual(proxies?.map(\.description), ["127.0.0.1/32", "10.0.0.0/8", "2001:db8::/32"])
        XCTAssertEqual(try ServerConfigFile.parse(Data(#"{"metricsAllow":["0.0.0.0/0","::/0"]}"#.utf8)).metricsAllow?.map(\.description), ["0.0.0.0/0", "::/0"])
        XCTAssertEqual(try ServerConfigFile.parse(Data(#"{"metricsAllow":[]}"#.utf8)).metricsAllow, [], "none")
        for (bad, why) in [(#"{"metricsAllow":["prometheus"]}"#, "'metricsAllow' must be a list of addresses or CIDR blocks"),
                           (#"{"trustedProxies":"127.0.0.1"}"#, "must be a list"), (#"{"trustedProxies":["10.0.0.1/8"]}"#, "'10.0.0.1/8' is not one"),
                           (#"{"trustedProxies":["proxy.internal"]}"#, "'proxy.internal' is not one"), (#"{"trustedProxies":[7]}"#, "must be a list")] {
            XCTAssertThrowsError(try ServerConfigFile.parse(Data(bad.utf8)), bad) {
                XCTAssertTrue(($0 as? ServerConfigFile.Invalid)?.message.contains(why) == true, "\($0)")
            }
        }
    }

    func testMetricsCountRoomsParticipantsAndPackets() throws {
        let h = try ServerHarness()
        defer { h.stop(); h.removeData() }
        let p = try SignalProbe(url: h.server.url)
        p.send(.join(.init(callToken: try h.callToken(uid: "m1", session: "metrics"))))
        let j = try XCTUnwrap(p.joined())
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let s = try UDPSocket(host: "127.0.0.1", port: 0)
        XCTAssertTrue(s.bindMedia(j, relay: relay))
        s.send([0x80, 0, 1], to: relay)  // malformed
        eventually(3) { h.server.metricsText().contains(#"callroom_relay_packets_dropped_total{reason="malformed"} 1"#) }
        let text = h.server.metricsText()
        func value(_ line: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        XCTAssertEqual(value("callroom_rooms"), 1)
        XCTAssertEqual(value("callroom_participants"), 1)
        XCTAssertEqual(value("callroom_signalling_connections"), 1)
        XCTAssertEqual(value("callroom_relay_binds_total"), 1)
        XCTAssertEqual(value(#"callroom_relay_packets_dropped_total{reason="malformed"}"#), 1)
        XCTAssertGreaterThan(value("callroom_store_operations_total") ?? 0, 3)
        XCTAssertNotNil(value("callroom_store_latency_seconds_sum"))
        XCTAssertTrue(text.contains("# TYPE callroom_relay_packets_forwarded_total counter"))
        // Over HTTP, as Prometheus scrapes it.
        let r = h.request("GET", "/metrics")
        XCTAssertEqual(r.status, 200)
        p.send(.leave)
        XCTAssertTrue(p.waitClosed())
        XCTAssertTrue(eventually(3) { h.server.metricsText().contains("callroom_rooms 0") })
        XCTAssertFalse(h.server.metricsText().contains(h.server.keys.apiKey))
    }
}
