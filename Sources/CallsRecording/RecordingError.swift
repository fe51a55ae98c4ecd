#if canImport(Glibc)
import Glibc
#endif

/// Why a recording could not be written or read. Never loses what was written before: a write
/// that fails leaves the pages before it on disk, playable.
public enum RecordingError: Error, Equatable, Sendable, CustomStringConvertible {
    case cannotCreate(path: String, errno: Int32)
    /// A write failed: `ENOSPC` when the disk is full.
    case writeFailed(path: String, errno: Int32)
    case cannotRead(path: String, errno: Int32)
    /// libogg or libopusenc refused.
    case library(String)
    /// The file holds no Ogg Opus stream this code wrote (no `OpusHead` in its first page).
    case notOggOpus(path: String)
    /// `finish` was called already.
    case finished

    public var isDiskFull: Bool { if case .writeFailed(_, let e) = self { return e == ENOSPC }; return false }

    public var description: String {
        switch self {
        case .cannotCreate(let p, let e): return "cannot create \(p): \(String(cString: strerror(e)))"
        case .writeFailed(let p, let e): return "cannot write \(p): \(String(cString: strerror(e)))"
        case .cannotRead(let p, let e): return "cannot read \(p): \(String(cString: strerror(e)))"
        case .library(let m): return m
        case .notOggOpus(let p): return "\(p) is not an Ogg Opus recording"
        case .finished: return "the recording is finished"
        }
    }
}

/// Writes all of `bytes` to `fd` (retrying short writes and EINTR).
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    var off = 0
    while off < bytes.count {
        let n = write(fd, bytes.baseAddress! + off, bytes.count - off)
        if n < 0 {
            if errno == EINTR { continue }
            return errno
        }
        off += n
    }
    return nil
}
