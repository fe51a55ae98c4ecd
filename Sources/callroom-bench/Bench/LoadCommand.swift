import CallroomKit
import CallsCore
import CometChatCallsSDK
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `callroom-bench load` (also `callroom bots --rooms …`): the load generator — R rooms of N bots
/// sending real Opus/RTP, with the server's CPU and memory per packet and per participant.
enum LoadCommand {
    static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["server", "auth-key", "app-id", "duration", "rooms", "per-room", "server-pid", "join-concurrency"],
                                       boolean: ["help", "srtp", "record"])
        } catch { Console.fail("\(error.message)\nRun 'callroom bots --help' for usage.") }
        if args.has("help") { Console.out(BotsCommand.usage); exit(ExitCode.ok) }
        runLoad(args)
    }

    /// The load-generator mode.
    static func runLoad(_ args: ArgumentScanner) -> Never {
        guard let server = args["server"], let key = args["auth-key"] else { Console.fail("--server and --auth-key are required") }
        guard let rooms = Int(args["rooms"] ?? ""), (1...1000).contains(rooms) else { Console.fail("--rooms must be 1…1000") }
        guard let per = Int(args["per-room"] ?? ""), (2...50).contains(per) else { Console.fail("--per-room must be 2…50") }
        guard let duration = Double(args["duration"] ?? ""), duration > 0, duration <= 3600 else { Console.fail("--duration must be 1…3600 seconds") }
        let pidList = (args["server-pid"] ?? "").split(separator: ",").map { Int32($0) }
        guard !pidList.contains(nil) else { Console.fail("--server-pid is PID or PID,PID,…") }
        let pids = pidList.compactMap { $0 }
        let concurrency = Int(args["join-concurrency"] ?? "16") ?? 0
        guard (1...256).contains(concurrency) else { Console.fail("--join-concurrency must be 1…256") }
        var urls: [URL] = []
        for one in server.split(separator: ",").map(String.init) {
            guard let u = SDKSetup.serverURL(one) else { Console.fail("'\(one)' is not a server URL") }
            urls.append(u)
        }
        guard let url = urls.first else { Console.fail("--server needs a URL") }
        // Figures summed over every node (nil when a pid cannot be read, or none was given).
        func summed<T: AdditiveArithmetic>(_ read: (Int32) -> T?) -> T? {
            guard !pids.isEmpty else { return nil }
            var total = T.zero
            for p in pids { guard let v = read(p) else { return nil }; total += v }
            return total
        }
        func cpuSeconds() -> Double? { summed(ProcessUsage.cpuSeconds) }
        func rssKiB() -> Int? { summed(ProcessUsage.residentKiB) }
        func allMetrics() -> [String: Double]? {
            var sum: [String: Double] = [:]
            for u in urls {
                guard let m = metrics(u) else { return nil }
                sum.merge(m, uniquingKeysWith: +)
            }
            return sum
        }
        signal(SIGPIPE, SIG_IGN)
        Task {
            var appID = args["app-id"] ?? ""
            do throws(CometChatCallException) {
                if appID.isEmpty { appID = try await SDKSetup.fetchAppID(server: url) }
                let gen = LoadGenerator(serverURLs: urls, appID: appID, authKey: key, rooms: rooms, perRoom: per,
                                        srtp: args.has("srtp") || args.has("record"))
                let t0 = Date()
                let rss0 = rssKiB()
                let joinCPU0 = cpuSeconds()
                try await gen.joinAll(concurrency: concurrency)
                Console.out(String(format: "callroom bots: %d bots in %d rooms joined in %.1f s", rooms * per, rooms, Date().timeIntervalSince(t0)))
                let rtts = gen.bots.map(\.joinRoundTripMs).sorted()
                var joinLine = String(format: "join_rtt_ms_p50=%.2f join_rtt_ms_p99=%.2f join_rtt_ms_max=%.2f (signalling: join sent, joined received)",
                                      LoadGenerator.Report.quantile(rtts, 0.5), LoadGenerator.Report.quantile(rtts, 0.99), rtts.last ?? .nan)
                if let c0 = joinCPU0, let c1 = cpuSeconds() {
                    joinLine += String(format: "; server_cpu_ms_per_join=%.3f (login, token, WebSocket, join, bind)", (c1 - c0) * 1000 / Double(rooms * per))
                }
                Console.out(joinLine)
                if args.has("record") {
                    let n = gen.startRecordings()
                    try? await Task.sleep(nanoseconds: 1_500_000_000)  // the recorders join and bind
                    Console.out("asked the server to record \(n) rooms")
                }
                let m0 = allMetrics(), fast0 = m0?[fastPathRunSeconds] ?? 0
                let cpu0 = cpuSeconds().map { $0 + fast0 }, fwd0 = m0?[forwardedTotal].map { Int($0) }
                let own0 = ProcessUsage.cpuSeconds(getpid()), machine0 = machineBusySeconds()
                let report = gen.run(seconds: duration)
                try? await Task.sleep(nanoseconds: 100_000_000)  // the fast path's counts reach /metrics every 50 ms
                let m1 = allMetrics(), fast1 = m1?[fastPathRunSeconds] ?? 0
                let cpu1 = cpuSeconds().map { $0 + fast1 }, fwd1 = m1?[forwardedTotal].map { Int($0) }
                let own1 = ProcessUsage.cpuSeconds(getpid()), machine1 = machineBusySeconds()
                let rss1 = rssKiB()
                gen.leaveAll()
                let nominal = rooms * per * Int(duration * 50)
                Console.out(String(format: "sent %d packets (%.1f %% of the nominal 50 a second per bot); expected %d deliveries, got %d",
                                   report.sent, 100 * Double(report.sent) / Double(max(1, nominal)), report.expected, report.delivered))
                if let a = fwd0, let b = fwd1 {
                    Console.out("server forwarded \(b - a) packets (from /metrics)")
                    if let c0 = cpu0, let c1 = cpu1, b > a {
                        var line = String(format: "server_cpu_us_per_packet=%.2f (server CPU %.2f s over the run", (c1 - c0) * 1e6 / Double(b - a), c1 - c0)
                        if fast1 > fast0 { line += String(format: ", of which %.2f s in the kernel fast path's program", fast1 - fast0) }
                        Console.out(line + ")")
                    }
                    if let o0 = own0, let o1 = own1, let c0 = cpu0, let c1 = cpu1, b > a {
                        let both = (o1 - o0) + (c1 - c0)
                        var line = String(format: "generator CPU %.2f s; server + generator %.2f µs per forwarded packet", o1 - o0, both * 1e6 / Double(b - a))
                        if let m0 = machine0, let m1 = machine1 {
                            line += String(format: "; all cores busy %.2f s of %.2f s (/proc/stat, tick-sampled)",
                                           m1 - m0, report.seconds * Double(ProcessInfo.processInfo.activeProcessorCount))
                        }
                        Console.out(line)
                    }
                }
                if let a = rss0, let b = rss1 {
                    Console.out(String(format: "server memory %.1f MiB before the bots joined, %.1f MiB during the run (%.1f KiB per participant)",
                                       Double(a) / 1024, Double(b) / 1024, Double(b - a) / Double(rooms * per)))
                }
                Console.out(String(format: "delivered=%d loss_pct=%.3f jitter_ms_p50=%.2f relay_delay_ms_p99=%.2f", report.delivered,
                                   report.lossPercent, report.p(report.jitterMs, 0.5), report.p(report.delayMs, 0.99)))
                exit(ExitCode.ok)
            } catch {
                Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
            }
        }
        dispatchMain()
    }

    /// Busy time of all cores together (user, nice, system, irq, softirq, steal), in seconds,
    /// from the first line of /proc/stat.
    static func machineBusySeconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let f = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard f.count >= 8 else { return nil }
        let busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
        return busy / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static let forwardedTotal = "callroom_relay_packets_forwarded_total"
    static let fastPathRunSeconds = "callroom_relay_fastpath_run_seconds_total"

    /// The unlabelled values of the server's /metrics, from one request.
    static func metrics(_ url: URL) -> [String: Double]? {
        guard let text = try? String(contentsOf: url.appendingPathComponent("metrics"), encoding: .utf8) else { return nil }
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.contains("{") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let v = Double(parts[1]) { values[String(parts[0])] = v }
        }
        return values
    }
}
