import CallRoomTestSupport
import CallsTransport
import Foundation
import XCTest

/// Calls whose media path has a round trip, as every real one has: the relay is reached through
/// scripts/udp-delay-proxy.py (60 ms each way; the server advertises the proxy as its media
/// address). Binding takes a round trip and a half (bind, challenge, response), and the clients
/// send no media before they answered the relay's challenge — so the relay drops nothing as
/// unbound (it dropped each joiner's first round trip of packets before, a video keyframe
/// among them), and everyone is heard and seen from the first frame that goes out.
final class RoundTripCallTests: XCTestCase {
    /// The server behind the delay proxy, in `dir`.
    struct DelayedServer {
        let server: CallroomdProcess
        let proxy: ManagedProcess

        init(in dir: TemporaryDirectory, oneWayMs: Int) throws {
            // A free UDP port for the relay (the proxy must know it before the server starts).
            let probe = try UDPSocket(host: "127.0.0.1", port: 0)
            let mediaPort = probe.localAddress.port
            probe.close()
            proxy = try ManagedProcess("/usr/bin/env", ["python3", BuiltProducts.packageRoot + "/scripts/udp-delay-proxy.py", "0",
                                                         "127.0.0.1:\(mediaPort)", "\(oneWayMs)"])
            guard let ready = proxy.waitForLine(timeout: 10, { $0.hasPrefix("ready") }), let port = ready.split(separator: " ").last else {
                throw TestFailure("the delay proxy did not start: \(proxy.errorOutput)")
            }
            try #"{"mediaPublicAddress": "127.0.0.1:\#(port)"}"#.write(toFile: dir.file("config.json"), atomically: false, encoding: .utf8)
            server = try CallroomdProcess(dataDir: dir.file("data"),
                                          extra: ["--log-level", "error", "--config", dir.file("config.json"), "--media-port", "\(mediaPort)"])
        }

        func stop() {
            _ = server.stop()
            proxy.signal(SIGTERM)
            _ = proxy.wait(timeout: 5)
        }

        func join(_ uid: String, _ extra: [String]) throws -> ManagedProcess {
            try ManagedProcess(BuiltProducts.path("callroom"), ["join", "rtt", "--server", server.url, "--uid", uid, "--auth-key", server.authKey,
                                                                "--headless"] + extra)
        }

        /// The value of one of the server's Prometheus counters (`name` with its labels).
        func counter(_ name: String) -> Int? {
            BlockingHTTP.request("GET", server.url + "/metrics").text.split(separator: "\n")
                .first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
        }
    }

    func testOverARoundTripTheRelayDropsNothingBeforeTheBindingAndBothAreHeard() throws {
        let tmp = TemporaryDirectory("callroom-rtt")
        defer { tmp.remove() }
        let path = try DelayedServer(in: tmp, oneWayMs: 60)
        defer { path.stop() }
        let aWAV = tmp.file("a.wav"), bWAV = tmp.file("b.wav")
        let a = try path.join("a", ["--input", "tone:440", "--output", "file:\(aWAV)"])
        XCTAssertNotNil(a.waitForLine { $0.contains("onSessionJoined") }, a.errorOutput)
        let b = try path.join("b", ["--input", "tone:660", "--output", "file:\(bWAV)"])
        XCTAssertNotNil(b.waitForLine { $0.contains("onSessionJoined") }, b.errorOutput)
        Thread.sleep(forTimeInterval: 3)
        XCTAssertGreaterThanOrEqual(path.counter("callroom_relay_binds_total") ?? 0, 2, "both bound through the proxy")
        XCTAssertEqual(path.counter(#"callroom_relay_packets_dropped_total{reason="unbound"}"#), 0, "nothing sent before its binding")
        XCTAssertGreaterThan(path.counter("callroom_relay_packets_forwarded_total") ?? 0, 150, "both sent audio for 3 s")
        for c in [a, b] { c.send("leave"); XCTAssertEqual(c.wait(timeout: 10), 0, c.errorOutput) }
        for (path, tone, other) in [(aWAV, 660.0, 440.0), (bWAV, 440.0, 660.0)] {
            let wav = try XCTUnwrap(SignalAnalysis.readWAV(path), path)
            let heard = SignalAnalysis.windowsCarrying(wav.samples, tone: tone, over: [other])
            XCTAssertGreaterThan(heard.carrying, 15, "\(path): \(heard.carrying) of \(heard.of) 100 ms windows carry the \(Int(tone)) Hz tone")
        }
    }

    /// The joiner's video starts with a keyframe the relay forwards: the one already in the room
    /// decodes every frame it gets and never has to ask for a keyframe (before, the joiner's
    /// first keyframe went out unbound and was dropped, and the deltas after it were useless).
    func testOverARoundTripAJoinersVideoStartsWithAKeyframeTheRelayForwards() throws {
        let tmp = TemporaryDirectory("callroom-rttv")
        defer { tmp.remove() }
        let path = try DelayedServer(in: tmp, oneWayMs: 60)
        defer { path.stop() }
        let media = ["--input", "tone:440", "--output", "null", "--video", "pattern"]
        let a = try path.join("a", media)
        XCTAssertNotNil(a.waitForLine { $0.contains("onSessionJoined") }, a.errorOutput)
        Thread.sleep(forTimeInterval: 1)
        let b = try path.join("b", media)
        XCTAssertNotNil(b.waitForLine { $0.contains("onSessionJoined") }, b.errorOutput)
        Thread.sleep(forTimeInterval: 3)
        a.send("video-report")
        let line = try XCTUnwrap(a.waitForLine(timeout: 5) { $0.contains("videoReport") }, a.errorOutput)
        let report = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["videoReport"] as? [String: Any], line)
        let received = try XCTUnwrap(report["received"] as? [String: [String: Any]], line)
        XCTAssertEqual(received.count, 1, "a receives b's video: \(line)")
        let fromB = try XCTUnwrap(received.values.first)
        XCTAssertGreaterThan(fromB["framesDecoded"] as? Int ?? 0, 20, "b's video decoded for 3 s: \(line)")
        XCTAssertEqual(fromB["framesDropped"] as? Int, 0, "no frame waited for a keyframe: \(line)")
        XCTAssertEqual(fromB["keyframesRequested"] as? Int, 0, "no keyframe had to be asked for: \(line)")
        XCTAssertEqual(path.counter(#"callroom_relay_packets_dropped_total{reason="unbound"}"#), 0, "nothing sent before its binding")
        for c in [a, b] { c.send("leave"); XCTAssertEqual(c.wait(timeout: 10), 0, c.errorOutput) }
    }
}
