import Foundation
#if canImport(Glibc)
import Glibc
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
        for _ in 0..<200 {
            if FileManager.default.fileExists(atPath: socket) { return }
            usleep(10_000)
        }
        throw NSError(domain: "RedisServer", code: 1, userInfo: [NSLocalizedDescriptionKey: "redis-server did not start: \(p.errorOutput)"])
    }

    /// Gone at once, as a crash; everything it held is lost (nothing is persisted).
    public func kill() {
        process?.signal(SIGKILL)
        _ = process?.wait()
        process = nil
    }
}
