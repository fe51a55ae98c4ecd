import Foundation

/// A process's CPU time and resident memory, read from /proc (Linux): for benchmarks and the
/// caption workers' figures.
///
/// Thread rules: any thread (no state).
public enum ProcessUsage {
    /// utime + stime of process `pid`, in seconds (from /proc/PID/stat); nil when it cannot be read.
    public static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return nil }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Resident memory of process `pid` in KiB (VmRSS from /proc/PID/status); nil when it cannot be read.
    public static func residentKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// Runs `body` while this process's resident memory is sampled every 10 ms: its result, and
    /// how far the memory rose above where it was before (KiB; the peak, not the end).
    public static func growthKiB<T>(during body: () throws -> T) rethrows -> (result: T, grewKiB: Int) {
        let before = residentKiB(getpid()) ?? 0
        let peak = Locked(before)
        let sampler = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "callroom.rss-sampler"))
        sampler.schedule(deadline: .now(), repeating: .milliseconds(10))
        sampler.setEventHandler { if let kib = residentKiB(getpid()) { peak.withLock { $0 = max($0, kib) } } }
        sampler.resume()
        defer { sampler.cancel() }
        let result = try body()
        if let kib = residentKiB(getpid()) { peak.withLock { $0 = max($0, kib) } }
        return (result, peak.withLock { $0 } - before)
    }
}
