import CallsCore
import CallsTransport
import Foundation

/// The chat side's signalling connection: presence (`hello`) and ringing calls. Requests are
/// answered in order (the server answers each on this connection before the next), so each
/// waits in a FIFO for its answer: the `call` message it causes, or the next `error`.
///
/// A connection that closes without `close()` (the server restarted, its node died, the network
/// dropped) is opened again and says `hello` again, after 0.5 s, then 1, 2, 4, 8 s between tries
/// (behind a load balancer that lands on a live node, which puts this device back online);
/// requests waiting meanwhile fail with `NETWORK_ERROR`. A `hello` refused for its token (it
/// was revoked) stops the tries.
///
/// Thread rules: all state is on `queue`; the WebSocket's callbacks hop there. Results and
/// listener events are handed to `deliver`, which puts them on the callback queue.
final class ChatConnection: WebSocketClientDelegate, @unchecked Sendable {
    /// What a request waits for.
    enum Expect {
        case welcome
        case initiated
        case event(CallEventKind, sessionId: String)
    }

    struct Pending {
        var id: UInt64
        var expect: Expect
        var done: @Sendable (Result<ServerMessage, CometChatException>) -> Void
    }

    let queue = DispatchQueue(label: "callroom.chat")
    private let url: URL
    private var client: WebSocketClient?
    private var pending: [Pending] = []
    private var nextID: UInt64 = 1
    /// Told of every `call` message that no request was waiting for (on `queue`).
    var onCall: (@Sendable (CallEventKind, WireCall) -> Void)?
    /// Told (on `queue`) when the connection is lost, tried again, and back.
    var onState: (@Sendable (ChatConnectionState) -> Void)?
    /// The token `hello` said (again on each reconnect); nil until `open`.
    private var authToken: String?
    /// `close()` was called: a close that follows is not a loss.
    private var closing = false
    /// A `welcome` came on some socket of this connection (reconnects start only after one).
    private var welcomedOnce = false
    private var retryDelay = 0.5

    let trust: TLSTrust

    init(url: URL, trust: TLSTrust = .system) {
        self.url = url
        self.trust = trust
    }

    /// Connects and says hello; `done` gets the `welcome` (or why not).
    func open(authToken: String, done: @escaping @Sendable (Result<ServerMessage, CometChatException>) -> Void) {
        queue.async {
            self.authToken = authToken
            self.connect(done: done)
        }
    }

    /// A new socket and its `hello` (on `queue`; `done` is called there too, as every request's
    /// answer is). False when the socket could not even start (`done` has had the failure).
    @discardableResult
    private func connect(done: @escaping @Sendable (Result<ServerMessage, CometChatException>) -> Void) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let token = authToken else { return false }
        let ws = WebSocketClient(url: url.appendingPathComponent("v1/signal"), trust: trust, delegate: self)
        client = ws
        do { try ws.connect() } catch {
            client = nil
            done(.failure(CometChatException(errorCode: CometChatException.networkError, errorDescription: "cannot connect to \(url): \(error)")))
            return false
        }
        request(.hello(authToken: token), expect: .welcome) { [weak self] result in
            if case .success = result, let self {
                let again = self.welcomedOnce
                self.welcomedOnce = true
                self.retryDelay = 0.5
                if again { self.onState?(.connected) }
            }
            done(result)
        }
        return true
    }

    /// After a loss: waits `retryDelay`, then connects again (doubling the wait up to 8 s). A
    /// socket that then closes comes back here through `didCloseWith`; one that cannot start,
    /// directly — each failure schedules one retry.
    private func reconnectLater() {
        dispatchPrecondition(condition: .onQueue(queue))
        let delay = retryDelay
        retryDelay = min(retryDelay * 2, 8)
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !self.closing, self.client == nil else { return }
            self.onState?(.connecting)
            let started = self.connect { [weak self] result in
                // Revoked or expired: trying again cannot help.
                guard case .failure(let e) = result, e.errorCode.hasPrefix("AUTH_ERR"), let self else { return }
                self.closing = true
                self.onState?(.failed(e))
            }
            if !started { self.reconnectLater() }
        }
    }

    func close() {
        queue.async {
            self.closing = true
            self.client?.disconnect()
            self.client = nil
        }
    }

    /// Sends `message` and waits (on `queue`) for what it causes.
    func request(_ message: ClientMessage, expect: Expect, done: @escaping @Sendable (Result<ServerMessage, CometChatException>) -> Void) {
        queue.async {
            guard let ws = self.client else {
                return done(.failure(CometChatException(errorCode: CometChatException.notLoggedIn, errorDescription: "Not logged in (no connection).")))
            }
            let id = self.nextID
            self.nextID += 1
            self.pending.append(Pending(id: id, expect: expect, done: done))
            ws.send(text: message.json())
            // A request the server never answers (a lost connection) fails rather than hangs.
            self.queue.asyncAfter(deadline: .now() + 15) { [weak self] in self?.expire(id) }
        }
    }

    private func expire(_ id: UInt64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let i = pending.firstIndex(where: { $0.id == id }) else { return }  // answered already
        pending.remove(at: i).done(.failure(CometChatException(errorCode: CometChatException.timedOut, errorDescription: "No answer from the server in 15 s.")))
    }

    // MARK: WebSocket (any thread → queue)

    func webSocketDidOpen(_ c: WebSocketClient) {}

    func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        guard let m = try? ServerMessage(json: Data(message)) else { return }
        queue.async { self.handle(m) }
    }

    func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) {
        queue.async {
            let current = c === self.client
            if current { self.client = nil }
            guard current || self.closing else { return }  // a socket replaced already
            let waiting = self.pending
            self.pending = []
            for p in waiting {
                p.done(.failure(CometChatException(errorCode: CometChatException.networkError, errorDescription: "The connection closed.")))
            }
            guard current, !self.closing, self.welcomedOnce else { return }
            self.onState?(.disconnected)
            self.reconnectLater()
        }
    }

    private func handle(_ m: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch m {
        case .error(let code, let text):
            guard !pending.isEmpty else { return }
            pending.removeFirst().done(.failure(CometChatException(errorCode: code.rawValue, errorDescription: text)))
        case .welcome:
            if let i = pending.firstIndex(where: { if case .welcome = $0.expect { return true }; return false }) {
                pending.remove(at: i).done(.success(m))
            }
        case .call(let kind, let call, _):
            if let i = pending.firstIndex(where: { p in
                switch p.expect {
                case .initiated: return kind == .initiated
                case .event(let k, let sid): return k == kind && sid == call.sessionId
                case .welcome: return false
                }
            }) {
                pending.remove(at: i).done(.success(m))
                return
            }
            onCall?(kind, call)
        default:
            break
        }
    }
}

/// What a chat connection tells the SDK about itself after its first `welcome`.
enum ChatConnectionState: Sendable {
    /// The connection closed without `close()`: reconnecting.
    case disconnected
    /// Trying again.
    case connecting
    /// Welcomed again: presence (ringing) reaches this device once more.
    case connected
    /// Tries stopped: the server refused the token.
    case failed(CometChatException)
}
