import Foundation

/// Files only the server's user may read, private from their first byte: directories 0700,
/// files written to a 0600 temporary (O_EXCL) then renamed into place. Keys, certificates'
/// private keys and the database live in them.
///
/// Thread rules: any thread (no shared state).
enum PrivateFiles {
    /// Creates `path` (and parents) mode 0700; an existing directory others can enter is
    /// tightened. Returns false when it cannot be made private.
    static func directory(_ path: String) -> Bool {
        var st = stat()
        if stat(path, &st) != 0 {
            do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
            catch { return false }
        } else if st.st_mode & S_IFMT != S_IFDIR {
            return false
        }
        guard stat(path, &st) == 0 else { return false }
        if st.st_mode & 0o077 != 0 { return chmod(path, st.st_mode & 0o700) == 0 }
        return true
    }

    /// Why `directory(path)` failed, as an operator reads it: something else in the way, the
    /// first missing directory the system would not make (its error), or the mode it would not take.
    static func whyNotDirectory(_ path: String) -> String {
        var st = stat()
        if stat(path, &st) == 0 {
            return st.st_mode & S_IFMT == S_IFDIR ? "it cannot be made private (0700)" : "a file that is not a directory is in the way"
        }
        // The first directory of the path that is missing, and what making it says.
        var missing = path
        var parent = (path as NSString).deletingLastPathComponent
        while !parent.isEmpty, stat(parent, &st) != 0 {
            missing = parent
            parent = (parent as NSString).deletingLastPathComponent
        }
        if !parent.isEmpty, st.st_mode & S_IFMT != S_IFDIR { return "\(parent) is a file, not a directory" }
        guard mkdir(missing, 0o700) != 0 else {
            rmdir(missing)
            return "it could not be made"
        }
        return "\(missing): \(String(cString: strerror(errno)))"
    }

    /// Writes `data` to `path` atomically, never visible with wider permissions than `mode`
    /// (0600; a certificate, which is public, may be 0644).
    static func write(_ data: Data, to path: String, mode: mode_t = 0o600) -> Bool {
        let tmp = path + ".tmp-\(getpid())"
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { return false }
        let wrote = data.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return raw.count == 0 }
            var off = 0
            while off < raw.count {
                let n = Foundation.write(fd, base + off, raw.count - off)
                if n <= 0 { return false }
                off += n
            }
            return true
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard wrote, synced, rename(tmp, path) == 0 else {
            unlink(tmp)
            return false
        }
        return true
    }

    /// Creates an empty 0600 file if `path` does not exist (SQLite then keeps that mode for the
    /// database and gives its -wal and -shm files the same).
    /// A file's permission bits (nil: it cannot be stat'ed).
    static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode : nil
    }

    static func create(_ path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }
}
