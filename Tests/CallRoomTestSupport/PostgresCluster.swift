import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which engine the store's tests run against: SQLite, or PostgreSQL when the environment says
/// `CALLROOM_TEST_STORE=postgres` — scripts/test.sh runs the store's and the server's tests a
/// second time that way, so the whole store suite runs on both.
public enum StoreBackend: String, Sendable {
    case sqlite
    case postgres

    public static var current: StoreBackend {
        ProcessInfo.processInfo.environment["CALLROOM_TEST_STORE"].flatMap(StoreBackend.init(rawValue:)) ?? .sqlite
    }
}

/// A real, throwaway PostgreSQL cluster (Debian `postgresql`) for the store's tests: `initdb`
/// into a temporary directory, `pg_ctl start` listening on a Unix socket in that directory only
/// (no TCP port to collide with), each test its own fresh database. Started once per test
/// process (`shared`), stopped at exit. PostgreSQL refuses to run as root: as root, initdb and
/// the server run as the `postgres` user the package creates.
///
/// Thread rules: `shared` and `createDatabase` from any thread (a lock serialises them).
public final class PostgresCluster: @unchecked Sendable {
    public let dir: String
    public let port: Int
    /// Where the server's binaries are (Debian keeps them off PATH).
    public static var binDirectory: String? {
        let fm = FileManager.default
        if let versions = try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            for v in versions.sorted(by: >) where fm.isExecutableFile(atPath: "/usr/lib/postgresql/\(v)/bin/initdb") {
                return "/usr/lib/postgresql/\(v)/bin"
            }
        }
        return fm.isExecutableFile(atPath: "/usr/bin/initdb") ? "/usr/bin" : nil
    }
    public static var isInstalled: Bool { binDirectory != nil }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: PostgresCluster?
    nonisolated(unsafe) private static var failure: String?
    private var databases = 0

    /// The process's cluster, started on first use; throws (with initdb's or pg_ctl's words)
    /// when it cannot start.
    public static func shared() throws -> PostgresCluster {
        try lock.withLock {
            if let c = started { return c }
            if let f = failure { throw TestFailure(f) }
            do {
                let c = try PostgresCluster()
                started = c
                atexit { PostgresCluster.stopShared() }
                return c
            } catch {
                failure = "\(error)"
                throw error
            }
        }
    }

    private static func stopShared() { started?.destroy() }

    /// A cluster of its own (tests that stop and start the server); `shared` for the rest.
    public init() throws {
        guard let bin = Self.binDirectory else { throw Self.error("PostgreSQL is not installed (scripts/install-deps.sh installs it)") }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        port = Int.random(in: 20_000...60_000)
        if getuid() == 0 { _ = Self.run("/bin/chown", ["postgres:postgres", dir]) }
        let initdb = Self.run(bin + "/initdb", ["-D", dir + "/data", "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
        guard initdb.status == 0 else { throw Self.error("initdb failed: \(initdb.output)") }
        try start()
    }

    /// Starts the server (again, after `stop`): the same data, the same socket.
    public func start() throws {
        guard let bin = Self.binDirectory else { throw Self.error("PostgreSQL is not installed") }
        let options = "-k \(dir) -c listen_addresses='' -p \(port) -F -c max_connections=200"
        let r = Self.run(bin + "/pg_ctl", ["-D", dir + "/data", "-l", dir + "/server.log", "-o", options, "-w", "-t", "30", "start"])
        guard r.status == 0 else {
            let log = (try? String(contentsOfFile: dir + "/server.log", encoding: .utf8)) ?? ""
            throw Self.error("pg_ctl start failed: \(r.output) \(log.suffix(800))")
        }
    }

    /// Stops the server for good and removes its directory (the data, the WAL of every test
    /// database: a gigabyte or two after a suite). Left behind, 620 of them once filled this
    /// machine's disk and the next run's PostgreSQL could not create a database.
    public func destroy() {
        stop(mode: "immediate")
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit { destroy() }

    /// Stops the server: `fast` (clean) or `immediate` (as a crash: no checkpoint).
    public func stop(mode: String = "fast") {
        guard let bin = Self.binDirectory else { return }
        _ = Self.run(bin + "/pg_ctl", ["-D", dir + "/data", "-m", mode, "-w", "stop"])
    }

    /// A libpq connection string for `database` on this cluster.
    public func url(_ database: String = "postgres") -> String { "host=\(dir) port=\(port) user=postgres dbname=\(database)" }

    private var byDataDir: [String: String] = [:]

    /// The database of a server whose data directory is `dataDir`: a new one the first time, the
    /// same one when a test restarts that server on the same directory.
    public func database(forDataDir dataDir: String) throws -> String {
        if let url = Self.lock.withLock({ byDataDir[dataDir] }) { return url }
        let url = try createDatabase()
        Self.lock.withLock { byDataDir[dataDir] = url }
        return url
    }

    /// A new, empty database (its connection string).
    public func createDatabase() throws -> String {
        let name = Self.lock.withLock { databases += 1; return "t\(getpid())_\(databases)" }
        guard let bin = Self.binDirectory else { throw Self.error("PostgreSQL is not installed") }
        let r = Self.run(bin + "/createdb", ["-h", dir, "-p", "\(port)", "-U", "postgres", name])
        guard r.status == 0 else { throw Self.error("createdb failed: \(r.output)") }
        return url(name)
    }

    /// Runs a PostgreSQL tool (as `postgres` when we are root), returning its status and output
    /// (a `DetachedTool`: `pg_ctl start` leaves the server running).
    static func run(_ tool: String, _ args: [String]) -> (status: Int32, output: String) {
        let asRoot = getuid() == 0 && !tool.hasPrefix("/bin/")
        return DetachedTool.run(asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + args : [tool] + args, timeout: 120)
    }

    private static func error(_ m: String) -> TestFailure { TestFailure(m) }
}
