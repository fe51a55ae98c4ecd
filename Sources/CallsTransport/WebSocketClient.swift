import CWebSockets
import CallsCore
import Foundation
import Synchronization

/// What a `WebSocketClient` reports. Called on the client's service thread; return quickly.
public protocol WebSocketClientDelegate: AnyObject, Sendable {
    func webSocketDidOpen(_ client: WebSocketClient)
    func webSocket(_ client: WebSocketClient, didReceive message: [UInt8], binary: Bool)
    /// The connection failed to open or closed. Called exactly once per `connect()`.
    func webSocket(_ client: WebSocketClient, didCloseWith error: WebSocketClientError?)
}

/// Why a WebSocket client connection failed or ended.
public enum WebSocketClientError: Error, Equatable, Sendable {
    case badURL(String)
    case cannotCreateContext
    case connectFailed(String)
    case closedByPeer
    case messageTooBig
    /// More than `maxQueuedBytes` waited to be written: the server (or the path to it) stopped
    /// reading.
    case peerNotReading
}

/// One client WebSocket connection over libwebsockets, with its own service thread.
///
/// Thread rules: `connect()` and `disconnect()` from the owner; `send` from any thread.
/// Delegate calls arrive on the service thread (`callroom.ws-client`).
public final class WebSocketClient: @unchecked Sendable {
    public let url: URL
    public let subprotocol: String
    public let maxMessageBytes: Int
    /// What may wait to be written (bytes); past it the connection ends with `.peerNotReading`
    /// and what is sent is dropped.
    public let maxQueuedBytes: Int
    private weak var delegateRef: (any WebSocketClientDelegate)?

    // Service-thread state
    private var context: OpaquePointer?
    private var wsi: OpaquePointer?
    private var rx: [UInt8] = []
    private var tx: [([UInt8], Bool)] = []
    private var reported = false
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private var cStrings: [UnsafeMutablePointer<CChar>] = []

    private let running = Atomic<Bool>(false)
    private let outbox = Locked<[([UInt8], Bool)]>([])
    /// Bytes queued and not yet written (the outbox and `tx`).
    private let queuedBytes = Atomic<Int>(0)
    private let stalledFlag = Atomic<Bool>(false)
    private let closeFlag = Atomic<Bool>(false)
    private let abortFlag = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// How other threads wake the service thread; retired before the context is destroyed.
    private let waker = ServiceWaker()

    /// How a `wss://` (or `https://`) server's certificate is checked.
    public let trust: TLSTrust

    public init(url: URL, subprotocol: String = signallingSubprotocol, maxMessageBytes: Int = 1 << 20, maxQueuedBytes: Int = 4 << 20,
                trust: TLSTrust = .system, delegate: any WebSocketClientDelegate) {
        self.url = url
        self.trust = trust
        self.subprotocol = subprotocol
        self.maxMessageBytes = maxMessageBytes
        self.maxQueuedBytes = maxQueuedBytes
        self.delegateRef = delegate
    }

    deinit {
        protocols?.deallocate()
        cStrings.forEach { free($0) }
    }

    private func cString(_ s: String) -> UnsafePointer<CChar>? {
        guard let p = strdup(s) else { return nil }
        cStrings.append(p)
        return UnsafePointer(p)
    }

    /// Starts connecting; the delegate hears `webSocketDidOpen` or `didCloseWith`.
    public func connect() throws(WebSocketClientError) {
        guard let scheme = url.scheme, ["ws", "http", "wss", "https"].contains(scheme), let host = url.host else {
            throw .badURL(url.absoluteString)
        }
        let secure = scheme == "wss" || scheme == "https"
        callroom_lws_quiet(1)
        let protos = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        protos.initialize(repeating: lws_protocols(), count: 2)
        protos[0].name = cString(subprotocol)
        protos[0].callback = webSocketClientCallback
        protos[0].rx_buffer_size = 16 * 1024
        protocols = protos

        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protos)
        info.gid = -1
        info.uid = -1
        info.user = Unmanaged.passUnretained(self).toOpaque()
        if secure {
            info.options |= callroom_lws_opt_ssl_global_init
            info.client_ssl_ca_filepath = cString(trust.bundle)
        }
        guard let ctx = lws_create_context(&info) else { throw .cannotCreateContext }
        context = ctx

        var cc = lws_client_connect_info()
        cc.context = ctx
        cc.address = cString(host)
        cc.port = Int32(url.port ?? (secure ? 443 : 80))
        let path = url.path.isEmpty ? "/" : url.path
        cc.path = cString(path)
        cc.host = cString(host)
        cc.origin = cString(host)
        cc.protocol = cString(subprotocol)
        cc.ssl_connection = secure ? callroom_lccscf_use_ssl | (trust.insecure ? callroom_lccscf_insecure : 0) : 0
        guard let w = lws_client_connect_via_info(&cc) else {
            lws_context_destroy(ctx)
            context = nil
            throw .connectFailed("cannot start connection to \(host)")
        }
        wsi = w
        waker.publish(ctx)
        running.store(true, ordering: .releasing)
        let t = Thread { [self] in self.serviceLoop() }
        t.name = "callroom.ws-client"
        t.start()
    }

    /// Queues a message. Safe from any thread; dropped once the connection has closed, or when
    /// `maxQueuedBytes` wait already (which ends the connection: `.peerNotReading`).
    public func send(text: String) { send(Array(text.utf8), binary: false) }

    public func send(_ bytes: [UInt8], binary: Bool) {
        guard !stalledFlag.load(ordering: .acquiring) else { return }
        guard queuedBytes.add(bytes.count, ordering: .relaxed).newValue <= maxQueuedBytes else {
            queuedBytes.subtract(bytes.count, ordering: .relaxed)
            stalledFlag.store(true, ordering: .releasing)
            waker.wake()
            return
        }
        outbox.withLock { $0.append((bytes, binary)) }
        waker.wake()
    }

    /// Closes after the queued messages are written, and waits for the service thread. Not
    /// needed after `didCloseWith`: a connection that ended has let go of its thread and
    /// libwebsockets context already.
    public func disconnect() {
        closeFlag.store(true, ordering: .releasing)
        guard running.load(ordering: .acquiring) else { return }
        waker.wake()
        finished.wait()
    }

    /// Drops the TCP connection at once without a close handshake (tests of connection loss).
    public func abort() {
        abortFlag.store(true, ordering: .releasing)
        disconnect()
    }

    private func serviceLoop() {
        guard let ctx = context else { return }
        var closeDeadline: UInt64 = 0
        while running.load(ordering: .acquiring) {
            if lws_service(ctx, 0) < 0 { break }
            // The connection is gone (closed by the peer, failed, or torn down): the thread and
            // the context go with it, whether or not the owner ever calls `disconnect()`.
            if wsi == nil { break }
            // (A peer that does not read never makes the socket writable: the loop ends it.)
            if stalledFlag.load(ordering: .acquiring) {
                report(.peerNotReading)
                break
            }
            if closeFlag.load(ordering: .acquiring) {
                if closeDeadline == 0 {
                    closeDeadline = monotonicNanoseconds() + 500_000_000
                    if let w = wsi { lws_callback_on_writable(w) }
                }
                if monotonicNanoseconds() > closeDeadline { break }
            }
        }
        // No other thread may wake the context once it is being destroyed.
        waker.retire()
        lws_context_destroy(ctx)
        context = nil
        wsi = nil
        report(closeFlag.load(ordering: .acquiring) ? nil : .closedByPeer)
        running.store(false, ordering: .releasing)
        finished.signal()
    }

    private func report(_ error: WebSocketClientError?) {
        guard !reported else { return }
        reported = true
        delegateRef?.webSocket(self, didCloseWith: error)
    }

    fileprivate func handle(wsi w: OpaquePointer?, reason: lws_callback_reasons, data: UnsafeMutableRawPointer?, len: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            delegateRef?.webSocketDidOpen(self)
            if !outbox.withLock({ $0.isEmpty }), let w { lws_callback_on_writable(w) }
            return 0
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            let msg = data.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
            wsi = nil
            report(.connectFailed(msg))
            return 0
        case LWS_CALLBACK_CLIENT_RECEIVE:
            guard let w else { return -1 }
            // Past the limit the connection ends at once (not at the message's last fragment,
            // which a server need never send).
            if let data, len > 0 {
                guard rx.count + len <= maxMessageBytes else { rx = []; report(.messageTooBig); return -1 }
                rx.append(contentsOf: UnsafeRawBufferPointer(start: data, count: len))
            }
            if lws_is_final_fragment(w) != 0 && lws_remaining_packet_payload(w) == 0 {
                let m = rx
                rx = []
                delegateRef?.webSocket(self, didReceive: m, binary: lws_frame_is_binary(w) != 0)
            }
            return 0
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            guard let w else { return -1 }
            if abortFlag.load(ordering: .acquiring) { return -1 }
            let pending = outbox.withLock { q -> [([UInt8], Bool)] in let p = q; q.removeAll(); return p }
            tx.append(contentsOf: pending)
            if !tx.isEmpty {
                let (bytes, binary) = tx.removeFirst()
                var buf = [UInt8](repeating: 0, count: Int(callroom_lws_pre)) + bytes
                let n = buf.withUnsafeMutableBufferPointer { b in
                    lws_write(w, b.baseAddress! + Int(callroom_lws_pre), bytes.count, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT)
                }
                if n < bytes.count { return -1 }
                queuedBytes.subtract(bytes.count, ordering: .relaxed)
                if !tx.isEmpty || closeFlag.load(ordering: .acquiring) { lws_callback_on_writable(w) }
                return 0
            }
            if closeFlag.load(ordering: .acquiring) {
                lws_close_reason(w, LWS_CLOSE_STATUS_NORMAL, nil, 0)
                return -1
            }
            return 0
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            if let w = wsi { lws_callback_on_writable(w) }
            return 0
        case LWS_CALLBACK_CLIENT_CLOSED:
            wsi = nil
            report(closeFlag.load(ordering: .acquiring) ? nil : .closedByPeer)
            return 0
        case LWS_CALLBACK_WSI_DESTROY:
            if w == wsi { wsi = nil }
            return 0
        default:
            return 0
        }
    }
}

private func webSocketClientCallback(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                                     _ data: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
    guard let wsi, let ctx = lws_get_context(wsi), let raw = lws_context_user(ctx) else { return 0 }
    return Unmanaged<WebSocketClient>.fromOpaque(raw).takeUnretainedValue().handle(wsi: wsi, reason: reason, data: data, len: len)
}

extension WebSocketClient {
    /// Drops the connection without a close handshake, from a background thread (so the caller
    /// never waits for the service thread). For tests of connection loss.
    public func abortInBackground() {
        DispatchQueue.global().async { self.abort() }
    }
}
