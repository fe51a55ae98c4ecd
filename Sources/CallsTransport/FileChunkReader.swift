#if canImport(Glibc)
import Glibc
#endif

/// An open file read in chunks at given offsets (a download's body as it is sent). Owns its
/// descriptor: closed when this is released.
///
/// Thread rules: one thread at a time (the web server's service thread).
final class FileChunkReader {
    private let fd: Int32

    /// Opens `path` for reading; nil when it cannot be opened (gone, not readable).
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Up to `count` bytes from `offset` into `buffer` (which must hold them); the number read,
    /// 0 at the end of the file, -1 on an error.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
