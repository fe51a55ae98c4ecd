import CallroomKit
import CallsCore
import CallsTransport
import Foundation

/// `callroom bench cpu`, its call: what a client process costs in a real two-party call, beside
/// what Opus costs inside it. Two `callroom join --headless` processes (this executable) call each
/// other through an in-process callroomd on loopback, Opus 32 kb/s with 20 ms frames, a tone in
/// and nothing out (the workload `scripts/bench-cpu-baresip.sh` gives baresip too). After a
/// warm-up, each child's CPU over the window is read from the kernel per thread
/// (`/proc/PID/task/*/schedstat`, nanoseconds), and its Opus time from its own `media-report`
/// (`encodeCPUNs`, `decodeCPUNs`: thread CPU time around each libopus call).
enum CallCPUBench {
    struct Figures {
        var processPct = 0.0
        var codecPct = 0.0
    }

    /// A child client: its process, and the JSON lines it printed.
    final class Client: Sendable {
        let uid: String
        let process = Process()
        private let input = Pipe(), output = Pipe()
        private let lines = Locked<[String]>([])

        init(uid: String, url: String, authKey: String) throws {
            self.uid = uid
            process.executableURL = URL(fileURLWithPath: BenchForward.sibling("callroom"))  // the shipped client, as users run it
            process.arguments = ["join", "cpu-bench", "--server", url, "--uid", uid, "--auth-key", authKey, "--headless",
                                 "--input", "tone:440", "--output", "null", "--bitrate", "32000"]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            let out = output.fileHandleForReading
            DescriptorReader.startLines(out.fileDescriptor, name: "bench.child", keeping: out) { [weak self] event in
                if case .line(let line) = event { self?.lines.withLock { $0.append(line) } }
            }
            try process.run()
        }

        var pid: Int32 { process.processIdentifier }

        func send(_ command: String) { try? input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8)) }

        /// Whether a line containing `text` has been printed, waiting up to `seconds`.
        func waitFor(_ text: String, seconds: Double) -> [String: Any]? {
            let deadline = Date().addingTimeInterval(seconds)
            repeat {
                let found = lines.withLock { ls -> String? in
                    guard let i = ls.firstIndex(where: { $0.contains(text) }) else { return nil }
                    return ls.remove(at: i)
                }
                if let found { return (try? JSONSerialization.jsonObject(with: Data(found.utf8))) as? [String: Any] ?? [:] }
                Thread.sleep(forTimeInterval: 0.02)
            } while Date() < deadline
            return nil
        }

        /// Thread CPU time of Opus so far (encode, decode), from the child's own media report.
        func codecNanoseconds() -> (encode: UInt64, decode: UInt64)? {
            send("media-report")
            guard let r = waitFor("\"mediaReport\"", seconds: 3)?["mediaReport"] as? [String: Any],
                  let e = (r["encodeCPUNs"] as? NSNumber)?.uint64Value, let d = (r["decodeCPUNs"] as? NSNumber)?.uint64Value else { return nil }
            return (e, d)
        }

        func stop() {
            send("leave")
            let deadline = Date().addingTimeInterval(3)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()  // (Foundation keeps an unwaited Process and its pipes open)
        }
    }

    /// CPU time per thread of `pid` (ns), by thread name (`callroom.capture` …; the kernel keeps 15 characters).
    static func threadTimes(pid: Int32) -> [String: UInt64] {
        var byName: [String: UInt64] = [:]
        let dir = "/proc/\(pid)/task"
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
            guard let stat = try? String(contentsOfFile: "\(dir)/\(tid)/schedstat", encoding: .utf8),
                  let ns = stat.split(separator: " ").first.flatMap({ UInt64($0) }) else { continue }
            let comm = ((try? String(contentsOfFile: "\(dir)/\(tid)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            let name = comm.hasPrefix("callroom.captur") ? "capture" : comm.hasPrefix("callroom.playba") ? "playback"
                : comm.hasPrefix("callroom.receiv") ? "receive" : "other"
            byName[name, default: 0] += ns
        }
        return byName
    }

    static func processCPU() -> UInt64 {
        var u = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
        return UInt64(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1_000_000_000 + UInt64(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000
    }

    /// Runs the call for `seconds` after `warmup` seconds and prints each client's figures;
    /// returns the mean over the two clients.
    static func run(seconds: Int, warmup: Int = 3) -> Figures {
        let room = PipelineBench.startServer()
        defer {
            room.server.stop()
            try? FileManager.default.removeItem(atPath: room.dir)
        }
        let clients: [Client]
        do {
            clients = try ["a", "b"].map { try Client(uid: "cpu-\($0)", url: room.url.absoluteString, authKey: room.server.keys.authKey) }
        } catch { Console.fail("bench cpu: cannot start a client: \(error)", code: ExitCode.failure) }
        defer { clients.forEach { $0.stop() } }
        for c in clients where c.waitFor("onSessionJoined", seconds: 15) == nil {
            Console.fail("bench cpu: client \(c.uid) did not join", code: ExitCode.failure)
        }
        Thread.sleep(forTimeInterval: Double(warmup))
        let before = clients.map { (threadTimes(pid: $0.pid), $0.codecNanoseconds()) }
        let server0 = processCPU(), t0 = monotonicNanoseconds()
        Thread.sleep(forTimeInterval: Double(seconds))
        let after = clients.map { (threadTimes(pid: $0.pid), $0.codecNanoseconds()) }
        let wall = Double(monotonicNanoseconds() - t0)
        let server = Double(processCPU() - server0) / wall * 100
        Console.out("call: two `callroom join --headless` processes, Opus 32 kb/s, 20 ms frames, tone in, nothing out, " +
                    "on an in-process callroomd; \(seconds) s after \(warmup) s of warm-up (% of one core)")
        var figures = Figures()
        for (i, c) in clients.enumerated() {
            let (t0s, k0) = before[i], (t1s, k1) = after[i]
            func pct(_ ns: UInt64) -> Double { Double(ns) / wall * 100 }
            let names = ["capture", "playback", "receive", "other"]
            let per = names.map { n in pct((t1s[n] ?? 0) &- min(t1s[n] ?? 0, t0s[n] ?? 0)) }
            let process = per.reduce(0, +)
            guard let k0, let k1 else { Console.fail("bench cpu: client \(c.uid) gave no media report", code: ExitCode.failure) }
            let encode = pct(k1.encode &- k0.encode), decode = pct(k1.decode &- k0.decode)
            Console.out(String(format: "client %@: process %.2f %% (capture %.2f, playback %.2f, receive %.2f, other %.2f); " +
                               "Opus %.2f %% (encode %.2f, decode %.2f) = %.0f %% of the process",
                               c.uid, process, per[0], per[1], per[2], per[3], encode + decode, encode, decode,
                               process > 0 ? 100 * (encode + decode) / process : 0))
            figures.processPct += process / Double(clients.count)
            figures.codecPct += (encode + decode) / Double(clients.count)
        }
        Console.out(String(format: "callroomd (this process, relaying): %.2f %%", server))
        return figures
    }
}
