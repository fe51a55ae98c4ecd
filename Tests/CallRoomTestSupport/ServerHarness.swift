import CallsCore
import CallsSecurity
import CallsServer
import CallsTransport
import Foundation
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
import CallsDatabase
#endif

/// The one in-process test server: a `CallServer` on loopback with a temporary data directory
/// (in the suite's PostgreSQL pass, its store in a database of its own), plus REST and
/// signalling helpers. Server, SDK and integration tests all start theirs with this.
public final class ServerHarness {
    public let dir: String
    public let server: CallServer
    /// The PostgreSQL database of the suite's PostgreSQL pass (nil: SQLite in `dir`).
    public let databaseURL: String?

    /// Deletes the data directory on `stop()` (tests that never look at it afterwards).
    public let removesDataOnStop: Bool

    /// Starts a server on loopback ports the kernel picks, in `dataDir` (a new temporary one by
    /// default), configured by `configure` last.
    public init(dataDir: String? = nil, autoCreate: Bool = true, removesDataOnStop: Bool = false,
                configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        self.removesDataOnStop = removesDataOnStop
        var c = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0,
                                    dataDir: dataDir ?? FileManager.default.temporaryDirectory.appendingPathComponent("crs-\(UUID().uuidString.prefix(8))").path)
        c.autoCreateUsers = autoCreate
        c.logLevel = .error
        // The suite's PostgreSQL pass: the store in a database of its own per data directory.
        if StoreBackend.current == .postgres { c.databaseURL = try PostgresCluster.shared().database(forDataDir: c.dataDir) }
        configure(&c)
        dir = c.dataDir
        databaseURL = c.databaseURL
        server = CallServer(configuration: c)
        try server.start()
    }

    public func stop() {
        server.stop()
        if removesDataOnStop { removeData() }
    }

    /// A new data directory holding this server's keys.json: another node of its cluster
    /// (callroomd refuses to join a cluster with other keys).
    public func dataDirSharingKeys(_ name: String = "node") throws -> String { try Self.dataDir(withKeysFrom: dir, name: name) }

    /// A new data directory holding a copy of `source`'s keys.json.
    public static func dataDir(withKeysFrom source: String, name: String = "node") throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("crs-\(name)-\(UUID().uuidString.prefix(6))").path
        try CallroomdProcess.shareKeys(from: source, into: d)
        return d
    }

    /// Another connection to the server's store, from outside the server (as an operator's would be).
    public func storeDatabase() throws -> any StoreDatabase {
        if let databaseURL { return try PostgresDatabase(url: databaseURL) }
        return try SQLiteDatabase(path: dir + "/callroom.sqlite")
    }
    public func removeData() { try? FileManager.default.removeItem(atPath: dir) }

    public typealias Reply = BlockingHTTP.Reply

    /// A blocking HTTP request to this server (tests only).
    public func request(_ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil) -> Reply {
        BlockingHTTP.request(method, server.url + path, headers: headers, body: body)
    }

    public var adminHeaders: [String: String] { ["apikey": server.keys.apiKey] }

    /// Logs `uid` in with the auth key and returns a call token for `session`.
    public func callToken(uid: String, session: String, name: String? = nil) throws -> String {
        try ServerHarness.callToken(url: server.url, appId: server.keys.appId, authKey: server.keys.authKey,
                                    uid: uid, session: session, name: name)
    }

    /// The same against any server (an out-of-process `callroomd` too).
    public static func callToken(url: String, appId: String, authKey: String, uid: String, session: String,
                          name: String? = nil, trust: TLSTrust? = nil) throws -> String {
        var body = #"{"uid":"\#(uid)","authKey":"\#(authKey)""#
        if let name { body += #","name":"\#(name)""# }
        body += "}"
        func post(_ path: String, _ headers: [String: String], _ body: String) -> [String: Any] {
            guard let trust else { return BlockingHTTP.request("POST", url + path, headers: headers, body: body).data }
            // HTTPS with a chosen trust: libcurl (URLSession on Linux cannot take a CA file).
            guard let client = try? CurlClient(trust: trust),
                  case .success(let r) = client.post(url + path, headers: headers.map { "\($0.key): \($0.value)" } + ["Content-Type: application/json"],
                                                     body: Array(body.utf8), timeoutMs: 5000) else { return [:] }
            return ((try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any])?["data"] as? [String: Any] ?? [:]
        }
        let auth = try XCTUnwrap(post("/v3/sdk/login", ["appId": appId], body)["authToken"] as? String)
        return try XCTUnwrap(post("/v3.0/call_tokens", ["appId": appId, "authToken": auth], #"{"sessionId":"\#(session)"}"#)["token"] as? String)
    }
}

/// A signalling client for tests: records every server message.
public final class SignalProbe: WebSocketClientDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [ServerMessage] = []
    private var raw: [String] = []
    public private(set) var closed = false
    public private(set) var client: WebSocketClient!

    public init(url: String, trust: TLSTrust = .system) throws {
        client = WebSocketClient(url: URL(string: url + "/v1/signal")!, trust: trust, delegate: self)
        try client.connect()
    }

    public func webSocketDidOpen(_ c: WebSocketClient) {}
    public func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        lock.lock(); defer { lock.unlock() }
        raw.append(String(decoding: message, as: UTF8.self))
        if let m = try? ServerMessage(json: Data(message)) { messages.append(m) }
    }
    public func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) {
        lock.lock(); closed = true; lock.unlock()
    }

    public func send(_ m: ClientMessage) { client.send(text: m.json()) }
    public func sendRaw(_ s: String) { client.send(text: s) }

    public var all: [ServerMessage] { lock.lock(); defer { lock.unlock() }; return messages }
    public var isClosed: Bool { lock.lock(); defer { lock.unlock() }; return closed }

    /// Waits for a message matching `match` (searching everything received so far).
    public func wait(timeout: TimeInterval = 5, _ match: (ServerMessage) -> Bool) -> ServerMessage? {
        eventuallyValue(timeout) { all.first(where: match) }
    }

    public func waitClosed(timeout: TimeInterval = 5) -> Bool { eventually(timeout) { isClosed } }

    public func joined(timeout: TimeInterval = 5) -> ServerMessage.Joined? {
        if case .joined(let j)? = wait(timeout: timeout, { if case .joined = $0 { return true }; return false }) { return j }
        return nil
    }

    public func error(timeout: TimeInterval = 5) -> String? {
        if case .error(let code, _)? = wait(timeout: timeout, { if case .error = $0 { return true }; return false }) { return code.rawValue }
        return nil
    }

    public func disconnect() { client.disconnect() }
}

extension ServerHarness {
    /// A server with short timers, for grace-period and idle tests.
    public static func quick(grace: Double) throws -> ServerHarness {
        try ServerHarness(configure: { $0.gracePeriodSeconds = grace })
    }
}

/// A participant joined over signalling, with a loopback UDP socket bound to the relay.
public struct BoundParticipant {
    public let probe: SignalProbe
    public let socket: UDPSocket
    public let joined: ServerMessage.Joined
    public let relay: SocketAddress
    public var ssrc: UInt32 { joined.you.ssrc }

    /// Logs `uid` in on the server at `url`, joins `session` (a video session: it gets a video
    /// SSRC too) and binds a fresh socket (asserting the bind acknowledgement).
    public static func join(url: String, appId: String, authKey: String, uid: String, session: String,
                     sessionType: SignalSessionType = .voice) throws -> BoundParticipant {
        let probe = try SignalProbe(url: url)
        probe.send(.join(.init(callToken: try ServerHarness.callToken(url: url, appId: appId, authKey: authKey,
                                                                         uid: uid, session: session), audioMuted: false,
                               sessionType: sessionType)))
        let j = try XCTUnwrap(probe.joined(), "\(uid) joined")
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: j.mediaPort))
        let s = try UDPSocket(host: "127.0.0.1", port: 0)
        XCTAssertTrue(s.bindMedia(j, relay: relay), "\(uid) bound")
        return BoundParticipant(probe: probe, socket: s, joined: j, relay: relay)
    }
}

extension ServerHarness {
    public func joinAndBind(_ uid: String, session: String, sessionType: SignalSessionType = .voice) throws -> BoundParticipant {
        try BoundParticipant.join(url: server.url, appId: server.keys.appId, authKey: server.keys.authKey, uid: uid, session: session,
                                  sessionType: sessionType)
    }
}

extension CallroomdProcess {
    public func joinAndBind(_ uid: String, session: String) throws -> BoundParticipant {
        try BoundParticipant.join(url: url, appId: appId, authKey: authKey, uid: uid, session: session)
    }
}

extension UDPSocket {
    /// Waits up to `timeoutMs` for one datagram: its bytes and its sender (tests only).
    public func receiveDatagram(timeoutMs: Int32 = 1000) -> (bytes: [UInt8], from: SocketAddress)? {
        guard waitReadable(timeoutMs: timeoutMs) else { return nil }
        var buf = [UInt8](repeating: 0, count: 2048)
        guard let r = buf.withUnsafeMutableBytes({ receive(into: $0) }) else { return nil }
        return (Array(buf.prefix(r.count)), r.from)
    }

    /// The next datagram's bytes, or nil after `timeoutMs`.
    public func receiveBytes(timeoutMs: Int32 = 1000) -> [UInt8]? { receiveDatagram(timeoutMs: timeoutMs)?.bytes }

    /// Binds this socket for the participant `j` describes: bind, answer the consent challenge,
    /// acknowledged (tests only).
    public func bindMedia(_ j: ServerMessage.Joined, relay: SocketAddress) -> Bool {
        MediaConsent(ssrc: j.you.ssrc, token: Hex.decode(j.bindToken) ?? []).handshake(
            send: { self.send($0, to: relay) }, receive: { self.receiveBytes(timeoutMs: $0) })
    }
}
