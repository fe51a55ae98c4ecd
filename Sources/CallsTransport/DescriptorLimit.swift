import Foundation

/// The process's open-file limit (RLIMIT_NOFILE): a server raises its soft limit to the hard
/// one at start, then keeps every source of descriptors (connections, files, sockets) inside it.
/// Any thread (`setrlimit` is process-wide: call it once, before the listeners open).
public enum DescriptorLimit {
    /// Raises the soft limit to the hard one; returns the limit before and the one in force now.
    @discardableResult
    public static func raiseToHard() -> (before: Int, now: Int) {
        var r = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0 else { return (0, 0) }
        let before = Int(clamping: r.rlim_cur)
        if r.rlim_cur < r.rlim_max {
            var raised = r
            raised.rlim_cur = r.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { return (before, Int(clamping: r.rlim_max)) }
        }
        return (before, before)
    }

    /// The soft limit in force.
    public static var current: Int {
        var r = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0 else { return 0 }
        return Int(clamping: r.rlim_cur)
    }

    /// How many descriptors client connections may take out of `limit`: what is left after a
    /// reserve for everything else the server opens (relay sockets, the store, recordings'
    /// files, outbound HTTP): an eighth of the limit, at least 64 and at most 4,096.
    public static func connectionBudget(limit: Int) -> Int {
        let reserve = min(4096, max(64, limit / 8))
        return max(16, limit - reserve)
    }
}
