import CallRoomTestSupport
import CallsCluster
import CallsObjectStorage
import CallsRedis
import CallsServer
import Foundation
import XCTest

/// Three `callroomd` processes on loopback, one real redis-server and one throwaway PostgreSQL
/// cluster, the same keys: two headless `callroom join` clients whose signalling is on two other
/// nodes than the room's hear each other; `kill -9` of the room's node moves the room to a live
/// node, the clients rejoin there by themselves and hear each other again; the call log in
/// PostgreSQL holds one call with every participant, before and after.
final class ClusterFailoverTests: XCTestCase {
    var tmp: TemporaryDirectory!
    var redis: RedisServer!
    var pg: PostgresCluster!
    var nodes: [String: CallroomdProcess] = [:]

    override func setUpWithError() throws {
        guard RedisServer.isInstalled else { throw XCTSkip("redis-server is not installed: run scripts/install-deps.sh") }
        guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
        tmp = TemporaryDirectory("callroom-cluster-it")
        redis = try RedisServer()
        pg = try PostgresCluster()
    }

    override func tearDown() {
        for n in nodes.values { n.process.signal(SIGKILL); _ = n.process.wait() }
        nodes = [:]
        pg?.destroy()  // (XCTest keeps each test's instance to the end: deinit would come too late)
        pg = nil
        redis = nil
        tmp?.remove()
    }

    /// Starts node `id` on the shared database and Redis, with the first node's keys.
    func startNode(_ id: String, database: String, extra: [String] = [], settings: [String: Any] = [:]) throws -> CallroomdProcess {
        let dir = tmp.file(id)
        if nodes["node-a"] != nil { try CallroomdProcess.shareKeys(from: tmp.file("node-a"), into: dir) }
        let config = tmp.file("\(id).json")
        let json = settings.merging(["storeHeartbeatSeconds": 1, "logLevel": "info"]) { mine, _ in mine }
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: config))
        let n = try CallroomdProcess(dataDir: dir, extra: ["--config", config, "--database", database, "--redis", redis.address, "--node-id", id] + extra)
        nodes[id] = n
        return n
    }

    func client(_ uid: String, via node: CallroomdProcess, authKey: String, input: String, output: String, room: String = "standup") throws -> ManagedProcess {
        try ManagedProcess(BuiltProducts.path("callroom"), ["join", room, "--server", node.url, "--uid", uid, "--name", uid.capitalized,
                                                            "--auth-key", authKey, "--input", input, "--output", output, "--headless"])
    }

    func testClientsOnTwoNodesHearEachOtherAndFollowTheRoomWhenItsNodeIsKilled() throws {
        let database = try pg.createDatabase()
        let a = try startNode("node-a", database: database)
        let b = try startNode("node-b", database: database)
        let c = try startNode("node-c", database: database)
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertTrue(eventually { (try? registry.liveNodes().count) == 3 }, "three nodes registered")

        // The room goes to node A (all empty: the first by id); bob signals through B, alice through C.
        let wav = tmp.file("bob-heard.wav")
        let bob = try client("bob", via: b, authKey: a.authKey, input: "null", output: "file:\(wav)")
        defer { bob.signal(SIGKILL); _ = bob.wait() }
        XCTAssertNotNil(bob.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, "bob joined: \(bob.errorOutput)")
        XCTAssertEqual(try registry.node(forSession: "standup")?.id, "node-a", "the room is on A")
        let alice = try client("alice", via: c, authKey: a.authKey, input: "tone:440", output: "null")
        defer { alice.signal(SIGKILL); _ = alice.wait() }
        XCTAssertNotNil(alice.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, "alice joined: \(alice.errorOutput)")
        XCTAssertNotNil(bob.waitForLine(timeout: 10) { $0.contains("onParticipantJoined") && $0.contains("alice") }, "one room across nodes")
        Thread.sleep(forTimeInterval: 2.5)

        // kill -9 of the room's node: B and C see it gone, close their clients' sockets, and the
        // clients' resume is refused, so they rejoin — the room placed anew on a live node.
        let killedAt = Int64(Date().timeIntervalSince1970 * 1000)
        let killed = Date()
        a.process.signal(SIGKILL)
        _ = a.process.wait()
        nodes["node-a"] = nil
        for p in [bob, alice] {
            XCTAssertNotNil(p.waitForLine(timeout: 20) { $0.contains("onSessionRejoined") }, "rejoined: \(p.errorOutput)")
        }
        let took = Date().timeIntervalSince(killed)
        XCTAssertLessThan(took, 10, "both rejoined \(String(format: "%.1f", took)) s after the kill")
        let moved = try XCTUnwrap(try registry.node(forSession: "standup")?.id)
        XCTAssertTrue(["node-b", "node-c"].contains(moved), "the room lives on a live node: \(moved)")
        XCTAssertTrue(eventually(10) { bob.output.filter { $0.contains("onParticipantJoined") && $0.contains("alice") }.count >= 2 },
                      "bob sees alice join the moved room")
        Thread.sleep(forTimeInterval: 2.5)
        // (Counters for the story below: who sent, who got, whose binding the relay acknowledged.)
        for p in [bob, alice] { p.send("media-report") }
        let reports = [bob, alice].map { p in p.waitForLine(timeout: 5) { $0.contains("mediaReport") } ?? "(no media report)" }
        let relays = [b, c].map { n in
            BlockingHTTP.request("GET", n.url + "/metrics").text.split(separator: "\n")
                .filter { $0.hasPrefix("callroom_relay_packets") }.joined(separator: "\n")
        }
        alice.send("leave")
        XCTAssertEqual(alice.wait(timeout: 10), 0, alice.errorOutput)
        bob.send("leave")
        XCTAssertEqual(bob.wait(timeout: 10), 0, bob.errorOutput)

        // (On a failure, what the clients and nodes said: enough to tell where the media stopped.)
        let story = ([bob.errorOutput, "-- alice", alice.errorOutput, "-- node-b", b.process.errorOutput, "-- node-c", c.process.errorOutput,
                      "-- media: bob " + reports[0], "-- media: alice " + reports[1], "-- relay B (media \(b.output.first { $0.contains("media udp://") }?.split(separator: " ").dropFirst(4).first ?? "?"))", relays[0],
                      "-- relay C (media \(c.output.first { $0.contains("media udp://") }?.split(separator: " ").dropFirst(4).first ?? "?"))", relays[1],
                      "-- alice's lines"] + alice.output.map { String($0.prefix(300)) }
                     + (bob.output).filter { $0.contains("Rejoined") || $0.contains("Connection") || $0.contains("error") }.map { String($0.prefix(160)) })
            .joined(separator: "\n")
        try assertToneBeforeAndAfterTheMove(wav, story: story)

        // The call log (PostgreSQL, through any node): one call, each participant before and after.
        let list = try XCTUnwrap(BlockingHTTP.request("GET", c.url + "/v3/calls?sessionId=standup", headers: ["apikey": a.apiKey]).json["data"] as? [[String: Any]])
        XCTAssertEqual(list.count, 1, "one call, not two: \(list)")
        XCTAssertTrue(eventually { (BlockingHTTP.request("GET", b.url + "/v3/calls/standup", headers: ["apikey": a.apiKey]).data["status"] as? String) == "ended" },
                      "ended when both left")
        let done = BlockingHTTP.request("GET", b.url + "/v3/calls/standup", headers: ["apikey": a.apiKey]).data
        let ps = try XCTUnwrap(done["participants"] as? [[String: Any]])
        XCTAssertEqual(ps.compactMap { $0["uid"] as? String }.sorted(), ["alice", "alice", "bob", "bob"], "each before and after the move: \(ps)")
        let cut = ps.prefix(2).compactMap { $0["leftAt"] as? Int64 }
        XCTAssertEqual(cut.count, 2)
        for t in cut { XCTAssertLessThanOrEqual(t, killedAt + 100, "the first stay ends at A's last heartbeat, not later than the kill") }
        XCTAssertTrue(ps.allSatisfy { $0["leftAt"] as? Int64 != nil }, "everyone's stay has an end: \(ps)")
        print("cluster fail-over: rejoined \(String(format: "%.2f", took)) s after kill -9 of the room's node")
    }

    /// `--drain`: SIGTERM leaves the node up for its rooms, new rooms (even from its own clients)
    /// go to another node, and it stops by itself once its rooms have ended.
    func testADrainingNodeTakesNoNewRoomsAndStopsWhenItsRoomsHaveEnded() throws {
        let database = try pg.createDatabase()
        let a = try startNode("node-a", database: database, extra: ["--drain"])
        _ = try startNode("node-b", database: database)
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertTrue(eventually { (try? registry.liveNodes().count) == 2 })
        let bob = try client("bob", via: a, authKey: a.authKey, input: "tone:300", output: "null", room: "old")
        defer { bob.signal(SIGKILL); _ = bob.wait() }
        XCTAssertNotNil(bob.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, bob.errorOutput)
        XCTAssertEqual(try registry.node(forSession: "old")?.id, "node-a")

        a.process.signal(SIGTERM)
        XCTAssertTrue(eventually { (try? registry.liveNodes().first { $0.id == "node-a" }?.draining) == true }, "A says it is draining")
        XCTAssertNil(a.process.wait(timeout: 1.5), "A stays up while its room goes on")
        let carol = try client("carol", via: a, authKey: a.authKey, input: "null", output: "null", room: "new")
        defer { carol.signal(SIGKILL); _ = carol.wait() }
        XCTAssertNotNil(carol.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, carol.errorOutput)
        XCTAssertEqual(try registry.node(forSession: "new")?.id, "node-b", "a new room goes elsewhere, even from A's own client")
        carol.send("leave")
        XCTAssertEqual(carol.wait(timeout: 10), 0)
        XCTAssertTrue(bob.output.allSatisfy { !$0.contains("onConnectionLost") }, "nothing moved mid-call")

        bob.send("leave")
        XCTAssertEqual(bob.wait(timeout: 10), 0)
        XCTAssertEqual(a.process.wait(timeout: 10), 0, "A stopped once its room had ended: \(a.process.errorOutput)")
        nodes["node-a"] = nil
        XCTAssertTrue(a.process.errorOutput.contains("drained: shutting down"), a.process.errorOutput)
        XCTAssertEqual(try registry.liveNodes().map(\.id), ["node-b"])
        // --drain needs somewhere to send rooms.
        let alone = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.file("alone"), "--drain"])
        XCTAssertEqual(alone.wait(timeout: 20), 2)
        XCTAssertTrue(alone.errorOutput.contains("--drain needs --redis"), alone.errorOutput)
    }

    /// Bob's recording: alice's tone, a gap while the room moved, the tone again.
    func assertToneBeforeAndAfterTheMove(_ path: String, story: String) throws {
        let (_, samples) = try XCTUnwrap(SignalAnalysis.readWAV(path), "bob wrote a WAV")
        let isTone = SignalAnalysis.windows(samples, size: 2400).map { w in
            SignalAnalysis.rmsDBFS(w) > -30 && SignalAnalysis.toneDominanceDB(w, frequency: 440, others: [220, 330, 550, 660, 880, 1000]) > 20
        }
        // The longest run without tone after it first started is the move.
        guard let first = isTone.firstIndex(of: true) else { return XCTFail("no tone heard") }
        var best = (start: first, length: 0), run = 0
        for i in first..<isTone.count {
            run = isTone[i] ? 0 : run + 1
            if run > best.length { best = (i - run + 1, run) }
        }
        let before = isTone[..<best.start].filter { $0 }.count, after = isTone[(best.start + best.length)...].filter { $0 }.count
        XCTAssertGreaterThan(before, 20, "a second or more of tone before the kill (\(before) windows of 50 ms)")
        XCTAssertGreaterThan(after, 20, "and after the move (\(after) windows; the gap was \(best.length) windows):\n\(story)")
        print("cluster fail-over: bob heard \(before) windows of tone before, a gap of \(best.length), \(after) after (50 ms each)")
    }


    /// A browser opens an invite link served by node B while the room is on node A: its offer is
    /// answered by A's WebRTC gateway (the room's node: its relay holds the media), its media go
    /// straight to A's WebRTC port, and it and a terminal on A hear each other. Node B holds its
    /// WebSocket only. (Connection ids are per node: A's gateway keys the leg by the participant.)
    func testABrowserWhoseWebSocketIsOnAnotherNodeHearsAndIsHeard() throws {
        guard HeadlessChromium.binary != nil else { throw XCTSkip("chromium is not installed (scripts/install-deps.sh)") }
        let database = try pg.createDatabase()
        let a = try startNode("node-a", database: database)
        let b = try startNode("node-b", database: database)
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertTrue(eventually { (try? registry.liveNodes().count) == 2 }, "two nodes registered")
        let wav = tmp.file("term-heard.wav")
        let term = try client("term", via: a, authKey: a.authKey, input: "tone:440", output: "file:\(wav)", room: "mixed")
        defer { term.signal(SIGKILL); _ = term.wait() }
        XCTAssertNotNil(term.waitForLine(timeout: 15) { $0.contains("onSessionJoined") }, term.errorOutput)
        XCTAssertEqual(try registry.node(forSession: "mixed")?.id, "node-a")
        let minted = BlockingHTTP.request("POST", b.url + "/v3/rooms/mixed/invites", headers: ["apikey": a.apiKey, "appId": a.appId], body: #"{"role":"guest"}"#)
        let link = try XCTUnwrap(minted.data["link"] as? String, minted.text)
        XCTAssertTrue(link.hasPrefix(b.url), "the link is node B's: \(link)")
        let tone = tmp.file("880.wav")
        try BrowserCallTests.toneWAV(tone, hz: 880)
        let browser = try HeadlessChromium(audioFile: tone)
        defer { browser.close() }
        let page = try browser.open(link)
        try BrowserCallTests.clickJoin(browser, page, name: "Web", video: false)
        XCTAssertTrue(try browser.waitFor(page, BrowserCallTests.mediaConnected, timeout: 20),
                      "not connected: \(BrowserCallTests.stats(browser, page))")
        XCTAssertEqual(BrowserCallTests.metric(a, "callroom_webrtc_legs"), 1, "the leg is on the room's node")
        XCTAssertEqual(BrowserCallTests.metric(b, "callroom_webrtc_legs"), 0, "none on the node holding the WebSocket")
        let termPid = try XCTUnwrap(BrowserCallTests.pid(browser, page, uid: "term"))
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.streams.has(\(String(reflecting: termPid)))", timeout: 10))
        let best = try BrowserCallTests.clearest(browser, page, pid: termPid, hz: 440)
        XCTAssertGreaterThan(best, 20, "the browser does not hear the terminal across nodes:\n\(BrowserCallTests.stats(browser, page))")
        XCTAssertTrue(BrowserCallTests.browsersKeepReaching(a, packets: 100), "the browser's media stopped reaching node A's room")
        term.send("leave")
        XCTAssertEqual(term.wait(timeout: 10), 0, term.errorOutput)
        let carrying = try BrowserCallTests.windowsCarrying(wav, hz: 880)
        XCTAssertGreaterThan(carrying.carrying, 10, "the terminal heard the browser in \(carrying.carrying) of \(carrying.of) windows")
        XCTAssertTrue(try browser.waitFor(page, "!window.callroom.roster.has(\(String(reflecting: termPid)))", timeout: 5), "the terminal's leave not seen across nodes")
    }

    /// Object storage (#38): a recording made on one node is uploaded, served by every node, and
    /// still served after `kill -9` of the node that made it.
    func testARecordingIsServedByEveryNodeAndOutlivesTheNodeThatMadeIt() throws {
        guard MotoServer.binary != nil else { throw XCTSkip("needs moto (scripts/install-python-deps.sh)") }
        let moto = try MotoServer()
        defer { moto.stop() }
        let bucket = ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: "cluster-calls", region: "us-east-1", accessKeyID: "AKID", secretAccessKey: "s")
        try S3Client(bucket).createBucket()
        let storage: [String: Any] = ["objectStorage": ["endpoint": moto.endpoint, "bucket": "cluster-calls", "accessKeyID": "AKID", "secretAccessKey": "s"]]
        let database = try pg.createDatabase()
        let a = try startNode("node-a", database: database, settings: storage)
        let b = try startNode("node-b", database: database, settings: storage)
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertTrue(eventually { (try? registry.liveNodes().count) == 2 }, "two nodes registered")
        let bots = try ManagedProcess(BuiltProducts.path("callroom"), ["bots", "--server", "\(a.url),\(b.url)", "--auth-key", a.authKey, "--rooms", "1",
                                                                       "--per-room", "2", "--duration", "3", "--record"])
        XCTAssertEqual(bots.wait(timeout: 60), 0, bots.errorOutput)
        let admin = ["apikey": a.apiKey]
        // Uploaded: the call log, through either node, says every file is in object storage.
        var recording: [String: Any] = [:], session = ""
        XCTAssertTrue(eventually(30, poll: 0.3) {
            let calls = BlockingHTTP.request("GET", b.url + "/v3/calls", headers: admin).json["data"] as? [[String: Any]] ?? []
            guard let call = calls.first(where: { ($0["recordings"] as? [Any])?.isEmpty == false }),
                  let r = (call["recordings"] as? [[String: Any]])?.first, let files = r["files"] as? [[String: Any]], files.count == 3 else { return false }
            recording = r
            session = call["sessionId"] as? String ?? ""
            return files.allSatisfy { $0["storage"] as? String == "objectStorage" }
        }, "uploaded: \(recording)")
        let rid = try XCTUnwrap(recording["rid"] as? String)
        let maker = FileManager.default.fileExists(atPath: tmp.file("node-a") + "/recordings/\(rid)") ? "node-a" : "node-b"
        let other = maker == "node-a" ? b : a
        let path = "/v3/calls/\(session)/recordings/\(rid)"
        let original = try XCTUnwrap(FileManager.default.contents(atPath: tmp.file(maker) + "/recordings/\(rid)/mixed.opus"))
        for node in [a, b] {
            let got = BlockingHTTP.request("GET", node.url + path, headers: admin)
            XCTAssertEqual(got.status, 200, "\(node.url): \(got.text)")
            XCTAssertEqual(got.body, original, "the same file through \(node.url)")
        }
        // The node that made it dies: the other still serves it, from the bucket.
        nodes[maker]?.process.signal(SIGKILL)
        _ = nodes[maker]?.process.wait()
        nodes[maker] = nil
        let after = BlockingHTTP.request("GET", other.url + path, headers: admin)
        XCTAssertEqual(after.status, 200, after.text)
        XCTAssertEqual(after.body, original)
        let participant = try XCTUnwrap((recording["files"] as? [[String: Any]])?.first { $0["kind"] as? String == "participant" }?["pid"] as? String)
        XCTAssertEqual(BlockingHTTP.request("GET", other.url + path + "/\(participant)", headers: admin).status, 200)
    }
}
