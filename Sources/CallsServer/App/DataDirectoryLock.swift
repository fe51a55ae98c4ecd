import Foundation
import Glibc
import Synchronization

/// One `callroomd` per data directory. A second started on a directory in use took the first's
/// live calls for ones an unclean shutdown had left open and ended them in the store (and would
/// have finished its recordings under it); it is refused at start now, naming the holder. An
/// advisory `flock` on `callroomd.lock` (the holder's process id inside, for the message),
/// opened close-on-exec so no child inherits it, and let go when the server stops or the
/// process ends however it ends (after kill -9 the kernel drops it).
///
/// Thread rules: any thread; `release` is idempotent (and runs when the lock is dropped).
final class DataDirectoryLock: Sendable {
    private let descriptor: Atomic<Int32>

    private init(_ fd: Int32) { descriptor = Atomic(fd) }

    /// Takes the directory, or throws `dataDirInUse` naming the process that holds it.
    static func acquire(_ dir: String) throws(ServerStartError) -> DataDirectoryLock {
        let path = (dir as NSString).appendingPathComponent("callroomd.lock")
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotWrite(path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            var bytes = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &bytes, bytes.count, 0)
            close(fd)
            guard busy else { throw .cannotWrite(path) }
            let pid = n > 0 ? String(decoding: bytes[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            throw .dataDirInUse(dir, holder: Int32(pid).map { "process \($0)" } ?? "another process")
        }
        let line = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, line, line.count, 0)
        return DataDirectoryLock(fd)
    }

    /// Lets the directory go (the file stays: the next owner writes its own id into it).
    func release() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 { close(fd) }
    }

    deinit { release() }
}
