import CallsCore
import CallsTransport
import Foundation

/// The chat side's signalling connection: presence (`hello`) and ringing calls. Requests are
/// answered in order (the server answers each on this connection before the next), so each
/// waits in a FIFO for its answer: the `call` message it causes, or the next `error`.
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

    let trust: TLSTrust

    init(url: URL, trust: TLSTrust = .system) {
        self.url = url
        self.trust = trust
    }

    /// Connects and says hello; `done` gets the `welcome` (or why not).
    func open(authToken: String, done: @escaping @Sendable (Result<ServerMessage, CometChatException>) -> Void) {
        queue.async {
            let ws = WebSocketClient(url: self.url.appendingPathComponent("v1/signal"), trust: self.trust, delegate: self)
            self.client = ws
            do { try ws.connect() } catch {
                return done(.failure(CometChatException(errorCode: CometChatException.networkError, errorDescription: "cannot connect to \(self.url): \(error)")))
            }
            self.request(.hello(authToken: authToken), expect: .welcome, done: done)
        }
    }

    func close() {
        queue.async {
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
            let waiting = self.pending
            self.pending = []
            for p in waiting {
                p.done(.failure(CometChatException(errorCode: CometChatException.networkError, errorDescription: "The connection closed.")))
            }
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
