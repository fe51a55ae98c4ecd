#if canImport(Glibc)
import Glibc
#endif

/// Free space on the file system that holds a path. A value; any thread.
public enum DiskSpace {
    /// Bytes an unprivileged process may still write there (`statvfs`'s `f_bavail`); nil when the
    /// path cannot be examined.
    public static func availableBytes(_ path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
