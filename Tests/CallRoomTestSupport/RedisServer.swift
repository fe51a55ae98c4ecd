import Foundation
#if canImport(Glibc)
import Glibc
import CallsRedis
#endif

/// A real, throwaway Redis server (Debian `redis-server`) for the cluster's tests, listening on
/// a Unix socket in a temporary directory only (no TCP port to collide with), nothing persisted.
/// `kill` and `start` again on the same socket play a Redis restart.
public final class RedisServer: @unchecked Sendable {
    public static let binary = "/usr/bin/redis-server"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    private let dir: TemporaryDirectory
    private var process: ManagedProcess?
    public var socket: String { dir.file("redis.sock") }
    /// What RedisClient takes.
    public var address: String { "unix://" + socket }

    public init() throws {
        // As callroomd does: hiredis writes with write(2), and a write to a Redis this test
        // stopped is then EPIPE, not the death of the test process.
        signal(SIGPIPE, SIG_IGN)
        dir = TemporaryDirectory("callroom-redis")
        try start()
    }

    deinit {
        kill()
        dir.remove()
    }

    /// Starts it and waits until its socket accepts connections.
    public func start() throws {
        unlink(socket)
        let p = try ManagedProcess(Self.binary, ["--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "",
                                                 "--appendonly", "no", "--dir", dir.path, "--loglevel", "warning"])
        process = p
        // Until it accepts a connection: the socket file appears at bind(2), a moment before
        // listen(2), and a command sent in between is refused.
        if eventually(2, poll: 0.01, { FileManager.default.fileExists(atPath: socket) && Self.accepts(socket) }) { return }
        throw TestFailure("redis-server did not start: \(p.errorOutput)")
    }

    /// Whether a Unix socket at `path` accepts a connection now.
    static func accepts(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// Gone at once, as a crash; everything it held is lost (nothing is persisted).
    public func kill() {
        process?.signal(SIGKILL)
        _ = process?.wait()
        process = nil
    }
}
