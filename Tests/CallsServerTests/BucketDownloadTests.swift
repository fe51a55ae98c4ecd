#if canImport(Glibc)
import Glibc
#endif
import CallRoomTestSupport
import CallsObjectStorage
@testable import CallsServer
@testable import CallsStore
import CallsSupport
import CallsTransport
import Foundation
import XCTest

/// A node that has no copy of a recording streams it from the bucket as it sends it: any size,
/// whole or a range, byte for byte; a slow client makes the store's GET wait rather than the
/// node hold the file; a client that leaves frees its download; a store that dies mid-file cuts
/// the client's connection (never a body that looks whole). Real moto, real HTTP (curl).
final class BucketDownloadTests: XCTestCase {
    /// Serves `/KEY` from a `StoredFileReader` with an empty data directory (so: the bucket);
    /// `/late/KEY` the same half a second later; an `authtoken` header names whose download it is (the token is the uid here).
    final class Node: WebServerDelegate, @unchecked Sendable {
        let reader: StoredFileReader
        init(reader: StoredFileReader) { self.reader = reader }
        func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
            let reader = reader
            let late = request.path.hasPrefix("/late/")
            let key = String(request.path.dropFirst(late ? 6 : 1))
            let range = request.headers["range"]
            let user = request.headers["authtoken"]
            DispatchQueue.global().asyncAfter(deadline: .now() + (late ? 0.5 : 0)) {
                do {
                    respond(try reader.read(key, rangeSpec: range, gone: "gone", user: user, headOnly: request.isHead).response(contentType: "video/webm"))
                } catch let e as ServerError {
                    respond(HTTPResponse(status: e.status, json: e.json))
                } catch {
                    respond(HTTPResponse(status: 416, json: "{}"))
                }
            }
        }
        func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String) {}
        func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool) {}
        func webServer(_ server: WebServer, didClose connection: UInt64) {}
    }

    var moto: MotoServer!
    var database: TestDatabase!
    /// The node's log lines.
    let logged = EventRecorder<String>()
    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        guard MotoServer.binary != nil else { throw XCTSkip("moto_server is not installed (scripts/install-python-deps.sh)") }
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs curl")
        moto = try MotoServer()
        database = try TestDatabase(.sqlite)  // (the store is not the subject: the PostgreSQL pass skips this class)
        dir = TemporaryDirectory("callroom-bucket-dl")
    }

    override func tearDown() {
        moto?.stop()
        database?.remove()
        dir?.remove()
    }

    var storage: ObjectStorageConfiguration {
        ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: "callroom-recordings", region: "us-east-1",
                                   accessKeyID: "testing", secretAccessKey: "testing-secret")
    }

    /// `size` known bytes uploaded as recording `rid`'s `call.webm`, its row marked stored.
    func stored(_ rid: String, size: Int, store: CallStore) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var x: UInt32 = 2_463_534_242 &+ UInt32(size)
        for i in bytes.indices { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = UInt8(truncatingIfNeeded: x) }
        let file = dir.file("\(rid).webm")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let s3 = try S3Client(storage)
        try s3.createBucket()
        try s3.upload(StoredObject.key(.recording, owner: rid, name: "call.webm"), file: file, contentType: "video/webm")
        try FileManager.default.removeItem(atPath: file)
        var refs = StoreRefs()
        let call = CallRef(value: 1)
        _ = store.commit([StoreRequest(id: 1, commands: [.startCall(call, sessionId: "s-\(rid)", type: "video", mode: "meet", at: 1000),
                                                         .recordingStarted(rid: rid, call: call, sessionId: "s-\(rid)", at: 1000)])], refs: &refs)
        try store.recordingFinished(rid: rid, endedAt: 2000, files: [StoredRecordingFile(name: "call.webm", kind: "video", uid: nil, pid: nil,
                                                                                        durationMs: 1000, bytes: Int64(size))])
        try store.objectStored(key: StoredObject.key(.recording, owner: rid, name: "call.webm"), bytes: Int64(size), nodeID: "node-a", now: 3000)
        return bytes
    }

    func serve(_ store: CallStore, floor: ReaderPace.Floor = .standard) throws -> (server: WebServer, node: Node, base: String) {
        let log = ServerLog(sink: { [logged] in logged.add($0) })
        let node = Node(reader: StoredFileReader(dataDir: dir.file("data"), store: store, objectStorage: storage, log: log,
                                                 readerFloor: floor))
        let server = WebServer(host: "127.0.0.1", delegate: node)
        let port = try server.start(port: 0)
        return (server, node, "http://127.0.0.1:\(port)/recordings/")
    }

    /// A curl left running (a slow client) that reads `url` at `rate` and throws the body away.
    func slowCurl(_ url: String, rate: String, _ extra: [String] = []) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "-o", "/dev/null", "--limit-rate", rate] + extra + [url]
        try p.run()
        return p
    }

    /// curl's exit status, HTTP status, headers and the body it wrote to `out`.
    func curl(_ url: String, _ extra: [String] = [], out: String) throws -> (exit: Int32, status: Int, body: [UInt8]) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "-o", out, "-w", "%{http_code}"] + extra + [url]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let code = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, Int(code) ?? 0, [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()))
    }

    func testABucketFileIsStreamedWholeOrAsARangeByteForByte() throws {
        let store = try database.store()
        store.queuesUploads = true
        let bytes = try stored("rec_big", size: 11 << 20 + 4321, store: store)  // over the download's 1 MiB buffer many times
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        let out = dir.file("out")

        let whole = try curl(base + "rec_big/call.webm", out: out)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.body.count, bytes.count)
        XCTAssertTrue(whole.body == bytes, "the whole file, byte for byte")
        let range = try curl(base + "rec_big/call.webm", ["-H", "Range: bytes=3000000-9000000", "-D", dir.file("head")], out: out)
        XCTAssertEqual(range.status, 206)
        XCTAssertTrue(range.body == Array(bytes[3_000_000...9_000_000]), "the range, from its offset (\(range.body.count) bytes)")
        let head = try String(contentsOfFile: dir.file("head"), encoding: .utf8).lowercased()
        XCTAssertTrue(head.contains("content-range: bytes 3000000-9000000/\(bytes.count)"), head)
        let tail = try curl(base + "rec_big/call.webm", ["-H", "Range: bytes=-10"], out: out)
        XCTAssertEqual(tail.body, Array(bytes.suffix(10)))
        // Gone from the bucket behind the row's back: a 404 before any head (not a 200 that breaks).
        try S3Client(storage).delete(StoredObject.key(.recording, owner: "rec_big", name: "call.webm"))
        XCTAssertEqual(try curl(base + "rec_big/call.webm", out: out).status, 404)
        XCTAssertEqual(try curl(base + "rec_none/call.webm", out: out).status, 404)
        // Every download's thread is over and its slot free.
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == 0 }, "\(StoredFileReader.bucketReadsNow) still running")
    }

    /// A HEAD of a file in the bucket says what a GET would get (its length, a range's
    /// `Content-Range`) without opening a download: no slot taken, nothing asked of the store —
    /// HEADs sent in a loop cannot take the node's 8 downloads from everyone else.
    func testAHEADOfABucketFileOpensNoDownload() throws {
        let store = try database.store()
        store.queuesUploads = true
        let bytes = try stored("rec_head", size: 3 << 20 + 17, store: store)
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        let started = StoredFileReader.bucketReadsStarted.load(ordering: .relaxed)
        for _ in 0..<(StoredFileReader.maxBucketReads + 4) {
            let whole = try curl(base + "rec_head/call.webm", ["-I", "-H", "authtoken: ann", "-D", dir.file("head")], out: dir.file("out"))
            XCTAssertEqual(whole.status, 200)
            XCTAssertTrue(try String(contentsOfFile: dir.file("head"), encoding: .utf8).lowercased().contains("content-length: \(bytes.count)"))
        }
        let part = try curl(base + "rec_head/call.webm", ["-I", "-H", "Range: bytes=100-199", "-D", dir.file("head")], out: dir.file("out"))
        XCTAssertEqual(part.status, 206)
        let head = try String(contentsOfFile: dir.file("head"), encoding: .utf8).lowercased()
        XCTAssertTrue(head.contains("content-length: 100") && head.contains("content-range: bytes 100-199/\(bytes.count)"), head)
        XCTAssertEqual(StoredFileReader.bucketReadsStarted.load(ordering: .relaxed), started, "no download opened for a HEAD")
        let got = try curl(base + "rec_head/call.webm", ["-H", "authtoken: ann"], out: dir.file("out"))
        XCTAssertTrue(got.status == 200 && got.body == bytes, "a GET after them is served whole")
    }

    /// A client reading at 24 MB/s (so ≈ 4 s for 96 MiB): the node holds at most the download's
    /// buffer, not what the store could send meanwhile (≈ 1.9 MiB measured; with the buffer
    /// unbounded, 88 MiB).
    func testASlowClientMakesTheStoreWaitNotTheNodeHoldTheFile() throws {
        let store = try database.store()
        store.queuesUploads = true
        let size = 96 << 20
        _ = try stored("rec_long", size: size, store: store)
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        let (got, grew) = try ProcessUsage.growthKiB { try curl(base + "rec_long/call.webm", ["--limit-rate", "24M"], out: "/dev/null") }
        XCTAssertEqual(got.exit, 0)
        XCTAssertLessThan(grew, 8 << 10, "the node grew by \(grew) KiB serving a 96 MiB file to a slow client")
    }

    /// A client that reads far below the floor (20 KB/s against 256 KiB in 4 s) while the store
    /// waits on it is cut at the end of a window, and its download slot freed — not held the
    /// half hour the file would take; one that reads far above it gets the file whole (its
    /// socket's buffers let the node write in lumps seconds apart: the window allows for them).
    func testAClientSlowerThanTheFloorIsCutAndOneAboveItIsNot() throws {
        let store = try database.store()
        store.queuesUploads = true
        let bytes = try stored("rec_slow", size: 32 << 20, store: store)
        let (server, node, base) = try serve(store, floor: ReaderPace.Floor(bytes: 256 << 10, seconds: 4))
        defer { server.stop(); withExtendedLifetime(node) {} }
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == 0 }, "no other test's download runs")
        let started = StoredFileReader.bucketReadsStarted.load(ordering: .relaxed)
        let slow = try slowCurl(base + "rec_slow/call.webm", rate: "20K")
        defer { if slow.isRunning { slow.terminate() } }
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsStarted.load(ordering: .relaxed) > started }, "the slow client's download runs")
        XCTAssertTrue(eventually(30) { logged.all.contains { $0.contains("its client reads too slowly") } }, "the slow client is cut: \(logged.all)")
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == 0 }, "its download slot is free")
        let line = logged.all.first { $0.contains("its client reads too slowly") }
        XCTAssertTrue(line?.contains("recordings/rec_slow/call.webm") == true, line ?? "")
        let fast = try curl(base + "rec_slow/call.webm", ["--limit-rate", "8M"], out: dir.file("fast"))
        XCTAssertEqual(fast.exit, 0)
        XCTAssertTrue(fast.body == bytes, "above the floor, the whole file (\(fast.body.count) of \(bytes.count) bytes)")
    }

    /// One user may run two bucket downloads at once on a node: a third is 429 while another
    /// user and the operator are served; when one of theirs ends, they may start another.
    func testOneUserRunsAtMostTwoBucketDownloads() throws {
        let store = try database.store()
        store.queuesUploads = true
        let bytes = try stored("rec_two", size: 32 << 20, store: store)  // (more than the sockets' buffers hold)
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == 0 }, "no other test's download runs")
        var slow: [Process] = []
        defer { slow.forEach { if $0.isRunning { $0.terminate() } } }
        for _ in 0..<StoredFileReader.maxBucketReadsPerUser {
            slow.append(try slowCurl(base + "rec_two/call.webm", rate: "100K", ["-H", "authtoken: mallory"]))
        }
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == StoredFileReader.maxBucketReadsPerUser }, "mallory's downloads run")
        let third = try curl(base + "rec_two/call.webm", ["-H", "authtoken: mallory"], out: dir.file("third"))
        XCTAssertEqual(third.status, 429)
        XCTAssertTrue(String(decoding: third.body.prefix(300), as: UTF8.self).contains("ERR_RATE_LIMITED"))
        XCTAssertTrue(try curl(base + "rec_two/call.webm", ["-H", "authtoken: alice"], out: dir.file("alice")).body == bytes, "another user is served")
        XCTAssertTrue(try curl(base + "rec_two/call.webm", out: dir.file("operator")).body == bytes, "the operator is served")
        slow[0].terminate()
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == StoredFileReader.maxBucketReadsPerUser - 1 }, "one of mallory's ends with its client")
        XCTAssertTrue(try curl(base + "rec_two/call.webm", ["-H", "authtoken: mallory"], out: dir.file("again")).body == bytes, "so mallory may start one")
    }

    /// Clients that hang up mid-file, more of them than the node runs bucket downloads at once:
    /// each download ends with its client, so the next one is served (not "too many").
    func testAClientThatLeavesEndsItsDownload() throws {
        let store = try database.store()
        store.queuesUploads = true
        let bytes = try stored("rec_left", size: 11 << 20, store: store)
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        for _ in 0..<(StoredFileReader.maxBucketReads + 2) {
            let cut = try curl(base + "rec_left/call.webm", ["--limit-rate", "2M", "--max-time", "0.4"], out: dir.file("cut"))
            XCTAssertEqual(cut.exit, 28, "curl gave up mid-file (timeout)")
            XCTAssertLessThan(cut.body.count, bytes.count)
        }
        XCTAssertTrue(eventually(10) { StoredFileReader.bucketReadsNow == 0 }, "\(StoredFileReader.bucketReadsNow) downloads outlived their clients")
        XCTAssertTrue(try curl(base + "rec_left/call.webm", out: dir.file("out")).body == bytes)
        XCTAssertFalse(logged.all.contains { $0.contains("cut mid-file") }, "a client leaving is no store failure: \(logged.all)")
    }

    /// A client that hangs up before its answer is ready: the download started for the answer
    /// ends as soon as the answer cannot go (its head's write fails, or the connection is gone
    /// when it is handed over), not after the 60 s stall holding a download slot.
    func testAClientGoneBeforeItsAnswerEndsTheDownload() throws {
        let store = try database.store()
        store.queuesUploads = true
        _ = try stored("rec_late", size: 11 << 20, store: store)
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        let started = StoredFileReader.bucketReadsStarted.load(ordering: .relaxed)
        let gone = try curl(base.replacingOccurrences(of: "/recordings/", with: "/late/recordings/") + "rec_late/call.webm",
                            ["--max-time", "0.2"], out: dir.file("late"))
        XCTAssertEqual(gone.exit, 28)
        XCTAssertTrue(eventually(2) { StoredFileReader.bucketReadsStarted.load(ordering: .relaxed) > started }, "a download starts for the answer")
        XCTAssertTrue(eventually(3) { StoredFileReader.bucketReadsNow == 0 }, "and ends with it, not after the 60 s stall")
    }

    /// The store dies while a client is mid-file: the client's connection is cut — its body is
    /// shorter than the head said and curl says so — and the node's download ends.
    func testAStoreThatDiesMidFileCutsTheClient() throws {
        let store = try database.store()
        store.queuesUploads = true
        let bytes = try stored("rec_cut", size: 48 << 20, store: store)
        let (server, node, base) = try serve(store)
        defer { server.stop(); withExtendedLifetime(node) {} }
        let killer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "kill"))
        killer.schedule(deadline: .now() + 1)
        killer.setEventHandler { [moto] in moto?.stop() }
        killer.resume()
        let got = try curl(base + "rec_cut/call.webm", ["--limit-rate", "8M"], out: dir.file("out"))
        XCTAssertEqual(got.status, 200)
        XCTAssertEqual(got.exit, 18, "curl: transfer closed with bytes remaining (partial file)")
        XCTAssertLessThan(got.body.count, bytes.count)
        XCTAssertTrue(got.body == Array(bytes.prefix(got.body.count)), "what came is the file's start")
        XCTAssertTrue(eventually(5) { StoredFileReader.bucketReadsNow == 0 })
        let line = logged.all.first { $0.contains("a download from object storage was cut mid-file") }
        XCTAssertNotNil(line, "the failure is logged: \(logged.all)")
        XCTAssertTrue(line?.contains("recordings/rec_cut/call.webm") == true && line?.contains("testing-secret") == false, line ?? "")
    }
}
