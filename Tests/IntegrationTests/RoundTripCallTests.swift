import CallRoomTestSupport
import CallsTransport
import Foundation
import XCTest

/// A call whose media path has a round trip, as every real one has: the relay is reached through
/// scripts/udp-delay-proxy.py (60 ms each way; the server advertises the proxy as its media
/// address). Binding takes a round trip and a half (bind, challenge, response), and the clients
/// send no audio before they answered the relay's challenge — so the relay drops nothing as
/// unbound (it dropped each joiner's first round trip of packets before), and both are heard.
final class RoundTripCallTests: XCTestCase {
    func testOverARoundTripTheRelayDropsNothingBeforeTheBindingAndBothAreHeard() throws {
        let tmp = TemporaryDirectory("callroom-rtt")
        defer { tmp.remove() }
        // A free UDP port for the relay (the proxy must know it before the server starts).
        let probe = try UDPSocket(host: "127.0.0.1", port: 0)
        let mediaPort = probe.localAddress.port
        probe.close()
        let proxy = try ManagedProcess("/usr/bin/env", ["python3", BuiltProducts.packageRoot + "/scripts/udp-delay-proxy.py", "0", "127.0.0.1:\(mediaPort)", "60"])
        defer { proxy.signal(SIGTERM); _ = proxy.wait(timeout: 5) }
        let ready = try XCTUnwrap(proxy.waitForLine { $0.hasPrefix("ready") }, proxy.errorOutput)
        let proxyPort = try XCTUnwrap(ready.split(separator: " ").last.map(String.init))
        try #"{"mediaPublicAddress": "127.0.0.1:\#(proxyPort)"}"#.write(toFile: tmp.file("config.json"), atomically: false, encoding: .utf8)
        let server = try CallroomdProcess(dataDir: tmp.file("data"),
                                          extra: ["--log-level", "error", "--config", tmp.file("config.json"), "--media-port", "\(mediaPort)"])
        defer { _ = server.stop() }
        func client(_ uid: String, tone: Int, heard: String) throws -> ManagedProcess {
            try ManagedProcess(BuiltProducts.path("callroom"), ["join", "rtt", "--server", server.url, "--uid", uid, "--auth-key", server.authKey,
                                                                "--input", "tone:\(tone)", "--output", "file:\(heard)", "--headless"])
        }
        let aWAV = tmp.file("a.wav"), bWAV = tmp.file("b.wav")
        let a = try client("a", tone: 440, heard: aWAV)
        XCTAssertNotNil(a.waitForLine { $0.contains("onSessionJoined") }, a.errorOutput)
        let b = try client("b", tone: 660, heard: bWAV)
        XCTAssertNotNil(b.waitForLine { $0.contains("onSessionJoined") }, b.errorOutput)
        Thread.sleep(forTimeInterval: 3)
        let metrics = BlockingHTTP.request("GET", server.url + "/metrics").text
        func counter(_ line: String) -> Int? {
            metrics.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
        }
        XCTAssertGreaterThanOrEqual(counter("callroom_relay_binds_total") ?? 0, 2, "both bound through the proxy:\n\(metrics)")
        XCTAssertEqual(counter(#"callroom_relay_packets_dropped_total{reason="unbound"}"#), 0, "nothing sent before its binding")
        XCTAssertGreaterThan(counter("callroom_relay_packets_forwarded_total") ?? 0, 150, "both sent audio for 3 s")
        for c in [a, b] { c.send("leave"); XCTAssertEqual(c.wait(timeout: 10), 0, c.errorOutput) }
        for (path, tone, other) in [(aWAV, 660.0, 440.0), (bWAV, 440.0, 660.0)] {
            let wav = try XCTUnwrap(SignalAnalysis.readWAV(path), path)
            let heard = SignalAnalysis.windowsCarrying(wav.samples, tone: tone, over: [other])
            XCTAssertGreaterThan(heard.carrying, 15, "\(path): \(heard.carrying) of \(heard.of) 100 ms windows carry the \(Int(tone)) Hz tone")
        }
    }
}
