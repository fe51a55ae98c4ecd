import CallRoomTestSupport
import CallsCore
@testable import CallsServer
import CallsTransport
import Foundation
import XCTest
@testable import CallsRelay

/// The relay's eBPF fast path, for real: the program is loaded into this machine's kernel and
/// attached to the loopback interface. Needs root (CI runs as root) and the object that
/// scripts/build-bpf.sh builds (scripts/test.sh runs it first).
final class RelayFastPathTests: XCTestCase {
    static let object = BuiltProducts.packageRoot + "/.build/bpf/relay_fastpath.bpf.o"

    override func setUpWithError() throws {
        try XCTSkipUnless(getuid() == 0, "the kernel fast path needs root (CAP_BPF, CAP_NET_ADMIN)")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Self.object), "run scripts/build-bpf.sh first")
        // A kernel without tcx (Linux < 6.6) or without BPF for us cannot run it: say so. A
        // program the verifier rejects is our defect, and fails the test.
        if let reason = Self.unsupported() { throw XCTSkip(reason) }
    }

    /// Why this machine cannot run the program, or nil (also nil when loading fails for a
    /// reason that is the program's fault: the test must then fail, not skip).
    static func unsupported() -> String? {
        let result = Result { () throws(RelayFastPathError) -> RelayFastPath in
            try RelayFastPath(objectPath: object, host: "127.0.0.1", port: 9)
        }
        guard case .failure(let error) = result else { return nil }
        switch error {
        case .attach(let e): return "this kernel cannot attach the fast path: \(String(cString: strerror(e)))"
        case .load(_, let e) where e == EPERM || e == ENOSYS: return "BPF is not available here: \(String(cString: strerror(e)))"
        default: return nil
        }
    }

    func waitFor(_ what: String, _ condition: () -> Bool) {
        eventually(2, poll: 0.01) { condition() }
        XCTAssertTrue(condition(), what)
    }

    func testTheKernelForwardsToTheRoomAndTheRelayStaysInCharge() throws {
        let h = try ServerHarness { $0.relayFastPath = .on; $0.relayFastPathObject = Self.object }
        defer { h.stop(); h.removeData() }
        let counters = try XCTUnwrap(h.server.relayCounters)
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let a = try h.joinAndBind("a", session: "room"), b = try h.joinAndBind("b", session: "room"), c = try h.joinAndBind("c", session: "room")
        let other = try h.joinAndBind("z", session: "elsewhere")
        h.settleRelay()

        let packet = RTPPacket(sequenceNumber: 7, timestamp: 960, ssrc: a.joined.you.ssrc,
                               audioLevel: .init(level: 30, voiceActivity: true), payload: [9, 8, 7]).encoded()
        a.socket.send(packet, to: relay)
        for m in [b, c] {
            let (bytes, from) = try XCTUnwrap(m.socket.receiveDatagram(), "\(m.joined.you.uid) got the packet")
            XCTAssertEqual(bytes, packet, "forwarded unchanged")
            XCTAssertEqual(from, relay, "from the relay's address and port")
        }
        XCTAssertNil(other.socket.receiveDatagram(timeoutMs: 200), "never to another room")
        XCTAssertNil(a.socket.receiveDatagram(timeoutMs: 100), "never echoed")
        waitFor("the kernel forwarded both copies: \(counters.fastPathForwarded.load(ordering: .relaxed))") {
            counters.fastPathForwarded.load(ordering: .relaxed) == 2
        }
        XCTAssertEqual(counters.forwarded.load(ordering: .relaxed), 2, "and /metrics counts them as forwarded")
        XCTAssertEqual(counters.forwardedBytes.load(ordering: .relaxed), UInt64(2 * packet.count), "bytes of RTP, as the workers count them")
        XCTAssertEqual(counters.receivedPerWorker.reduce(0, +), 8, "the workers saw only the four binds and their consent answers")

        // What the program does not vouch for still reaches the workers: a spoofed SSRC is dropped there.
        a.socket.send(RTPPacket(sequenceNumber: 8, timestamp: 1, ssrc: b.joined.you.ssrc, payload: [0]).encoded(), to: relay)
        XCTAssertNil(b.socket.receiveDatagram(timeoutMs: 200))
        waitFor("the workers dropped the spoofed SSRC") { counters.droppedSSRCMismatch.load(ordering: .relaxed) == 1 }

        // Levels the program reads feed the dominant-speaker tracker.
        paced(every: 0.02, for: 1.2) { tick in
            let seq = UInt16(101 + tick)
            c.socket.send(RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: c.joined.you.ssrc,
                                    audioLevel: .init(level: 10, voiceActivity: true), payload: [1]).encoded(), to: relay)
            return true
        }
        XCTAssertNotNil(a.probe.wait { $0 == .dominantSpeaker(pid: c.joined.you.pid) }, "c became the dominant speaker")

        // A second server's program on the same interface: each forwards its own relay's packets.
        let h2 = try ServerHarness { $0.relayFastPath = .on; $0.relayFastPathObject = Self.object }
        defer { h2.stop(); h2.removeData() }
        let p = try h2.joinAndBind("p", session: "second"), q = try h2.joinAndBind("q", session: "second")
        h2.settleRelay()
        let relay2 = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h2.server.mediaPort))
        p.socket.send(RTPPacket(sequenceNumber: 1, timestamp: 0, ssrc: p.joined.you.ssrc, payload: [4]).encoded(), to: relay2)
        XCTAssertEqual(q.socket.receiveDatagram()?.1, relay2, "the second server's room works")
        waitFor("in the kernel too") { h2.server.relayCounters?.fastPathForwarded.load(ordering: .relaxed) == 1 }
        let before = counters.fastPathForwarded.load(ordering: .relaxed)
        a.socket.send(RTPPacket(sequenceNumber: 9, timestamp: 3, ssrc: a.joined.you.ssrc, payload: [6]).encoded(), to: relay)
        XCTAssertNotNil(c.socket.receiveDatagram(), "and the first server's still does")
        waitFor("the first program still forwards") { counters.fastPathForwarded.load(ordering: .relaxed) == before + 2 }
        while b.socket.receiveDatagram(timeoutMs: 50) != nil {}

        // A member who has just bound hears the room at once: the kernel's room list includes
        // it before its bind is acknowledged.
        for attempt in 0..<5 {
            let late = try h.joinAndBind("late\(attempt)", session: "room")
            a.socket.send(RTPPacket(sequenceNumber: UInt16(600 + attempt), timestamp: 4, ssrc: a.joined.you.ssrc, payload: [7]).encoded(), to: relay)
            XCTAssertNotNil(late.socket.receiveDatagram(timeoutMs: 300), "late\(attempt) hears a right after its bind")
            late.probe.send(.leave)
            XCTAssertTrue(late.probe.waitClosed())
        }
        h.settleRelay()
        for m in [b, c] { while m.socket.receiveDatagram(timeoutMs: 50) != nil {} }

        // A member who leaves is taken out of the room's list.
        b.probe.send(.leave)
        XCTAssertTrue(b.probe.waitClosed())
        h.settleRelay()
        while b.socket.receiveDatagram(timeoutMs: 50) != nil {}
        while c.socket.receiveDatagram(timeoutMs: 50) != nil {}
        a.socket.send(RTPPacket(sequenceNumber: 500, timestamp: 2, ssrc: a.joined.you.ssrc, payload: [5]).encoded(), to: relay)
        XCTAssertNotNil(c.socket.receiveDatagram(), "c still hears a")
        XCTAssertNil(b.socket.receiveDatagram(timeoutMs: 200), "b, gone, does not")
        // A stopped server forwards nothing, in the kernel or out of it.
        h2.stop()
        while q.socket.receiveDatagram(timeoutMs: 50) != nil {}
        p.socket.send(RTPPacket(sequenceNumber: 2, timestamp: 0, ssrc: p.joined.you.ssrc, payload: [4]).encoded(), to: relay2)
        XCTAssertNil(q.socket.receiveDatagram(timeoutMs: 300), "stop() detached the second server's program")
        withExtendedLifetime([a, b, c, other, p, q]) {}
    }

    /// A moderator's mute holds in the kernel too: the muted member is taken out of the
    /// program's senders, so its packets reach the workers, which drop them.
    func testAMutedMemberIsNotForwardedByTheKernel() throws {
        let h = try ServerHarness { $0.relayFastPath = .on; $0.relayFastPathObject = Self.object }
        defer { h.stop(); h.removeData() }
        let counters = try XCTUnwrap(h.server.relayCounters)
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let mod = try h.joinAndBind("mod", session: "mute"), loud = try h.joinAndBind("loud", session: "mute")
        h.settleRelay()
        func packet(_ n: UInt16) -> [UInt8] { RTPPacket(sequenceNumber: n, timestamp: UInt32(n) * 960, ssrc: loud.joined.you.ssrc, payload: [3]).encoded() }
        loud.socket.send(packet(1), to: relay)
        XCTAssertEqual(mod.socket.receiveBytes(), packet(1))
        waitFor("forwarded by the kernel") { counters.fastPathForwarded.load(ordering: .relaxed) == 1 }
        mod.probe.send(.muteParticipant(pid: loud.joined.you.pid))
        XCTAssertNotNil(loud.probe.wait { if case .participantUpdated(_, change: .audioMuted) = $0 { return true }; return false })
        h.settleRelay()
        loud.socket.send(packet(2), to: relay)
        XCTAssertNil(mod.socket.receiveBytes(timeoutMs: 300), "not forwarded, by the kernel or the workers")
        waitFor("the workers saw it and dropped it") { counters.droppedMuted.load(ordering: .relaxed) == 1 }
        XCTAssertEqual(counters.fastPathForwarded.load(ordering: .relaxed), 1)
    }

    /// Video in the kernel: a sender's video goes only to the members that subscribed to it
    /// (counted as forwarded and withheld, as the workers count them), follows subscription
    /// changes and members leaving (the list's positions move), survives a mute of the
    /// microphone, and stops in the kernel when the camera pauses (the workers drop it).
    func testTheKernelForwardsVideoOnlyToSubscribers() throws {
        let h = try ServerHarness { $0.relayFastPath = .on; $0.relayFastPathObject = Self.object }
        defer { h.stop(); h.removeData() }
        let counters = try XCTUnwrap(h.server.relayCounters)
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        let other = try h.joinAndBind("other", session: "v", sessionType: .video)  // first in: the moderator
        let cam = try h.joinAndBind("cam", session: "v", sessionType: .video)
        let first = try h.joinAndBind("first", session: "v", sessionType: .video)
        let watcher = try h.joinAndBind("watcher", session: "v", sessionType: .video)
        let videoSSRC = try XCTUnwrap(cam.joined.you.videoSsrc, "a video session has a video SSRC")
        var seq: UInt16 = 0
        func frame() -> [UInt8] {
            seq &+= 1
            return RTPPacket(payloadType: 96, sequenceNumber: seq, timestamp: UInt32(seq) * 6000, ssrc: videoSSRC,
                             payload: [0x90, 0x80, UInt8(seq & 0x7F), 1, 2, 3]).encoded()
        }
        func drain() { for m in [cam, first, watcher, other] { while m.socket.receiveDatagram(timeoutMs: 30) != nil {} } }

        watcher.probe.send(.subscribeVideo(pids: [cam.joined.you.pid]))
        h.settleRelay(after: watcher.probe)
        drain()
        let p1 = frame()
        cam.socket.send(p1, to: relay)
        XCTAssertEqual(watcher.socket.receiveBytes(), p1, "the subscriber gets the frame unchanged")
        XCTAssertNil(first.socket.receiveBytes(timeoutMs: 200), "members not showing cam's tile get nothing")
        XCTAssertNil(other.socket.receiveBytes(timeoutMs: 50))
        waitFor("the kernel forwarded it: \(counters.fastPathForwarded.load(ordering: .relaxed))") {
            counters.fastPathForwarded.load(ordering: .relaxed) == 1
        }
        waitFor("one copy forwarded, two withheld") {
            counters.videoForwarded.load(ordering: .relaxed) == 1 && counters.videoWithheld.load(ordering: .relaxed) == 2
        }
        let workersSaw = counters.receivedPerWorker.reduce(0, +)

        // Positions in the room's list move when an earlier member leaves: the mask follows.
        first.probe.send(.leave)
        XCTAssertTrue(first.probe.waitClosed())
        h.settleRelay()
        drain()
        let p2 = frame()
        cam.socket.send(p2, to: relay)
        XCTAssertEqual(watcher.socket.receiveBytes(), p2, "still the subscriber after the list moved")
        XCTAssertNil(other.socket.receiveBytes(timeoutMs: 200), "and still not the others")

        // A moderator's mute is of the microphone: the camera still goes out, by the kernel.
        other.probe.send(.muteParticipant(pid: cam.joined.you.pid))
        XCTAssertNotNil(cam.probe.wait { if case .participantUpdated(_, change: .audioMuted) = $0 { return true }; return false })
        other.probe.send(.subscribeVideo(pids: [cam.joined.you.pid]))
        h.settleRelay(after: other.probe)
        drain()
        let p3 = frame()
        cam.socket.send(p3, to: relay)
        XCTAssertEqual(watcher.socket.receiveBytes(), p3)
        XCTAssertEqual(other.socket.receiveBytes(), p3, "a new subscriber gets it too")
        waitFor("all by the kernel: \(counters.fastPathForwarded.load(ordering: .relaxed))") {
            counters.fastPathForwarded.load(ordering: .relaxed) == 4
        }
        let audio = RTPPacket(sequenceNumber: 1, timestamp: 960, ssrc: cam.ssrc, payload: [1]).encoded()
        cam.socket.send(audio, to: relay)
        XCTAssertNil(watcher.socket.receiveBytes(timeoutMs: 200), "the muted microphone is not forwarded")
        waitFor("the workers dropped the muted audio") { counters.droppedMuted.load(ordering: .relaxed) == 1 }

        // A paused camera: its packets go up and the workers drop them.
        cam.probe.send(.setVideoPaused(true))
        h.settleRelay(after: cam.probe)
        cam.socket.send(frame(), to: relay)
        XCTAssertNil(watcher.socket.receiveBytes(timeoutMs: 200), "paused video is not forwarded")
        waitFor("dropped as video_paused") { counters.droppedVideoPaused.load(ordering: .relaxed) == 1 }
        XCTAssertEqual(counters.fastPathForwarded.load(ordering: .relaxed), 4)
        XCTAssertGreaterThan(counters.receivedPerWorker.reduce(0, +), workersSaw, "those reached the workers")
        withExtendedLifetime([cam, first, watcher, other]) {}
    }

    func testAKilledServerLeavesNothingInTheKernel() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crs-fp-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = dir + ".json"
        try #"{"relayFastPath": "on", "relayFastPathObject": "\#(Self.object)"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let server = try CallroomdProcess(dataDir: dir, extra: ["--config", config, "--log-level", "error"])
        let x = try server.joinAndBind("x", session: "kill"), y = try server.joinAndBind("y", session: "kill")
        let relay = x.relay
        let packet = RTPPacket(sequenceNumber: 1, timestamp: 0, ssrc: x.ssrc, payload: [1]).encoded()
        // (Sent until one arrives: the program's maps take the bindings a moment after the binds.)
        XCTAssertTrue(eventually(3, poll: 0) { x.socket.send(packet, to: relay); return y.socket.receiveBytes(timeoutMs: 50) != nil },
                      "forwarded while the server runs")

        server.process.signal(SIGKILL)
        _ = server.process.wait()
        Thread.sleep(forTimeInterval: 0.2)
        // Were the program still attached, its maps would still forward x to y.
        for _ in 0..<3 { x.socket.send(packet, to: relay) }
        XCTAssertNil(y.socket.receiveBytes(timeoutMs: 300), "nothing forwards after the process died")
        withExtendedLifetime([x, y]) {}
    }

    /// A fast path that cannot load leaves every descriptor alone: it once closed fd 0 twice on
    /// its way out, taking whatever held fd 0 (in the suite, a PostgreSQL connection).
    func testAFailedFastPathClosesNoDescriptorOfOthers() throws {
        let saved = dup(0)
        XCTAssertGreaterThanOrEqual(saved, 0)
        let null = open("/dev/null", O_RDONLY)
        XCTAssertEqual(dup2(null, 0), 0)
        close(null)
        defer { dup2(saved, 0); close(saved) }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("none.bpf.o").path
        XCTAssertThrowsError(try RelayFastPath(objectPath: missing, host: "127.0.0.1", port: 9))
        XCTAssertNotEqual(fcntl(0, F_GETFD), -1, "fd 0 is still open")
    }

    func testOnRefusesToStartWithoutTheProgram() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("none.bpf.o").path
        XCTAssertThrowsError(try ServerHarness { $0.relayFastPath = .on; $0.relayFastPathObject = missing }) { error in
            guard case .fastPath(let why)? = error as? ServerStartError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("no fast-path object"), why)
        }
        // auto: says why in the log and serves with the socket relay.
        let h = try ServerHarness { $0.relayFastPath = .auto; $0.relayFastPathObject = missing }
        defer { h.stop(); h.removeData() }
        let a = try h.joinAndBind("a", session: "s"), b = try h.joinAndBind("b", session: "s")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: h.server.mediaPort))
        a.socket.send(RTPPacket(sequenceNumber: 1, timestamp: 0, ssrc: a.joined.you.ssrc, payload: [1]).encoded(), to: relay)
        XCTAssertNotNil(b.socket.receiveDatagram(), "forwarded by the workers")
        XCTAssertEqual(h.server.relayCounters?.fastPathForwarded.load(ordering: .relaxed), 0)
    }
}
