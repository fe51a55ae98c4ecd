import CallRoomTestSupport
import Foundation
import XCTest

/// The relay's kernel fast path over Ethernet: the load generator's bots live in their own
/// network namespace behind a veth pair, so every copy the program sends has its Ethernet
/// addresses swapped and its IP addresses, ports and checksums rewritten (on loopback the
/// addresses never change). Needs root, iproute2 and the built program (scripts/test.sh).
final class FastPathNetnsTests: XCTestCase {
    let ns = VethNamespace(name: "crtest\(getpid() % 100_000)", hostSide: "crh\(getpid() % 100_000)", peerSide: "crpeer", prefix: "10.203.77")

    override func setUpWithError() throws {
        try XCTSkipUnless(VethNamespace.isAvailable, "needs root and iproute2 (network namespaces, eBPF)")
        let object = BuiltProducts.packageRoot + "/.build/bpf/relay_fastpath.bpf.o"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: object), "run scripts/build-bpf.sh first")
        if let failed = try ns.create() { XCTFail(failed) }
    }

    override func tearDownWithError() throws { ns.remove() }  // takes the veth pair with it

    func testBotsInAnotherNamespaceAreServedByTheKernel() throws {
        let tmp = TemporaryDirectory("callroom-netns")
        defer { tmp.remove() }
        let object = BuiltProducts.packageRoot + "/.build/bpf/relay_fastpath.bpf.o"
        try #"{"relayFastPath": "on", "relayFastPathObject": "\#(object)", "restRequestsPerSecond": 10000}"#
            .write(toFile: tmp.file("config.json"), atomically: true, encoding: .utf8)
        let callroomd = try CallroomdProcess(dataDir: tmp.file("data"), listen: "\(ns.hostIP):0",
                                             // Plain HTTP off loopback must be asked for (the namespace is the test's own).
                                             extra: ["--config", tmp.file("config.json"), "--log-level", "error", "--allow-plain-http"])
        defer { _ = callroomd.stop() }
        let load = try ns.exec(BuiltProducts.path("callroom"), ["bots",
                                                       "--server", callroomd.url, "--auth-key", callroomd.authKey,
                                                       "--rooms", "2", "--per-room", "3", "--duration", "2",
                                                       "--server-pid", "\(callroomd.process.process.processIdentifier)"])
        XCTAssertEqual(load.wait(timeout: 60), 0, load.errorOutput)
        let out = load.output
        let last = try XCTUnwrap(out.last, "\(out)")
        func value(_ key: String) -> Double? {
            last.split(separator: " ").first { $0.hasPrefix(key + "=") }.flatMap { Double($0.split(separator: "=")[1]) }
        }
        XCTAssertGreaterThan(try XCTUnwrap(value("delivered")), 500, last)
        XCTAssertLessThan(try XCTUnwrap(value("loss_pct")), 1, last)
        let metrics = BlockingHTTP.request("GET", callroomd.url + "/metrics").text
        let fast = metrics.split(separator: "\n").first { $0.hasPrefix("callroom_relay_fastpath_packets_forwarded_total ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        XCTAssertGreaterThan(fast, 500, "the copies were made in the kernel:\n\(metrics)")
    }
}
