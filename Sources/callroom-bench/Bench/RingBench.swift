import CallroomKit
import CallsCore
import CallsTransport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `callroom bench ring --server URL --auth-key KEY [--calls N] [--simultaneous N] [--server-pid PID]`:
/// ringing latency over real signalling against a running callroomd. Each device is a real
/// WebSocket that logged in over REST and said `hello`; times are taken on the WebSocket's
/// thread as each message arrives.
///
/// - one at a time (`--calls`, 10 a second: under the per-connection signalling limit):
///   initiateCall sent → the callee's `incoming`; acceptCall sent → the caller's `accepted`;
///   acceptCall sent → both ends in the call's room, each having received the other's first
///   RTP packet through the relay (call token, join, bind, audio); then the call is ended;
/// - all at once (`--simultaneous`): N callers ring N callees together (2N users online);
///   latency of every ring, and the server's CPU and memory for it (with `--server-pid`).
enum RingBench {
    static func run(_ args: ArgumentScanner) -> Never {
        guard let server = args["server"], let key = args["auth-key"], let url = SDKSetup.serverURL(server) else {
            Console.fail("bench ring needs --server URL and --auth-key KEY")
        }
        let calls = Int(args["calls"] ?? "100") ?? 0, together = Int(args["simultaneous"] ?? "0") ?? -1
        guard (1...10_000).contains(calls), (0...5_000).contains(together) else { Console.fail("--calls 1…10000, --simultaneous 0…5000") }
        let pid = args["server-pid"].flatMap(Int32.init)
        signal(SIGPIPE, SIG_IGN)
        Task {
            do throws(BenchError) {
                let app = try await appID(url)
                let (caller, callee) = (try await SignalDevice.online(url, app, key, "ring-caller"), try await SignalDevice.online(url, app, key, "ring-callee"))
                var ring: [Double] = [], accept: [Double] = [], flowing: [Double] = []
                var seen = Set<String>()
                for _ in 0..<calls {
                    // Paced under the server's per-connection signalling limit (50 messages a second:
                    // the caller sends four per call).
                    usleep(100_000)
                    let t0 = monotonicNanoseconds()
                    caller.send(.initiateCall(receiverId: "ring-callee", receiverType: .user, type: .audio, timeoutSeconds: 30))
                    guard case (.call(_, let call, _), let t1)? = callee.wait({ if case .call(.incoming, let c, _) = $0 { return !seen.contains(c.sessionId) }; return false }) else {
                        let why = caller.wait(timeout: 0) { if case .error = $0 { return true }; return false }.map { "\($0.0)" } ?? "no error"
                        throw BenchError("call \(ring.count + 1): no incoming call (\(why))")
                    }
                    seen.insert(call.sessionId)
                    ring.append(Double(t1 - t0) / 1e6)
                    let t2 = monotonicNanoseconds()
                    callee.send(.acceptCall(sessionId: call.sessionId))
                    guard let (_, t3) = caller.wait({ if case .call(.accepted, let c, _) = $0 { return c.sessionId == call.sessionId }; return false }) else {
                        throw BenchError("no accepted")
                    }
                    accept.append(Double(t3 - t2) / 1e6)
                    // Both join the call's room and send audio; "flowing" when each has heard the other.
                    // Both ends at once, as two clients would.
                    let sid = call.sessionId
                    let ta = Task { () async -> Result<Media, BenchError> in
                        do throws(BenchError) { return .success(try await caller.joinRoom(sid)) } catch { return .failure(error) }
                    }
                    let tb = Task { () async -> Result<Media, BenchError> in
                        do throws(BenchError) { return .success(try await callee.joinRoom(sid)) } catch { return .failure(error) }
                    }
                    let am = try await ta.value.get(), bm = try await tb.value.get()
                    let t4 = await Task.detached { Self.firstPacketBothWays((am.socket, am.relay, am.ssrc), (bm.socket, bm.relay, bm.ssrc)) }.value
                    flowing.append(Double(t4 - t2) / 1e6)
                    for side in [am, bm] {
                        side.room.send(.leave)
                        side.socket.close()
                    }
                    caller.send(.endCall(sessionId: call.sessionId))
                    _ = caller.wait({ if case .call(.ended, let c, _) = $0 { return c.sessionId == call.sessionId }; return false })
                }
                Console.out("callroom bench ring: \(calls) calls one at a time over real signalling (\(url.absoluteString))")
                Console.out(report("ring (initiateCall → incoming)", ring))
                Console.out(report("accept (acceptCall → caller's accepted)", accept))
                Console.out(report("accept → both in the room hearing each other (token, join, bind, first RTP each way)", flowing))
                if together > 0 { try await simultaneous(url, app, key, together, pid) }
                exit(ExitCode.ok)
            } catch {
                Console.fail(error.message, code: ExitCode.failure)
            }
        }
        dispatchMain()
    }

    static func simultaneous(_ url: URL, _ app: String, _ key: String, _ n: Int, _ pid: Int32?) async throws(BenchError) {
        var callers: [SignalDevice] = [], callees: [SignalDevice] = []
        for i in 0..<n {
            callers.append(try await SignalDevice.online(url, app, key, "ring-a\(i)"))
            callees.append(try await SignalDevice.online(url, app, key, "ring-b\(i)"))
        }
        let rss0 = pid.flatMap(ProcessUsage.residentKiB), cpu0 = pid.flatMap(ProcessUsage.cpuSeconds)
        let t0 = monotonicNanoseconds()
        for (i, c) in callers.enumerated() { c.send(.initiateCall(receiverId: "ring-b\(i)", receiverType: .user, type: .audio, timeoutSeconds: 60)) }
        var latencies: [Double] = []
        for d in callees {
            guard let (_, t) = d.wait(timeout: 30, { if case .call(.incoming, _, _) = $0 { return true }; return false }) else { throw BenchError("a callee never rang") }
            latencies.append(Double(t - t0) / 1e6)
        }
        let cpu1 = pid.flatMap(ProcessUsage.cpuSeconds), rss1 = pid.flatMap(ProcessUsage.residentKiB)
        Console.out("\(n) calls rung at once (\(2 * n) users online):")
        Console.out(report("ring (all sent → each callee's incoming)", latencies))
        if let a = cpu0, let b = cpu1 { Console.out(String(format: "server CPU %.3f s for %d rings (%.3f ms per ring, persisted before announced)", b - a, n, (b - a) * 1000 / Double(n))) }
        if let a = rss0, let b = rss1 { Console.out(String(format: "server memory %.1f MiB → %.1f MiB while ringing", Double(a) / 1024, Double(b) / 1024)) }
        // Hang up: every caller cancels its call.
        for c in callers {
            if case (.call(_, let call, _), _)? = c.wait(timeout: 1, { if case .call(.initiated, _, _) = $0 { return true }; return false }) {
                c.send(.rejectCall(sessionId: call.sessionId, status: .cancelled))
            }
        }
        usleep(200_000)
    }

    static func report(_ what: String, _ xs: [Double]) -> String {
        let s = xs.sorted()
        func q(_ p: Double) -> Double { s.isEmpty ? .nan : s[min(s.count - 1, Int(Double(s.count - 1) * p))] }
        return String(format: "%@: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d)", what, q(0.5), q(0.99), s.last ?? .nan, s.count)
    }

    typealias Media = (room: SignalDevice, socket: UDPSocket, relay: SocketAddress, ssrc: UInt32)

    /// Each side sends an RTP packet every 20 ms (starting now) until it has the other's first
    /// one; returns when both have (monotonic ns).
    static func firstPacketBothWays(_ a: (socket: UDPSocket, relay: SocketAddress, ssrc: UInt32),
                                    _ b: (socket: UDPSocket, relay: SocketAddress, ssrc: UInt32)) -> UInt64 {
        var heard = [false, false]
        var seq: UInt16 = 0
        var buf = [UInt8](repeating: 0, count: 1500)
        let end = monotonicNanoseconds() + 5_000_000_000
        while heard.contains(false) && monotonicNanoseconds() < end {
            seq &+= 1
            for side in [a, b] {
                side.socket.send(RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: side.ssrc, payload: [0xF8, 0xFF, 0xFE]).encoded(),
                                 to: side.relay)
            }
            let tick = monotonicNanoseconds() + 20_000_000
            while monotonicNanoseconds() < tick && heard.contains(false) {
                for (i, side) in [a, b].enumerated() where !heard[i] && side.socket.waitReadable(timeoutMs: 1) {
                    if let (n, _) = buf.withUnsafeMutableBytes({ side.socket.receive(into: $0) }), n >= 12 { heard[i] = true }
                }
            }
        }
        return monotonicNanoseconds()
    }

    typealias BenchError = SignalDevice.Failure

    static func appID(_ url: URL) async throws(BenchError) -> String {
        do { return try await SDKSetup.fetchAppID(server: url) } catch { throw BenchError("\(error.errorCode): \(error.errorDescription)") }
    }
}
