import CallsCore
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
final class SignalDevice: WebSocketClientDelegate, @unchecked Sendable {
    struct Failure: Error { let message: String; init(_ m: String) { message = m } }

    private let lock = NSLock()
    private var received: [(ServerMessage, UInt64)] = []
    private(set) var client: WebSocketClient!
    let uid: String

    private init(uid: String) { self.uid = uid }

    func webSocketDidOpen(_ c: WebSocketClient) {}
    func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        let now = monotonicNanoseconds()
        guard let m = try? ServerMessage(json: Data(message)) else { return }
        lock.withLock { received.append((m, now)) }
    }
    func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) {}

    func send(_ m: ClientMessage) { client.send(text: m.json()) }
    func close() { client.disconnect() }

    /// Every message so far.
    var messages: [ServerMessage] { lock.withLock { received.map(\.0) } }

    /// The first message matching `match`, with its arrival time, waiting up to `timeout` s.
    func wait(timeout: Double = 10, _ match: (ServerMessage) -> Bool) -> (ServerMessage, UInt64)? {
        let end = Date().addingTimeInterval(timeout)
        repeat {
            if let hit = lock.withLock({ received.first { match($0.0) } }) { return hit }
            usleep(500)
        } while Date() < end
        return nil
    }

    /// Logs `uid` in over REST (the auth key; a dev server creates the user, named `name`) and
    /// says hello on a fresh signalling connection.
    static func online(_ url: URL, _ app: String, _ key: String, _ uid: String, name: String? = nil) async throws(Failure) -> SignalDevice {
        var req = URLRequest(url: url.appendingPathComponent("v3/sdk/login"))
        req.httpMethod = "POST"
        req.setValue(app, forHTTPHeaderField: "appId")
        req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        var body = ["uid": uid, "authKey": key]
        if let name { body["name"] = name }
        req.httpBody = try? JSONSerialization.data(withJSONObject: body)
        struct Login: Decodable { struct D: Decodable { var authToken: String }; var data: D }
        let token: String
        do {
            let (data, _) = try await URLSession.shared.data(for: req)
            token = try JSONDecoder().decode(Login.self, from: data).data.authToken
        } catch { throw Failure("login \(uid): \(error)") }
        let d = SignalDevice(uid: uid)
        d.client = WebSocketClient(url: url.appendingPathComponent("v1/signal"), delegate: d)
        do { try d.client.connect() } catch { throw Failure("connect: \(error)") }
        d.send(.hello(authToken: token))
        guard d.wait(timeout: 10, { if case .welcome = $0 { return true }; return false }) != nil else { throw Failure("no welcome for \(uid)") }
        return d
    }
}
