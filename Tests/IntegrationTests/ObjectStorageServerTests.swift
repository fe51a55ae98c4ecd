import CallRoomTestSupport
import CallsObjectStorage
import Foundation
import XCTest

/// `callroomd` with `objectStorage`, as an operator runs it, against moto's S3 server: wrong
/// credentials stop the start with the store's code (and no secret), and an upload cut by
/// `kill -9` is made by the next start, from the queue in the store.
final class ObjectStorageServerTests: XCTestCase {
    var tmp: TemporaryDirectory!
    var moto: MotoServer?
    var proxy: S3FaultProxy?
    var servers: [CallroomdProcess] = []

    override func setUpWithError() throws {
        guard MotoServer.binary != nil else { throw XCTSkip("needs moto (scripts/install-python-deps.sh)") }
        tmp = TemporaryDirectory("callroom-objects-it")
    }

    override func tearDown() {
        for s in servers { s.process.signal(SIGKILL); _ = s.process.wait() }
        servers = []
        proxy?.stop()
        proxy = nil
        moto?.stop()
        moto = nil
        tmp?.remove()
    }

    func writeConfig(_ name: String, _ storage: [String: Any]) throws -> String {
        let path = tmp.file(name)
        let data = try JSONSerialization.data(withJSONObject: ["objectStorage": storage, "logLevel": "info"])
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    func testWrongCredentialsStopTheStartWithTheStoresCodeAndNoSecret() throws {
        let moto = try MotoServer(checkingCredentials: true)
        self.moto = moto
        let key = try moto.createCredentials()
        let good = ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: "calls", region: "us-east-1", accessKeyID: key.id, secretAccessKey: key.secret)
        try S3Client(good).createBucket()
        let secret = "Wr0ngSecretThatMustNotBeLogged"
        let config = try writeConfig("bad.json", ["endpoint": moto.endpoint, "bucket": "calls", "accessKeyID": key.id, "secretAccessKey": secret])
        let p = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("bad"), "--config", config])
        XCTAssertEqual(p.wait(timeout: 30), 1, "refused at start: \(p.errorOutput)")
        XCTAssertTrue(p.errorOutput.contains("SignatureDoesNotMatch") && p.errorOutput.contains("refused a test write"), p.errorOutput)
        XCTAssertFalse((p.errorOutput + p.output.joined()).contains(secret), "the secret is never printed")
        XCTAssertFalse(p.output.contains { $0.contains("listening on") }, "no port opened")
        // An unknown key id: the store's other code.
        let unknown = try writeConfig("unknown.json", ["endpoint": moto.endpoint, "bucket": "calls", "accessKeyID": "AKIAUNKNOWN0000000", "secretAccessKey": secret])
        let q = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("unknown"), "--config", unknown])
        XCTAssertEqual(q.wait(timeout: 30), 1, q.errorOutput)
        XCTAssertTrue(q.errorOutput.contains("InvalidAccessKeyId"), q.errorOutput)
        // A bucket that is not there.
        let missing = try writeConfig("missing.json", ["endpoint": moto.endpoint, "bucket": "nobucket", "accessKeyID": key.id, "secretAccessKey": key.secret])
        let r = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("missing"), "--config", missing])
        XCTAssertEqual(r.wait(timeout: 30), 1, r.errorOutput)
        XCTAssertTrue(r.errorOutput.contains("NoSuchBucket"), r.errorOutput)
        // A bad setting is the config file's error, before anything is asked of the store.
        let malformed = try writeConfig("malformed.json", ["endpoint": moto.endpoint + "/path", "bucket": "calls", "accessKeyID": key.id, "secretAccessKey": key.secret])
        let m = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("malformed"), "--config", malformed])
        XCTAssertNotEqual(m.wait(timeout: 30), 0)
        XCTAssertTrue(m.errorOutput.contains("objectStorage.endpoint must be http(s)://HOST[:PORT]"), m.errorOutput)
        // The right key: it starts.
        let right = try writeConfig("good.json", ["endpoint": moto.endpoint, "bucket": "calls", "accessKeyID": key.id, "secretAccessKey": key.secret])
        let server = try CallroomdProcess(dataDir: tmp.file("good"), extra: ["--config", right])
        servers.append(server)
        XCTAssertTrue(server.process.errorOutput.contains("object storage ready"), server.process.errorOutput)
    }

    func testAnUploadCutByKillNineIsMadeByTheNextStart() throws {
        let moto = try MotoServer()
        self.moto = moto
        let bucket = ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: "calls", region: "us-east-1", accessKeyID: "AKID", secretAccessKey: "secret")
        try S3Client(bucket).createBucket()
        // Writes of files are held while this file exists: the upload is under way when the node dies.
        let stall = tmp.file("stall")
        XCTAssertTrue(FileManager.default.createFile(atPath: stall, contents: nil))
        let proxy = try S3FaultProxy(upstream: moto.endpoint, stallWhile: stall)
        self.proxy = proxy
        let storage: [String: Any] = ["endpoint": proxy.endpoint, "bucket": "calls", "accessKeyID": "AKID", "secretAccessKey": "secret"]
        let dataDir = tmp.file("node")
        let first = try CallroomdProcess(dataDir: dataDir, extra: ["--config", try writeConfig("proxy.json", storage)])
        servers.append(first)
        let bots = try ManagedProcess(BuiltProducts.path("callroom"), ["bots", "--server", first.url, "--auth-key", first.authKey, "--rooms", "1",
                                                                       "--per-room", "2", "--duration", "3", "--record"])
        XCTAssertEqual(bots.wait(timeout: 60), 0, bots.errorOutput)
        XCTAssertTrue(eventually(20, poll: 0.1) { proxy.lines.contains { $0.hasPrefix("stalled PUT") && $0.contains("/recordings/") } },
                      "an upload under way: \(proxy.lines) — \(first.process.errorOutput.suffix(2000))")
        first.process.signal(SIGKILL)
        _ = first.process.wait()
        proxy.stop()  // (the held write dies with it: nothing reaches the bucket)
        self.proxy = nil
        let rid = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dataDir + "/recordings").first)
        let names = try FileManager.default.contentsOfDirectory(atPath: dataDir + "/recordings/\(rid)").filter { $0.hasSuffix(".opus") }.sorted()
        XCTAssertEqual(names.count, 3, "the mix and two participants: \(names)")
        for name in names { XCTAssertNil(try S3Client(bucket).size("recordings/\(rid)/\(name)"), "\(name) not in the bucket yet") }

        // The next start (straight to the store) makes the uploads from the queue in the store.
        var direct = storage
        direct["endpoint"] = moto.endpoint
        let second = try CallroomdProcess(dataDir: dataDir, extra: ["--config", try writeConfig("direct.json", direct)])
        servers.append(second)
        XCTAssertTrue(eventually(30, poll: 0.2) { names.allSatisfy { (try? S3Client(bucket).size("recordings/\(rid)/\($0)")) ?? nil != nil } },
                      "every file uploaded after the restart: \(second.process.errorOutput.suffix(3000))")
        for name in names {
            let local = try XCTUnwrap(FileManager.default.contents(atPath: dataDir + "/recordings/\(rid)/\(name)"))
            XCTAssertEqual(try S3Client(bucket).get("recordings/\(rid)/\(name)"), [UInt8](local), name)
        }
        // The call log says so (once the uploader has written down the last upload).
        var calls: [[String: Any]] = []
        XCTAssertTrue(eventually(10, poll: 0.2) {
            calls = BlockingHTTP.request("GET", second.url + "/v3/calls", headers: ["apikey": first.apiKey]).json["data"] as? [[String: Any]] ?? []
            let files = calls.flatMap { $0["recordings"] as? [[String: Any]] ?? [] }.flatMap { $0["files"] as? [[String: Any]] ?? [] }
            return files.count == 3 && files.allSatisfy { $0["storage"] as? String == "objectStorage" }
        }, "\(calls)")
    }
}
