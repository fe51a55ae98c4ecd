import CallRoomTestSupport
@testable import CallsCluster
import CallsCore
import CallsRedis
@testable import CallsServer
import CallsTransport
import Foundation
import XCTest

/// Three callroomd nodes (in this process) on one real redis-server, the same keys: a client may
/// hold its signalling on any node and still lands in the room's one node — its join placed
/// there, its messages forwarded, the answers back, `joined` naming the room node's relay so
/// media goes straight there. A node that goes away takes its clients' bindings with it.
final class ClusterRoutingTests: XCTestCase {
    var redis: RedisServer!
    var nodes: [ServerHarness] = []

    override func setUpWithError() throws {
        guard RedisServer.isInstalled else { throw XCTSkip("redis-server is not installed: run scripts/install-deps.sh") }
        redis = try RedisServer()
    }

    override func tearDown() {
        for n in nodes { n.stop(); n.removeData() }
        nodes = []
        redis = nil
    }

    /// Nodes `ids` sharing one set of keys (the first node's, copied into each data directory).
    func startNodes(_ ids: [String], configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) throws {
        for id in ids {
            let dir = try nodes.first?.dataDirSharingKeys("cluster-\(id)")
            nodes.append(try ServerHarness(dataDir: dir) { c in
                c.redisURL = self.redis.address
                c.nodeID = id
                configure(&c)
            })
        }
        XCTAssertTrue(eventually { (try? self.nodes[0].server.clusterNodes()?.count) == ids.count }, "every node registered")
    }

    func join(_ node: ServerHarness, _ uid: String, session: String) throws -> (SignalProbe, ServerMessage.Joined) {
        let p = try SignalProbe(url: node.server.url)
        p.send(.join(.init(callToken: try node.callToken(uid: uid, session: session), sessionId: session)))
        return (p, try XCTUnwrap(p.joined(), "\(uid) joined through \(node.server.nodeID)"))
    }

    func testClientsOnDifferentNodesLandInOneRoomAndTheirMediaGoesToItsNode() throws {
        try startNodes(["node-a", "node-b", "node-c"])
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])
        // The first join places the room on the least-loaded node (all empty: the first by id).
        let (ann, annJoined) = try join(a, "ann", session: "standup")
        XCTAssertEqual(annJoined.mediaPort, a.server.mediaPort)
        // Bob's signalling is on B, Cy's on C: both join node A's room.
        let (bob, bobJoined) = try join(b, "bob", session: "standup")
        XCTAssertEqual(bobJoined.participants.map(\.uid).sorted(), ["ann", "bob"], "the same room: ann is there")
        XCTAssertEqual(bobJoined.mediaPort, a.server.mediaPort, "media goes to the room's node, not to B")
        XCTAssertEqual(bobJoined.mediaHost, "127.0.0.1")
        let (cy, cyJoined) = try join(c, "cy", session: "standup")
        XCTAssertEqual(cyJoined.participants.count, 3)
        XCTAssertNotNil(ann.wait { if case .participantJoined(let w) = $0 { return w.uid == "cy" }; return false }, "ann hears of cy")
        XCTAssertNotNil(bob.wait { if case .participantJoined(let w) = $0 { return w.uid == "cy" }; return false }, "bob (on B) hears of cy (on C)")
        XCTAssertEqual(a.server.clusterRouterCounts?.guests, 2, "bob's and cy's sockets are elsewhere")
        XCTAssertEqual(a.server.roomsHeld, 1)
        XCTAssertEqual(b.server.roomsHeld, 0, "B holds sockets, not rooms")
        XCTAssertEqual(c.server.roomsHeld, 0)

        // Room messages both ways: chat from C reaches A's and B's clients; a mute from B shows everywhere.
        cy.send(.chat(text: "hello from C"))
        XCTAssertNotNil(bob.wait { if case .chat(let m) = $0 { return m.text == "hello from C" }; return false })
        XCTAssertNotNil(ann.wait { if case .chat(let m) = $0 { return m.text == "hello from C" }; return false })
        bob.send(.setAudioMuted(true))
        XCTAssertNotNil(cy.wait { if case .participantUpdated(let w, _) = $0 { return w.uid == "bob" && w.isAudioMuted }; return false })
        // Keep-alives are answered by the node holding the socket.
        bob.send(.ping(7))
        XCTAssertNotNil(bob.wait { $0 == .pong(7) })

        // Media: bob (signalling on B) binds at A's relay and his packets reach ann and cy.
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: a.server.mediaPort))
        let sAnn = try UDPSocket(host: "127.0.0.1", port: 0), sBob = try UDPSocket(host: "127.0.0.1", port: 0), sCy = try UDPSocket(host: "127.0.0.1", port: 0)
        for (s, j) in [(sAnn, annJoined), (sBob, bobJoined), (sCy, cyJoined)] { XCTAssertTrue(s.bindMedia(j, relay: relay)) }
        bob.send(.setAudioMuted(false))
        XCTAssertNotNil(ann.wait { if case .participantUpdated(let w, _) = $0 { return w.uid == "bob" && !w.isAudioMuted }; return false })
        for seq in UInt16(0)..<5 {
            sBob.send(RTPPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: bobJoined.you.ssrc,
                                audioLevel: .init(level: 20, voiceActivity: true), payload: [UInt8](repeating: 0xAB, count: 60)).encoded(), to: relay)
        }
        for (name, s) in [("ann", sAnn), ("cy", sCy)] {
            var got = 0
            let end = Date().addingTimeInterval(2)
            while got < 5, Date() < end, let d = s.receiveBytes(timeoutMs: 200) { if d.count > 60 && d.first != 0x43 { got += 1 } }
            XCTAssertEqual(got, 5, "\(name) received bob's packets through A's relay")
        }

        // A resume through another node finds the room: bob's socket drops, he resumes via C.
        bob.disconnect()
        XCTAssertTrue(eventually { a.server.clusterRouterCounts?.guests == 1 }, "A heard that B's socket closed (cy's on C remains)")
        let again = try SignalProbe(url: c.server.url)
        again.send(.resume(token: try XCTUnwrap(bobJoined.resumeToken)))
        let resumed = try XCTUnwrap(again.wait { if case .resumed = $0 { return true }; return false }, "\(again.all)")
        guard case .resumed(let r) = resumed else { return XCTFail() }
        XCTAssertEqual(r.you.pid, bobJoined.you.pid, "the same participant, now signalling through C")

        // Leave through C: the answer comes back and C closes the socket.
        again.send(.leave)
        XCTAssertNotNil(again.wait { if case .left = $0 { return true }; return false })
        XCTAssertTrue(again.waitClosed())
        XCTAssertNotNil(ann.wait { if case .participantLeft(let w, _) = $0 { return w.uid == "bob" }; return false })
        XCTAssertTrue(eventually { c.server.clusterRouterCounts?.bound == 1 }, "only cy's socket on C is bound elsewhere: \(String(describing: c.server.clusterRouterCounts))")

        // Everyone leaves: the room ends on A and its placement is released.
        for p in [ann, cy] { p.send(.leave); XCTAssertTrue(p.waitClosed()) }
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertTrue(eventually { (try? registry.node(forSession: "standup")) == .some(nil) }, "the room → node entry went with the room")
    }

    func testANewRoomGoesToTheLeastLoadedNodeAndOnlyValidJoinsPlaceRooms() throws {
        try startNodes(["node-a", "node-b"])
        let (a, b) = (nodes[0], nodes[1])
        let (_, _) = try join(a, "ann", session: "one")
        XCTAssertTrue(eventually { (try? a.server.clusterNodes()?.first { $0.id == "node-a" }?.participants) == 1 }, "A's load is in the registry")
        // A join through A for a new room: B has fewer participants, so the room is B's.
        let (_, j) = try join(a, "bob", session: "two")
        XCTAssertEqual(j.mediaPort, b.server.mediaPort)
        XCTAssertEqual(b.server.roomsHeld, 1)

        // A forged token places nothing: it is answered (refused) where the socket is.
        let p = try SignalProbe(url: b.server.url)
        p.send(.join(.init(callToken: "x.y.z", sessionId: "junk")))
        XCTAssertEqual(p.error(), SignalErrorCode.tokenInvalid.rawValue)
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertNil(try registry.node(forSession: "junk"))
        // Media over signalling is not offered across nodes (the relay holding the room has no such socket).
        let (bobOnA, _) = try join(a, "cy", session: "two")
        bobOnA.send(.setMediaOverSignalling(true))
        XCTAssertEqual(bobOnA.error(), SignalErrorCode.mediaTunnelUnavailable.rawValue)
    }

    func testWhenARoomsNodeStopsItsClientsElsewhereAreClosedAndRejoinOnALiveNode() throws {
        try startNodes(["node-a", "node-b"]) { $0.gracePeriodSeconds = 5 }
        let (a, b) = (nodes[0], nodes[1])
        let (ann, _) = try join(a, "ann", session: "move")
        let (bob, bobJoined) = try join(b, "bob", session: "move")
        XCTAssertEqual(bobJoined.mediaPort, a.server.mediaPort)
        // A goes away without a word to B (its registry entry simply expires): B closes bob's socket.
        a.server.abandonClusterForTests()
        XCTAssertTrue(bob.waitClosed(timeout: 8), "B closed the socket bound to the gone node")
        _ = ann
        // Bob's resume through B: nobody holds the room now, so it is refused and he joins again — on B.
        let r = try SignalProbe(url: b.server.url)
        r.send(.resume(token: try XCTUnwrap(bobJoined.resumeToken)))
        XCTAssertEqual(r.error(), SignalErrorCode.resumeExpired.rawValue)
        let (_, again) = try join(b, "bob", session: "move")
        XCTAssertEqual(again.mediaPort, b.server.mediaPort, "the room was placed anew on a live node")
    }

    /// The first `call` message of `kind` on `p` (for a session other than `except`).
    func call(_ p: SignalProbe, _ kind: CallEventKind, except: String? = nil, timeout: TimeInterval = 5) -> WireCall? {
        if case .call(_, let c, _)? = p.wait(timeout: timeout, { if case .call(kind, let c, _) = $0 { return c.sessionId != except }; return false }) { return c }
        return nil
    }

    func testARingBetweenUsersOnTwoNodesAndTheRingingNodeMoving() throws {
        guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
        let database = try PostgresCluster.shared().createDatabase()  // users and auth tokens are shared
        try startNodes(["node-a", "node-b", "node-c"]) { $0.databaseURL = database }
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])
        let (app, key) = (a.server.keys.appId, a.server.keys.authKey)
        // Ann is online through B, Cy through C; presence and ringing run on one node (A: all empty, first by id).
        let ann = try RingingTests.online(url: b.server.url, appId: app, authKey: key, uid: "ann")
        let cy = try RingingTests.online(url: c.server.url, appId: app, authKey: key, uid: "cy")
        let registry = NodeRegistry(redis: try RedisClient(address: redis.address))
        XCTAssertEqual(try registry.redis.command(["GET", "callroom:ringing"]).string, "node-a")

        ann.send(.initiateCall(receiverId: "cy", receiverType: .user, type: .audio, timeoutSeconds: nil))
        let sid = try XCTUnwrap(call(ann, .initiated)?.sessionId)
        XCTAssertEqual(call(cy, .incoming)?.initiator.name, "Ann", "the ring reaches C")
        cy.send(.acceptCall(sessionId: sid))
        XCTAssertEqual(call(ann, .accepted)?.status, .ongoing)
        // The call's room, joined through B and C; when it empties, both hear the call end.
        let (annRoom, _) = try join(b, "ann", session: sid)
        let (cyRoom, j) = try join(c, "cy", session: sid)
        XCTAssertEqual(j.participants.count, 2)
        for p in [annRoom, cyRoom] { p.send(.leave); XCTAssertTrue(p.waitClosed()) }
        XCTAssertEqual(call(ann, .ended)?.status, .ended, "the room's end reached the ringing node")
        XCTAssertNotNil(call(cy, .ended))
        XCTAssertEqual(b.request("GET", "/v3/calls/\(sid)", headers: b.adminHeaders).data["status"] as? String, "ended")

        // A ring still ringing when the ringing node goes silent: B and C say their clients' hello
        // again to a new ringing node, which took up the rings on record — Cy is rung again and answers.
        ann.send(.initiateCall(receiverId: "cy", receiverType: .user, type: .audio, timeoutSeconds: 60))
        let pending = try XCTUnwrap(call(ann, .initiated, except: sid)?.sessionId)
        XCTAssertNotNil(call(cy, .incoming, except: sid))
        a.server.abandonClusterForTests()
        XCTAssertTrue(eventually(8) { (try? registry.redis.command(["GET", "callroom:ringing"]).string).flatMap { $0 } ?? "node-a" != "node-a" },
                      "ringing placed anew")
        XCTAssertTrue(eventually(3) { ann.all.filter { if case .welcome = $0 { return true }; return false }.count == 2 }, "ann's hello said again")
        XCTAssertTrue(eventually(3) { cy.all.filter { if case .welcome = $0 { return true }; return false }.count == 2 }, "cy's hello said again")
        XCTAssertTrue(eventually(3) { cy.all.filter { if case .call(.incoming, let w, _) = $0 { return w.sessionId == pending }; return false }.count == 2 },
                      "the ring in progress rings again from the new ringing node")
        cy.send(.acceptCall(sessionId: pending))
        XCTAssertEqual(call(ann, .accepted, except: sid)?.sessionId, pending)
        ann.send(.endCall(sessionId: pending))
        XCTAssertNotNil(cy.wait { if case .call(.ended, let x, _) = $0 { return x.sessionId == pending }; return false }, "ended through the new ringing node")
    }

    func testARevocationOnOneNodeEndsTheSessionsOnEveryNode() throws {
        guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
        let database = try PostgresCluster.shared().createDatabase()
        try startNodes(["node-a", "node-b"]) { $0.databaseURL = database }
        let (a, b) = (nodes[0], nodes[1])
        let token = try a.callToken(uid: "ann", session: "rev")
        let ann = try SignalProbe(url: a.server.url)
        ann.send(.join(.init(callToken: token, sessionId: "rev")))
        XCTAssertNotNil(ann.joined())
        XCTAssertEqual(a.server.roomsHeld, 1, "the room is on A")
        // The operator revokes ann's tokens through B: A ends her session and refuses the old token.
        XCTAssertEqual(b.request("DELETE", "/v3/users/ann/auth_tokens", headers: b.adminHeaders).status, 200)
        XCTAssertNotNil(ann.wait { if case .left(.revoked, _) = $0 { return true }; return false }, "A heard of B's revocation")
        XCTAssertTrue(ann.waitClosed())
        let again = try SignalProbe(url: a.server.url)
        again.send(.join(.init(callToken: token, sessionId: "rev")))
        XCTAssertEqual(again.error(), SignalErrorCode.tokenRevoked.rawValue)
    }

    /// Wrong passcodes are counted per address on the node that holds the socket, whichever node
    /// holds the room: the `ERR_PASSCODE` comes back over the cluster bus and still spends one.
    /// Two nodes on one database, loopback held to the per-address limits, and `session`'s room
    /// behind the passcode 4321 as both nodes know it.
    private func twoNodesWithAPasscode(on session: String) throws -> (ServerHarness, ServerHarness) {
        guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
        let database = try PostgresCluster.shared().createDatabase()
        try startNodes(["node-a", "node-b"]) { $0.databaseURL = database; $0.addressLimitsExemptLoopback = false }
        let (a, b) = (nodes[0], nodes[1])
        XCTAssertEqual(a.request("PUT", "/v3/rooms/\(session)", headers: a.adminHeaders, body: #"{"passcode":"4321"}"#).status, 200)
        XCTAssertTrue(eventually { b.request("GET", "/v3/rooms/\(session)", headers: b.adminHeaders).data["hasPasscode"] as? Bool == true })
        return (a, b)
    }

    func testWrongPasscodesAreRationedPerAddressWhereverTheRoomIs() throws {
        let (a, b) = try twoNodesWithAPasscode(on: "vault")
        func join(_ uid: String, _ passcode: String, via node: ServerHarness) throws -> SignalProbe {
            let p = try SignalProbe(url: node.server.url)
            p.send(.join(.init(callToken: try a.callToken(uid: uid, session: "vault"), sessionId: "vault", passcode: passcode)))
            return p
        }
        XCTAssertNotNil(try join("ann", "4321", via: a).joined())
        let other = a.server.roomsHeld == 1 ? b : a
        XCTAssertEqual(other.server.roomsHeld, 0, "the guesses go to the node without the room")
        for user in 0..<5 {
            for guess in 0..<4 { XCTAssertEqual(try join("m\(user)", "\(guess)", via: other).error(), "ERR_PASSCODE") }
        }
        XCTAssertEqual(try join("zed", "4321", via: other).error(), "ERR_RATE_LIMITED", "the address's 20 are spent")
    }

    /// Behind a balancer one address's joins land on every node: its wrong guesses are counted
    /// over the cluster (Redis), not 20 on each node.
    func testAnAddressesWrongPasscodesAreCountedOverTheCluster() throws {
        let (a, b) = try twoNodesWithAPasscode(on: "safe")
        func join(_ uid: String, _ passcode: String, via node: ServerHarness) throws -> String? {
            let p = try SignalProbe(url: node.server.url)
            p.send(.join(.init(callToken: try a.callToken(uid: uid, session: "safe"), sessionId: "safe", passcode: passcode)))
            return p.error()
        }
        // 20 wrong guesses, every other one through each node (10 each: half of each node's own count).
        for user in 0..<5 {
            for guess in 0..<4 { XCTAssertEqual(try join("m\(user)", "\(guess)", via: guess % 2 == 0 ? a : b), "ERR_PASSCODE") }
        }
        // The next wrong one through each node is still checked (the node has not yet seen the
        // cluster's count spent), and then that node refuses the address, right passcode or not.
        for node in [a, b] {
            XCTAssertEqual(try join("n\(node === a ? "a" : "b")", "9", via: node), "ERR_PASSCODE")
            XCTAssertTrue(eventually(3) { (try? join("zed", "4321", via: node)) == "ERR_RATE_LIMITED" },
                          "the address's 20 over the cluster are spent")
        }
    }

    func testRoomRulesSetOnOneNodeHoldOnTheRoomsNode() throws {
        guard PostgresCluster.isInstalled else { throw XCTSkip("PostgreSQL is not installed: run scripts/install-deps.sh") }
        let database = try PostgresCluster.shared().createDatabase()
        try startNodes(["node-a", "node-b"]) { $0.databaseURL = database }
        let (a, b) = (nodes[0], nodes[1])
        func join(_ uid: String, passcode: String?) throws -> SignalProbe {
            let p = try SignalProbe(url: a.server.url)
            p.send(.join(.init(callToken: try a.callToken(uid: uid, session: "board"), sessionId: "board", passcode: passcode)))
            return p
        }
        // Open at first; then the operator locks the room through B, and A (which runs it) follows.
        XCTAssertEqual(a.request("GET", "/v3/rooms/board", headers: a.adminHeaders).data["hasPasscode"] as? Bool, false)
        let set = b.request("PUT", "/v3/rooms/board", headers: b.adminHeaders, body: #"{"passcode":"s3cret-code","allowedUids":["ann"]}"#)
        XCTAssertEqual(set.status, 200, set.text)
        XCTAssertTrue(eventually { a.request("GET", "/v3/rooms/board", headers: a.adminHeaders).data["hasPasscode"] as? Bool == true },
                      "A heard of B's rules")
        XCTAssertEqual(try join("mallory", passcode: "s3cret-code").error(), "ERR_NOT_ALLOWED_IN_ROOM")
        XCTAssertEqual(try join("ann", passcode: "guess").error(), "ERR_PASSCODE")
        XCTAssertNotNil(try join("ann", passcode: "s3cret-code").joined(), "the passcode B hashed opens A's room")
        XCTAssertEqual(a.server.roomsHeld, 1, "the room is on A")
        // Lifted through B again (no rules): anyone may join on A.
        XCTAssertEqual(b.request("PUT", "/v3/rooms/board", headers: b.adminHeaders, body: "{}").status, 200)
        XCTAssertTrue(eventually { a.request("GET", "/v3/rooms/board", headers: a.adminHeaders).data["hasPasscode"] as? Bool == false })
        XCTAssertNotNil(try join("mallory", passcode: nil).joined())
    }
}
