import CallroomKit
import CallsCore
import CallsServer
import CallsStore
import CallsTransport
import Foundation
import Synchronization

/// `callroom bench webhooks [--calls N] [--outage-calls N] [--outage-seconds S]`: webhook delivery in one process — an
/// in-process callroomd (temporary data directory) whose webhook is an in-process receiver (the
/// same libwebsockets HTTP server), and callers over real signalling. Each call is rung and
/// cancelled (two events). Reports the delay from each transition (its time in `data`) to its
/// arrival, and the rate sustained; then, with the receiver down, queues `--outage-calls` calls'
/// events (the outage lasting at least `--outage-seconds`) and measures how long the backlog
/// takes to drain once the receiver is back, and how many requests the dead receiver got.
enum WebhookBench {
    /// Records arrivals: (transition time ms from the body, arrival ms).
    final class Receiver: WebServerDelegate, Sendable {
        let arrivals = Locked<[(Int64, Int64)]>([])
        let up = Atomic<Bool>(true)
        /// Requests answered 503 (the receiver was down).
        let refused = Atomic<Int>(0)
        func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
            let now = epochMilliseconds()
            guard up.load(ordering: .relaxed) else {
                refused.add(1, ordering: .relaxed)
                return respond(HTTPResponse(status: 503, body: []))
            }
            if let o = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any], let d = o["data"] as? [String: Any] {
                let t = (o["trigger"] as? String == "call_initiated" ? d["initiatedAt"] : d["endedAt"]) as? Int64 ?? now
                arrivals.withLock { $0.append((t, now)) }
            }
            respond(HTTPResponse(status: 200, body: Array("ok".utf8)))
        }
        func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {}
        func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {}
        func webServer(_ server: WebServer, didClose connection: UInt64) {}
        var count: Int { arrivals.withLock { $0.count } }
    }

    static func run(calls: Int, outageCalls: Int, outageSeconds: Int = 0) -> Never {
        let receiver = Receiver()
        let web = WebServer(host: "127.0.0.1", delegate: receiver)
        let port: Int
        do { port = try web.start(port: 0) } catch { Console.fail("receiver: \(error)", code: ExitCode.failure) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-hookbench-\(getpid())").path
        var config = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dir)
        config.ringLimits = .unlimited  // (the webhook path is measured: many calls between the same users)
        config.logLevel = .error
        config.restRequestsPerSecond = 100_000
        config.webhooks = [WebhookConfig(id: "bench", url: "http://127.0.0.1:\(port)/hook", secret: "bench-secret-bench-secret")]
        config.webhookMaxAttempts = 100
        let server = CallServer(configuration: config)
        do { try server.start() } catch { Console.fail("server: \(error)", code: ExitCode.failure) }
        signal(SIGPIPE, SIG_IGN)
        /// Stops both servers and removes the data directory, then exits (a `defer` in the task
        /// never ran: every way out of it is an `exit`, and each run left its directory in /tmp).
        func finish(_ code: Int32, failure: String? = nil) -> Never {
            server.stop()
            web.stop()
            try? FileManager.default.removeItem(atPath: dir)
            if let failure { Console.fail(failure, code: code) }
            exit(code)
        }
        Task {
            do throws(SignalDevice.Failure) {
                guard let url = URL(string: server.url) else { finish(ExitCode.failure, failure: "server URL \(server.url)") }
                let (app, key) = (server.keys.appId, server.keys.authKey)
                // Many callers (each under the per-connection signalling limit), one callee.
                let callee = try await SignalDevice.online(url, app, key, "hook-callee")
                var callers: [SignalDevice] = []
                for i in 0..<20 { callers.append(try await SignalDevice.online(url, app, key, "hook-caller-\(i)")) }
                /// Rings and cancels `n` calls, twenty at a time (one per caller), each caller under the
                /// per-connection signalling limit.
                func ring(_ n: Int) {
                    func initiated(_ c: SignalDevice) -> [String] {
                        c.messages.compactMap { m -> String? in if case .call(.initiated, let x, _) = m { return x.sessionId }; return nil }
                    }
                    var done = 0
                    while done < n {
                        let batch = Array(callers.prefix(min(20, n - done)))
                        let known = batch.map { Set(initiated($0)) }
                        for c in batch { c.send(.initiateCall(receiverId: "hook-callee", receiverType: .user, type: .audio, timeoutSeconds: 60)) }
                        for (c, old) in zip(batch, known) {
                            if case (.call(_, let call, _), _)? = c.wait(timeout: 10, { m in
                                if case .call(.initiated, let x, _) = m { return !old.contains(x.sessionId) }
                                return false
                            }) {
                                c.send(.rejectCall(sessionId: call.sessionId, status: .cancelled))
                            }
                        }
                        usleep(60_000)
                        done += batch.count
                    }
                }
                _ = callee
                let t0 = epochMilliseconds()
                ring(calls)
                let want = 2 * calls
                while receiver.count < want && epochMilliseconds() - t0 < 120_000 { usleep(10_000) }
                let t1 = epochMilliseconds()
                let delays = receiver.arrivals.withLock { $0.map { Double($0.1 - $0.0) } }.sorted()
                func q(_ p: Double) -> Double { delays.isEmpty ? .nan : delays[min(delays.count - 1, Int(Double(delays.count - 1) * p))] }
                Console.out("callroom bench webhooks: \(calls) calls rung and cancelled (\(want) events) through an in-process callroomd")
                Console.out(String(format: "delivered %d of %d; transition → receiver p50 %.1f ms, p99 %.1f ms, max %.1f ms; %.0f events/s over the run",
                                   delays.count, want, q(0.5), q(0.99), delays.last ?? .nan, Double(delays.count) * 1000 / Double(max(1, t1 - t0))))
                guard outageCalls > 0 else { finish(ExitCode.ok) }
                receiver.up.store(false, ordering: .relaxed)
                let before = receiver.count
                let down = epochMilliseconds()
                ring(outageCalls)
                usleep(1_000_000)
                while epochMilliseconds() - down < Int64(outageSeconds) * 1000 { usleep(50_000) }
                receiver.up.store(true, ordering: .relaxed)
                let t2 = epochMilliseconds()
                let refused = receiver.refused.load(ordering: .relaxed)
                while receiver.count < before + 2 * outageCalls && epochMilliseconds() - t2 < 300_000 { usleep(10_000) }
                let t3 = epochMilliseconds()
                Console.out(String(format: "outage %.1f s: %d events queued; the dead receiver got %d requests (answered 503)",
                                   Double(t2 - down) / 1000, 2 * outageCalls, refused))
                Console.out(String(format: "backlog of %d events drained in %.1f s after the receiver came back (%d delivered)",
                                   2 * outageCalls, Double(t3 - t2) / 1000, receiver.count - before))
                finish(ExitCode.ok)
            } catch {
                finish(ExitCode.failure, failure: error.message)
            }
        }
        dispatchMain()
    }
}
