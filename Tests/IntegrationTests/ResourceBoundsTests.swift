import CallRoomTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue #34's resource findings against a real `callroomd`: descriptors run out.
final class ResourceBoundsTests: XCTestCase {
    /// CPU seconds `pid` has used (user + system), from /proc.
    private func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let f = stat[stat.index(after: close)...].split(separator: " ")
        guard f.count > 12, let u = Double(f[11]), let s = Double(f[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The attack: more connections than the process has descriptors. Before: every accept
    /// failed with EMFILE, the service thread spun at 100 % of a core and libwebsockets wrote
    /// ~75,000 lines a second. Now start raises the soft limit to the hard one and says so,
    /// connections past the budget are hung up as they are accepted (counted), the server
    /// idles, and once they go it serves again.
    func testRunningOutOfDescriptorsNeitherSpinsNorFloodsTheLog() throws {
        let prlimit = "/usr/bin/prlimit"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: prlimit), "prlimit (util-linux) is not installed")
        let tmp = TemporaryDirectory("callroom-fds")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), launcher: [prlimit, "--nofile=150:250"])
        defer { _ = server.stop() }
        let line = try XCTUnwrap(server.process.errorOutput.split(separator: "\n").first { $0.contains("descriptors") })
        XCTAssertTrue(line.contains("limit=250") && line.contains("was=150"), "the soft limit is raised to the hard one: \(line)")
        let port = try XCTUnwrap(URL(string: server.url)?.port)
        var held: [Int32] = []
        defer { held.forEach { _ = Glibc.close($0) } }
        for _ in 0..<400 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(port).bigEndian
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            held.append(fd)
        }
        let linesBefore = server.process.errorOutput.split(separator: "\n").count
        let cpu0 = cpuSeconds(server.process.pid), t0 = Date()
        Thread.sleep(forTimeInterval: 2)
        let share = (cpuSeconds(server.process.pid) - cpu0) / Date().timeIntervalSince(t0)
        let lines = server.process.errorOutput.split(separator: "\n").count - linesBefore
        XCTAssertLessThan(share, 0.3, "the server idles with its descriptors spent (was a whole core)")
        XCTAssertLessThan(lines, 30, "the log stays quiet (was ~75,000 lines a second): \(server.process.errorOutput.suffix(2000))")
        held.forEach { _ = Glibc.close($0) }
        held = []
        var reply = BlockingHTTP.request("GET", server.url + "/metrics")
        eventually(10, poll: 0.1) {
            reply = BlockingHTTP.request("GET", server.url + "/metrics")
            return reply.status == 200
        }
        XCTAssertEqual(reply.status, 200, "served again once the connections went")
        XCTAssertTrue(reply.text.contains(#"callroom_refused_total{cause="descriptor_budget"}"#) && !reply.text.contains(#"cause="descriptor_budget"} 0"#),
                      reply.text)
    }
}
