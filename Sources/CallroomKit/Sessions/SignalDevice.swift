import CallsCore
import CallsSecurity
import CallsTransport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One online device over raw signalling (REST login, then `hello`): what the ringing benchmark
/// and the demo's synthetic callers use (the chat SDK's API is one user per process). Records
/// every server message with its arrival time (monotonic ns, on the WebSocket's thread).
///
/// Thread rules: any thread; the record is behind a lock.
package final class SignalDevice: WebSocketClientDelegate, @unchecked Sendable {
    package struct Failure: Error { package let message: String; package init(_ m: String) { message = m } }

    private let lock = NSLock()
    private var received: [(ServerMessage, UInt64)] = []
    private(set) var client: WebSocketClient!
    package let uid: String
    /// The auth token the device logged in with (REST calls as this user).
    private(set) var authToken = ""
    private let server: URL
    private let appID: String

    private init(uid: String, server: URL, appID: String) {
        self.uid = uid
        self.server = server
        self.appID = appID
    }

    package func webSocketDidOpen(_ c: WebSocketClient) {}
    package func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        let now = monotonicNanoseconds()
        guard let m = try? ServerMessage(json: Data(message)) else { return }
        lock.withLock { received.append((m, now)) }
    }
    package func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) {}

    package func send(_ m: ClientMessage) { client.send(text: m.json()) }
    package func close() { client.disconnect() }

    /// Forgets the messages so far (the next `wait` sees only newer ones).
    package func forget() { lock.withLock { received.removeAll() } }

    /// Every message so far.
    package var messages: [ServerMessage] { lock.withLock { received.map(\.0) } }

    /// The first message matching `match`, with its arrival time, waiting up to `timeout` s.
    package func wait(timeout: Double = 10, _ match: (ServerMessage) -> Bool) -> (ServerMessage, UInt64)? {
        let end = Date().addingTimeInterval(timeout)
        repeat {
            if let hit = lock.withLock({ received.first { match($0.0) } }) { return hit }
            usleep(500)
        } while Date() < end
        return nil
    }

    /// Joins the room `session` as this user on a second connection (a call token over REST,
    /// then `join`: leaving a room closes its connection, so presence keeps its own) and binds a
    /// fresh UDP socket to the relay.
    package func joinRoom(_ session: String) async throws(Failure) -> (room: SignalDevice, socket: UDPSocket, relay: SocketAddress, ssrc: UInt32) {
        struct Token: Decodable { struct D: Decodable { var token: String }; var data: D }
        let callToken = try await Self.post(server.appendingPathComponent("v3.0/call_tokens"), appID: appID, headers: ["authToken": authToken],
                                            body: ["sessionId": session], as: Token.self, what: "call token for \(uid)").data.token
        let room = try Self.connect(uid: uid, server: server, appID: appID, authToken: authToken)
        room.send(.join(.init(callToken: callToken, sessionId: session, idleTimeoutSeconds: 0)))
        guard case (.joined(let j), _)? = room.wait(timeout: 10, { if case .joined(let j) = $0 { return j.sessionId == session }; return false }),
              let relay = SocketAddress.resolve(host: server.host ?? "127.0.0.1", port: j.mediaPort) else {
            throw Failure("\(uid) could not join \(session)")
        }
        let udp: UDPSocket
        do { udp = try UDPSocket(host: "0.0.0.0", port: 0) } catch { throw Failure("udp: \(error)") }
        guard MediaConsent(ssrc: j.you.ssrc, token: Hex.decode(j.bindToken) ?? []).handshake(
            send: { udp.send($0, to: relay) }, receive: { udp.receiveCopy(timeoutMs: $0) }) else {
            throw Failure("\(uid): no bind acknowledgement")
        }
        return (room, udp, relay, j.you.ssrc)
    }

    /// Logs `uid` in over REST (the auth key; a dev server creates the user, named `name`) and
    /// says hello on a fresh signalling connection.
    package static func online(_ url: URL, _ app: String, _ key: String, _ uid: String, name: String? = nil) async throws(Failure) -> SignalDevice {
        var body = ["uid": uid, "authKey": key]
        if let name { body["name"] = name }
        struct Login: Decodable { struct D: Decodable { var authToken: String }; var data: D }
        let token = try await post(url.appendingPathComponent("v3/sdk/login"), appID: app, headers: [:], body: body, as: Login.self,
                                   what: "login \(uid)").data.authToken
        let d = try connect(uid: uid, server: url, appID: app, authToken: token)
        d.send(.hello(authToken: token))
        guard d.wait(timeout: 10, { if case .welcome = $0 { return true }; return false }) != nil else { throw Failure("no welcome for \(uid)") }
        return d
    }

    /// A fresh signalling connection as `uid`.
    private static func connect(uid: String, server: URL, appID: String, authToken: String) throws(Failure) -> SignalDevice {
        let d = SignalDevice(uid: uid, server: server, appID: appID)
        d.authToken = authToken
        d.client = WebSocketClient(url: server.appendingPathComponent("v1/signal"), delegate: d)
        do { try d.client.connect() } catch { throw Failure("connect: \(error)") }
        return d
    }

    /// A JSON POST with the app id; decodes the answer as `T`.
    private static func post<T: Decodable>(_ url: URL, appID: String, headers: [String: String], body: [String: String], as: T.Type,
                                           what: String) async throws(Failure) -> T {
        var req = URLRequest(url: url)
        req.httpMethod = "POST"
        req.setValue(appID, forHTTPHeaderField: "appId")
        req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        req.httpBody = try? JSONSerialization.data(withJSONObject: body)
        do {
            let (data, _) = try await URLSession.shared.data(for: req)
            return try JSONDecoder().decode(T.self, from: data)
        } catch { throw Failure("\(what): \(error)") }
    }
}
