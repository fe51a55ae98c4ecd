import CallRoomTestSupport
import Foundation
import XCTest

/// The benchmark commands run and end with their machine-readable line (figures themselves are
/// recorded in docs/benchmarks.md, not asserted: this machine is noisy).
final class BenchCommandTests: XCTestCase {
    func run(_ args: [String], environment: [String: String]? = nil) throws -> (Int32?, [String]) {
        let p = try ManagedProcess(BuiltProducts.path("callroom"), ["bench"] + args, environment: environment)
        let status = p.wait(timeout: 60)
        return (status, p.output)
    }

    func testQualityRecordsWhatTheListenerHeard() throws {
        let tmp = TemporaryDirectory("callroom-pesq")
        defer { tmp.remove() }
        let clip = BuiltProducts.packageRoot + "/Resources/clips/ada.wav"
        let (status, out) = try run(["quality", "--loss", "0", "--jitter", "0", "--seconds", "3", "--input", clip,
                                     "--record", tmp.file("heard.wav")])
        XCTAssertEqual(status, 0, "\(out)")
        XCTAssertTrue(out.contains { $0.contains("file:\(clip)") }, "the speaker played the clip: \(out)")
        let heard = try XCTUnwrap(SignalAnalysis.readWAV(tmp.file("heard.wav")), "a WAV was written")
        XCTAssertEqual(heard.rate, 48_000)
        XCTAssertEqual(Double(heard.samples.count) / 48_000, 3, accuracy: 0.5, "every output frame was recorded")
        // Speech (not silence, not a tone) reached the listener: loud windows, and no single bin dominating.
        let loud = SignalAnalysis.windows(heard.samples, size: 4800).filter { SignalAnalysis.rmsDBFS($0) > -35 }
        XCTAssertGreaterThan(loud.count, 5, "at least half a second of speech")
        let (bad, _) = try run(["quality", "--input", tmp.file("missing.wav")])
        XCTAssertEqual(bad, 2)
    }

    func testBenchmarksPrintTheirFigures() throws {
        let (s1, latency) = try run(["latency", "--seconds", "3"])
        XCTAssertEqual(s1, 0)
        let last = try XCTUnwrap(latency.last)
        XCTAssertTrue(last.hasPrefix("mouth_to_ear_ms median="), last)
        XCTAssertFalse(last.contains("nan"), "clicks were heard: \(latency)")
        let (s2, quality) = try run(["quality", "--loss", "10", "--jitter", "30", "--seconds", "3"])
        XCTAssertEqual(s2, 0)
        XCTAssertTrue(quality.last?.hasPrefix("quality loss_pct=10.0 jitter_ms=30") == true, "\(quality)")
        XCTAssertTrue(quality.last?.contains(" stalls=0 ") == true, "playback never stalls: \(quality)")
        XCTAssertTrue(quality.last?.contains("wire_kbps=") == true, "the bandwidth sent: \(quality)")
        let (s3, cpu) = try run(["cpu", "--speakers", "3", "--frames", "50", "--call-seconds", "2"])
        XCTAssertEqual(s3, 0)
        XCTAssertTrue(cpu.last?.hasPrefix("client_cpu_pct=") == true, "\(cpu)")
        // The call: two client processes measured by the kernel, Opus measured inside them.
        let figures = Dictionary(uniqueKeysWithValues: (cpu.last ?? "").split(separator: " ").compactMap { kv -> (String, Double)? in
            let p = kv.split(separator: "=")
            return p.count == 2 ? (String(p[0]), Double(p[1]) ?? -1) : nil
        })
        let process = try XCTUnwrap(figures["process_cpu_pct"], "\(cpu)"), codec = try XCTUnwrap(figures["codec_cpu_pct"], "\(cpu)")
        XCTAssertGreaterThan(codec, 0.05, "Opus ran in the clients: \(cpu)")
        XCTAssertGreaterThan(process, codec, "the process costs more than its codec: \(cpu)")
        XCTAssertEqual(cpu.filter { $0.hasPrefix("client cpu-") && $0.contains("capture ") && $0.contains("of the process") }.count, 2, "\(cpu)")
        XCTAssertTrue(cpu.contains { $0.hasPrefix("allocations: not counted") }, "no counter without the preload: \(cpu)")
        let (s5, floor) = try run(["udp-floor", "--destinations", "3", "--datagrams", "6000"])
        XCTAssertEqual(s5, 0)
        XCTAssertTrue(floor.last?.hasPrefix("udp_floor_us_per_datagram sendmmsg=") == true, "\(floor)")
        XCTAssertFalse(floor.last?.contains("nan") ?? true, "\(floor)")
        let (s4, _) = try run(["teleport"])
        XCTAssertEqual(s4, 2)
    }

    /// The receive chain allocates nothing per packet or per frame once a sender is known:
    /// counted by the allocation counter library (every malloc-family call on the thread).
    func testTheReceiveChainAllocatesNothingInSteadyState() throws {
        let counter = BuiltProducts.path("libcallroom-alloc-counter.so")
        XCTAssertTrue(FileManager.default.fileExists(atPath: counter), "swift build builds the counter library")
        let (status, out) = try run(["cpu", "--speakers", "6", "--frames", "200", "--call-seconds", "0"], environment: ["LD_PRELOAD": counter])
        XCTAssertEqual(status, 0, "\(out)")
        let line = try XCTUnwrap(out.first { $0.hasPrefix("receive_allocs_per_packet=") }, "\(out)")
        XCTAssertTrue(line.hasPrefix("receive_allocs_per_packet=0.000 playback_allocs_per_frame=0.000"), line)
        // The counter counts: setting up five senders (buffers, decoders) allocates.
        let setup = line.components(separatedBy: "; ").last?.split(separator: " ").first.flatMap { Int($0) } ?? 0
        XCTAssertGreaterThan(setup, 5, line)
        XCTAssertTrue(out.contains { $0.hasPrefix("receive path (5 streams)") }, "\(out)")
    }

    func testRingPrintsRingAndAcceptLatencies() throws {
        let tmp = TemporaryDirectory("callroom-benchring")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
        defer { _ = server.stop() }
        let (status, out) = try run(["ring", "--server", server.url, "--auth-key", server.authKey, "--calls", "3", "--simultaneous", "5"])
        XCTAssertEqual(status, 0, "\(out)")
        XCTAssertTrue(out.contains { $0.hasPrefix("ring (initiateCall → incoming): p50 ") && $0.hasSuffix("(3)") }, "\(out)")
        XCTAssertTrue(out.contains { $0.hasPrefix("accept (acceptCall → caller's accepted)") }, "\(out)")
        XCTAssertTrue(out.contains { $0.hasPrefix("accept → both in the room hearing each other") && $0.hasSuffix("(3)") }, "\(out)")
        XCTAssertTrue(out.contains { $0.hasPrefix("ring (all sent → each callee's incoming)") && $0.hasSuffix("(5)") }, "\(out)")
        let (bad, _) = try run(["ring"])
        XCTAssertEqual(bad, 2)
    }

    func testWebhooksBenchDeliversEverythingAndDrainsABacklog() throws {
        // Its in-process server's data directory goes with it (it was left in /tmp on every run).
        let tmp = TemporaryDirectory("callroom-hookbench-test")
        defer { tmp.remove() }
        let (status, out) = try run(["webhooks", "--calls", "6", "--outage-calls", "4"], environment: ["TMPDIR": tmp.path])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp.path), [], "the bench left its data behind")
        XCTAssertEqual(status, 0, "\(out)")
        XCTAssertTrue(out.contains { $0.hasPrefix("delivered 12 of 12; transition → receiver p50 ") }, "\(out)")
        XCTAssertTrue(out.contains { $0.hasPrefix("backlog of 8 events") && $0.hasSuffix("(8 delivered)") }, "\(out)")
    }
}
