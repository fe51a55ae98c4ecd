import CallRoomTestSupport
import CallsCore
@testable import CallsServer
import CallsTransport
import Foundation
import XCTest
@testable import CallsRelay

/// The relay's worker threads: one UDP port shared by several sockets (`SO_REUSEPORT`), bindings
/// accepted on one worker used as destinations by the others.
final class RelayWorkersTests: XCTestCase {
    func testEveryParticipantHearsEveryOtherAcrossFourWorkers() throws {
        let h = try ServerHarness { $0.relayThreads = 4 }
        defer { h.stop(); h.removeData() }
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        // 12 senders hash onto 4 sockets; all on one socket would take odds of 4^-11.
        let members = try (0..<12).map { try h.joinAndBind("u\($0)", session: "big") }
        for (i, m) in members.enumerated() {
            m.socket.send(RTPPacket(sequenceNumber: UInt16(i), timestamp: 960, ssrc: m.ssrc, payload: [UInt8(i)]).encoded(), to: relay)
        }
        for (i, m) in members.enumerated() {
            var heard = Set<UInt32>()
            while heard.count < 11, let d = m.socket.receiveBytes(), let p = try? RTPPacket(parsing: d) { heard.insert(p.ssrc) }
            XCTAssertEqual(heard, Set(members.map(\.ssrc)).subtracting([m.ssrc]), "u\(i) hears the 11 others once each")
        }
        // Workers add to the shared counters once per received batch, after its sends.
        let counters = try XCTUnwrap(h.server.relayCounters)
        eventually(2, poll: 0.01) { counters.forwarded.load(ordering: .relaxed) >= 12 * 11 }
        XCTAssertEqual(counters.forwarded.load(ordering: .relaxed), 12 * 11)
        XCTAssertEqual(counters.binds.load(ordering: .relaxed), 12)
        // The kernel spread the 12 senders over the 4 sockets (each sent a bind, its consent answer and one packet).
        let perWorker = counters.receivedPerWorker
        XCTAssertEqual(perWorker.count, 4)
        XCTAssertEqual(perWorker.reduce(0, +), 36, "\(perWorker)")
        XCTAssertGreaterThan(perWorker.filter { $0 > 0 }.count, 1, "more than one worker received: \(perWorker)")
        XCTAssertTrue(h.server.metricsText().contains(#"callroom_relay_worker_packets_received_total{worker="3"}"#))
    }

    func testAMediaPortInUseIsRefusedNotShared() throws {
        let first = try ServerHarness { $0.relayThreads = 2 }
        defer { first.stop(); first.removeData() }
        let port = first.server.mediaPort
        XCTAssertThrowsError(try ServerHarness { $0.relayThreads = 2; $0.mediaPort = port }) { error in
            guard case .cannotBindMedia(let why)? = error as? ServerStartError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("\(port)") && why.contains("bind: \(String(cString: strerror(EADDRINUSE)))"), why)
        }
    }

    func testALevelStampedAfterTheEvaluationClockCountsAsFresh() {
        // Workers stamp levels with their own clock reads; worker 0 may evaluate with an older one.
        var tracker = DominantSpeakerTracker()
        var table = RelayTable()
        table.members[7] = .init(key: 7, room: 0, ssrc: 1)
        table.rooms[0] = [7]
        let t0: UInt64 = 10_000_000_000
        for k in 0..<5 { tracker.heard(7, level: 10, now: t0 + UInt64(k) * 20_000_000 + 500_000_000) }
        XCTAssertEqual(tracker.evaluate(table, now: t0)?.count, 0, "candidate, not yet confirmed")
        let changes = tracker.evaluate(table, now: t0 + 300_000_000)
        XCTAssertEqual(changes?.first?.0, 0)
        XCTAssertEqual(changes?.first?.1, 7)
    }

}

/// Overload protection: RTP that waited in the relay's socket past `relayMaxDelayMs` is dropped,
/// not forwarded late. The server process is stopped (SIGSTOP) while packets queue, so they are
/// really old when the relay reads them.
final class RelayStaleDropTests: XCTestCase {
    func testPacketsThatWaitedTooLongAreDroppedAndCounted() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crs-stale-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"relayMaxDelayMs": 100}"#.write(toFile: dir + ".json", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: dir + ".json") }
        let server = try CallroomdProcess(dataDir: dir, extra: ["--config", dir + ".json", "--log-level", "error"])
        defer { _ = server.stop() }
        let early = try server.joinAndBind("early", session: "stale"), late = try server.joinAndBind("late", session: "stale")
        let relay = early.relay
        let (sender, ssrc, receiver) = (early.socket, early.ssrc, late.socket)
        sender.send(RTPPacket(sequenceNumber: 1, timestamp: 0, ssrc: ssrc, payload: [1]).encoded(), to: relay)
        XCTAssertNotNil(receiver.receiveBytes(), "a fresh packet is forwarded")

        // SIGSTOP is asynchronous: wait until the kernel reports the process stopped ('T').
        let pid = server.process.process.processIdentifier
        server.process.signal(SIGSTOP)
        eventually(2, poll: 0.005) { Self.state(pid) == "T" }
        XCTAssertEqual(Self.state(pid), "T", "callroomd stopped")
        for k in 0..<5 { sender.send(RTPPacket(sequenceNumber: UInt16(2 + k), timestamp: 0, ssrc: ssrc, payload: [2]).encoded(), to: relay) }
        Thread.sleep(forTimeInterval: 0.4)
        server.process.signal(SIGCONT)
        XCTAssertNil(receiver.receiveBytes(timeoutMs: 300), "packets 400 ms old are not forwarded")

        sender.send(RTPPacket(sequenceNumber: 9, timestamp: 0, ssrc: ssrc, payload: [3]).encoded(), to: relay)
        let fresh = try XCTUnwrap(receiver.receiveBytes(), "the relay is current again")
        XCTAssertEqual(try RTPPacket(parsing: fresh).sequenceNumber, 9)
        let metrics = BlockingHTTP.request("GET", server.url + "/metrics").text
        XCTAssertTrue(metrics.contains(#"callroom_relay_packets_dropped_total{reason="stale"} 5"#), metrics)
        XCTAssertTrue(metrics.contains("callroom_relay_packets_forwarded_total 2"), metrics)
        withExtendedLifetime([early, late]) {}
    }

    /// A process's state letter from /proc/PID/stat ("T" when stopped).
    static func state(_ pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }
}
