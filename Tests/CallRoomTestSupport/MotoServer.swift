import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// moto's S3-compatible server (PyPI `moto[server]`, installed by scripts/install-python-deps.sh
/// into `.build/moto-venv`) on a free loopback port, for object-storage tests; stopped on `stop()`
/// or deinit. Any access key works with it (moto checks signatures only in its IAM mode).
///
/// Thread rules: one test thread drives it.
public final class MotoServer {
    public let port: Int
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    private let process: ManagedProcess

    /// The moto_server executable (`CALLROOM_MOTO_SERVER` overrides), or nil when not installed.
    public static var binary: String? {
        let candidates = [ProcessInfo.processInfo.environment["CALLROOM_MOTO_SERVER"],
                          FileManager.default.currentDirectoryPath + "/.build/moto-venv/bin/moto_server"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public init() throws {
        guard let binary = Self.binary else { throw TestFailure("moto_server is not installed (scripts/install-python-deps.sh)") }
        port = try Self.freePort()
        process = try ManagedProcess(binary, ["-H", "127.0.0.1", "-p", String(port)])
        let url = endpoint
        guard eventually(30, poll: 0.1, { BlockingHTTP.request("GET", url + "/moto-api/").status > 0 }) else {
            process.signal(SIGKILL)
            throw TestFailure("moto_server did not start: \(process.errorOutput.suffix(2000))")
        }
    }

    deinit { stop() }

    public func stop() {
        process.signal(SIGTERM)
        if process.wait(timeout: 5) == nil { process.signal(SIGKILL); _ = process.wait(timeout: 5) }
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 } }
        guard bound else { throw TestFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
