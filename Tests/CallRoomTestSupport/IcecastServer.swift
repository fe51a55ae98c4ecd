import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real Icecast 2 server (Debian `icecast2`) on a loopback port, started by the test in a
/// temporary directory, for the live stream's tests: start, kill (as a crash would), start
/// again on the same port, and listen to a mount as a player does.
public final class IcecastServer: @unchecked Sendable {
    public static let binary = "/usr/bin/icecast2"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public let port: Int
    public let password: String
    private let dir: TemporaryDirectory
    private var process: ManagedProcess?

    public init(password: String = "s3cret-source") throws {
        self.password = password
        dir = TemporaryDirectory("callroom-icecast")
        port = try FreePort.tcp()
        try FileManager.default.createDirectory(atPath: dir.file("log"), withIntermediateDirectories: true)
        // Icecast will not run as root: it changes to nobody, which must be able to write its logs.
        chmod(dir.path, 0o777)
        chmod(dir.file("log"), 0o777)
        let xml = """
            <icecast>
              <limits><sources>8</sources><source-timeout>5</source-timeout><burst-size>0</burst-size></limits>
              <authentication><source-password>\(password)</source-password><admin-user>admin</admin-user><admin-password>\(password)-admin</admin-password></authentication>
              <hostname>127.0.0.1</hostname><location>test</location><admin>test@localhost</admin>
              <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
              <paths><logdir>\(dir.file("log"))</logdir><webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot></paths>
              <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>3</loglevel></logging>
              <security><chroot>0</chroot><changeowner><user>nobody</user><group>nogroup</group></changeowner></security>
            </icecast>
            """
        try xml.write(toFile: dir.file("icecast.xml"), atomically: true, encoding: .utf8)
        chmod(dir.file("icecast.xml"), 0o644)
    }

    deinit {
        stop()
        dir.remove()
    }

    /// Starts it and waits until it answers.
    public func start() throws {
        let p = try ManagedProcess(Self.binary, ["-c", dir.file("icecast.xml")])
        process = p
        if eventually(5, poll: 0.05, { BlockingHTTP.request("GET", "http://127.0.0.1:\(port)/status-json.xsl").status == 200 }) { return }
        throw TestFailure("icecast2 did not start: \(p.errorOutput)")
    }

    /// Gone at once, as a crash (connections reset).
    public func kill() {
        process?.signal(SIGKILL)
        _ = process?.wait()
        process = nil
    }

    public func stop() {
        process?.signal(SIGTERM)
        if process?.wait(timeout: 5) == nil { process?.signal(SIGKILL); _ = process?.wait() }
        process = nil
    }

    /// The mounts with a source connected now.
    public func mounts() -> [String] {
        let status = BlockingHTTP.request("GET", "http://127.0.0.1:\(port)/status-json.xsl").json["icestats"] as? [String: Any]
        let sources: [[String: Any]]
        if let one = status?["source"] as? [String: Any] { sources = [one] } else { sources = status?["source"] as? [[String: Any]] ?? [] }
        return sources.compactMap { ($0["listenurl"] as? String).flatMap { URL(string: $0)?.path } }
    }

    /// Every mount a source logged in at so far, in order (from Icecast's own log: a source
    /// shows in `mounts()` only once it has sent its stream's headers).
    public func sourceLogins() -> [String] {
        let log = (try? String(contentsOfFile: dir.file("log/error.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            guard let r = line.range(of: "Source logging in at mountpoint \"") else { return nil }
            return line[r.upperBound...].split(separator: "\"").first.map(String.init)
        }
    }

    /// Listens to `mount` as a player would for `seconds`; the stream's bytes (HTTP headers off).
    public func listen(mount: String, seconds: Double) -> (status: String, body: Data) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return ("", Data()) }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { return ("", Data()) }
        let request = "GET \(mount) HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: callroom-test\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var all = Data()
        var buf = [UInt8](repeating: 0, count: 16_384)
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            let n = recv(fd, &buf, buf.count, 0)
            if n > 0 { all.append(contentsOf: buf[0..<n]) } else if n == 0 { break }
        }
        guard let split = all.range(of: Data("\r\n\r\n".utf8)) else { return (String(decoding: all.prefix(200), as: UTF8.self), Data()) }
        let head = String(decoding: all[..<split.lowerBound], as: UTF8.self)
        return (head.components(separatedBy: "\r\n").first ?? "", Data(all[split.upperBound...]))
    }
}
