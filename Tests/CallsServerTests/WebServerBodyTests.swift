#if canImport(Glibc)
import Glibc
#endif
import CallRoomTestSupport
import CallsCore
import CallsSupport
import CallsTransport
import Foundation
import XCTest

/// Response bodies go out in chunks: a file is read as it is sent (a download of a long
/// recording holds a chunk of it in memory, not the file), a range of it from its offset, a file
/// gone before the head is written is a 404, one shorter than its head said is a cut connection,
/// and a large in-memory body arrives whole. Real HTTP over loopback (curl as the client).
final class WebServerBodyTests: XCTestCase {
    final class Files: WebServerDelegate, @unchecked Sendable {
        let path: String
        let size: Int
        let big: [UInt8]
        init(path: String, size: Int, big: [UInt8]) { self.path = path; self.size = size; self.big = big }
        func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
            switch request.path {
            case "/whole": respond(HTTPResponse(status: 200, contentType: "video/webm", file: .init(path: path, offset: 0, count: size)))
            case "/range": respond(HTTPResponse(status: 206, contentType: "video/webm", file: .init(path: path, offset: 1_000_003, count: 700_001)))
            case "/gone": respond(HTTPResponse(status: 200, contentType: "video/webm", file: .init(path: path + ".gone", offset: 0, count: 10)))
            case "/short": respond(HTTPResponse(status: 200, contentType: "video/webm", file: .init(path: path, offset: size - 1000, count: 5000)))
            default: respond(HTTPResponse(status: 200, contentType: "application/octet-stream", body: big))
            }
        }
        func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {}
        func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {}
        func webServer(_ server: WebServer, didClose connection: UInt64) {}
    }

    /// curl's exit status, HTTP status and the body it wrote to `out`.
    func curl(_ url: String, out: String) throws -> (exit: Int32, status: Int, body: Data) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "-o", out, "-w", "%{http_code}", url]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let code = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, Int(code) ?? 0, (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data())
    }

    func testFilesAreSentAsTheyAreReadInChunks() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs curl")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("crbody-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // A 3 MB file of known bytes, and a 1 MiB in-memory body.
        let size = 3_000_017
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let path = dir.appendingPathComponent("call.webm").path
        try Data(content).write(to: URL(fileURLWithPath: path))
        let big = (0..<(1 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let files = Files(path: path, size: size, big: big)
        let server = WebServer(host: "127.0.0.1", delegate: files)
        let port = try server.start(port: 0)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(port)"
        let out = dir.appendingPathComponent("out").path

        let whole = try curl(base + "/whole", out: out)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual([UInt8](whole.body), content, "the whole file, byte for byte")
        let range = try curl(base + "/range", out: out)
        XCTAssertEqual(range.status, 206)
        XCTAssertEqual([UInt8](range.body), Array(content[1_000_003..<1_700_004]), "the range, from its offset")
        let memory = try curl(base + "/memory", out: out)
        XCTAssertEqual([UInt8](memory.body), big, "an in-memory body over many chunks")
        XCTAssertEqual(try curl(base + "/gone", out: out).status, 404, "a file gone before the head: 404")
        let short = try curl(base + "/short", out: out)
        XCTAssertNotEqual(short.exit, 0, "a file shorter than its head said: the connection is cut (curl \(short.exit))")
        XCTAssertEqual(try curl(base + "/whole", out: out).body.count, size, "the server goes on serving")
    }

    /// A 512 MiB file (sparse: no disk) downloaded whole: the server's memory does not grow by it.
    func testALargeFileIsNotHeldInMemory() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs curl")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("crbody-sparse-\(getpid())").path
        let size = 512 << 20
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(ftruncate(fd, off_t(size)), 0)
        close(fd)
        defer { unlink(path) }
        let files = Files(path: path, size: size, big: [])  // (the server holds its delegate weakly)
        let server = WebServer(host: "127.0.0.1", delegate: files)
        let port = try server.start(port: 0)
        defer {
            server.stop()
            withExtendedLifetime(files) {}
        }
        let (got, grew) = try ProcessUsage.growthKiB { try curl("http://127.0.0.1:\(port)/whole", out: "/dev/null") }
        XCTAssertEqual(got.status, 200)
        XCTAssertEqual(got.exit, 0)
        XCTAssertLessThan(grew, 64 << 10, "the server grew by \(grew) KiB serving a 512 MiB file")
    }
}
