import CallRoomTestSupport
import Foundation
import XCTest

/// No UDP path to the relay: one client lives in its own network namespace behind a veth pair
/// and reaches the server's signalling over it, but the media address the server advertises
/// (`mediaPublicAddress` 127.0.0.1) is nowhere it can reach — the namespace's own loopback, where
/// nothing listens — as behind a firewall that lets only the HTTPS port through. The other
/// client is on the host and uses UDP. The blocked client says so within 3 s and carries its
/// media over the signalling connection; the relay forwards between the two kinds of member;
/// each hears the other. Needs root and iproute2 (the kernel here has no tc actions or
/// netfilter tables to drop UDP with).
final class BlockedUDPTests: XCTestCase {
    let ns = VethNamespace(name: "crudp\(getpid() % 100_000)", hostSide: "cru\(getpid() % 100_000)", peerSide: "crudp", prefix: "10.203.78")

    override func setUpWithError() throws {
        try XCTSkipUnless(VethNamespace.isAvailable, "needs root and iproute2 (network namespaces)")
        if let failed = try ns.create() { XCTFail(failed) }
    }

    override func tearDown() { ns.remove() }

    func testABlockedClientFallsBackToTheSignallingConnectionAndBothAreHeard() throws {
        let tmp = TemporaryDirectory("callroom-udp")
        defer { tmp.remove() }
        try #"{"mediaPublicAddress": "127.0.0.1"}"#.write(toFile: tmp.file("config.json"), atomically: true, encoding: .utf8)
        let server = try CallroomdProcess(dataDir: tmp.file("data"), listen: "0.0.0.0:0",
                                          extra: ["--log-level", "error", "--allow-plain-http", "--config", tmp.file("config.json")])
        defer { _ = server.stop() }
        let port = try XCTUnwrap(server.url.split(separator: ":").last)
        func client(_ uid: String, tone: Int, heard: String, blocked: Bool) throws -> ManagedProcess {
            let url = blocked ? "http://\(ns.hostIP):\(port)" : "http://127.0.0.1:\(port)"
            let args = ["join", "fw", "--server", url, "--uid", uid, "--auth-key", server.authKey,
                        "--input", "tone:\(tone)", "--output", "file:\(heard)", "--headless"]
            return blocked ? try ns.exec(BuiltProducts.path("callroom"), args)
                : try ManagedProcess(BuiltProducts.path("callroom"), args)
        }
        let openWAV = tmp.file("open.wav"), blockedWAV = tmp.file("blocked.wav")
        let open = try client("open", tone: 440, heard: openWAV, blocked: false)
        XCTAssertNotNil(open.waitForLine { $0.contains("onSessionJoined") }, open.errorOutput)
        let blocked = try client("walled", tone: 660, heard: blockedWAV, blocked: true)
        XCTAssertNotNil(blocked.waitForLine { $0.contains("onSessionJoined") }, blocked.errorOutput)
        let joinedAt = Date()
        let changed = blocked.waitForLine(timeout: 5) { $0.contains("onMediaTransportChanged") }
        XCTAssertNotNil(changed, "the blocked client says so: \(blocked.output.suffix(5))")
        XCTAssertLessThan(Date().timeIntervalSince(joinedAt), 3.0, "within 3 s")
        XCTAssertTrue(changed?.contains("signalling") == true, changed ?? "")
        XCTAssertTrue(blocked.output.contains { $0.contains("onAudioNotice") && $0.contains("signalling connection") }, "and a notice")
        XCTAssertFalse(open.output.contains { $0.contains("onMediaTransportChanged") }, "the open client stays on UDP")
        Thread.sleep(forTimeInterval: 3)
        let metrics = BlockingHTTP.request("GET", "http://127.0.0.1:\(port)/metrics").text
        XCTAssertTrue(metrics.contains(#"callroom_relay_tunnelled_packets_total{direction="in"}"#), metrics)
        for c in [open, blocked] { c.send("leave"); XCTAssertEqual(c.wait(timeout: 10), 0, c.errorOutput) }
        // Each heard the other's tone: 440 Hz at the blocked end, 660 Hz at the open end.
        for (path, tone, other) in [(blockedWAV, 440.0, 660.0), (openWAV, 660.0, 440.0)] {
            let wav = try XCTUnwrap(SignalAnalysis.readWAV(path), path)
            let heard = SignalAnalysis.windowsCarrying(wav.samples, tone: tone, over: [other])
            XCTAssertGreaterThan(heard.carrying, 15, "\(path): \(heard.carrying) of \(heard.of) 100 ms windows carry the \(Int(tone)) Hz tone")
        }
    }
}
