import CWebSockets
import CallsCore
import Foundation
import Synchronization

/// Errors starting a web server.
public enum WebServerError: Error, Equatable, Sendable {
    case cannotCreateContext(host: String, port: Int)
    /// The address cannot be bound: `reason` is the system's word (`Address already in use`).
    case cannotBind(host: String, port: Int, reason: String)
    case cannotStartThread
}

/// The PEM files a TLS listener serves (OpenSSL through libwebsockets): the certificate chain
/// and its private key.
public struct TLSFiles: Sendable, Equatable {
    public var certificate: String
    public var privateKey: String
    public init(certificate: String, privateKey: String) {
        self.certificate = certificate
        self.privateKey = privateKey
    }
}

/// An HTTP/1.1 + WebSocket server on one TCP port, built on libwebsockets.
///
/// ```
///  any thread ──send/close/respond──▶ [outbox (Locked)] ──lws_cancel_service──▶ service thread
///  service thread: lws_service ─▶ callbacks ─▶ delegate (HTTP request, WS open/message/close)
/// ```
/// Thread rules: `start()` and `stop()` from one owning thread; `send`, `close` and the
/// `respond` closures from any thread. All libwebsockets calls happen on the service thread.
public final class WebServer: @unchecked Sendable {
    /// Request headers copied into `HTTPRequest.headers`.
    public static let capturedHeaders = ["apikey", "authtoken", "appid", "content-type", "onbehalfof"]

    public let host: String
    /// nil: plain HTTP and WebSocket; else HTTPS and WSS only.
    public let tls: TLSFiles?
    public let maxBodyBytes: Int
    /// Seconds a request's body has from its head to its last byte; past them the connection
    /// closes. (libwebsockets' own timeout starts again with every chunk: a body sent a byte a
    /// second held a connection for as long as its `Content-Length` said.)
    public let bodyTimeoutSeconds: Int
    public let maxMessageBytes: Int
    /// What may wait to be written to one WebSocket; past it the connection is closed with
    /// `slowConsumerCloseCode` and its queue freed.
    public let maxQueuedBytes: Int
    /// What may wait to be written over all WebSockets together; past it the one with the most
    /// waiting is closed as too slow (its queue freed), until the rest fit — so the server's
    /// memory for queues is bounded however many connections it holds.
    public let maxQueuedBytesTotal: Int
    /// What waits in every WebSocket's queue now (the service thread's).
    private var queuedBytesTotal = 0
    /// The close code a WebSocket that did not read its messages gets (an application code,
    /// beside RFC 6455's 1008 policy violation).
    public static let slowConsumerCloseCode: UInt16 = 4008
    /// A connection accepted onto a descriptor at or above this is hung up at once: the
    /// process's descriptors stay under its limit, so `accept` never fails (and never spins).
    /// Linux gives the lowest free descriptor, so the number is a count of those open.
    public let maxOpenDescriptors: Int
    /// TCP connections (HTTP or WebSocket, upgraded or not) one address may hold; nil: no cap.
    /// Counted from accept to close, so a peer that connects and says nothing counts too.
    public let maxConnectionsPerAddress: Int?
    /// Who is held to `maxConnectionsPerAddress` (not loopback while exempt, nor a trusted
    /// proxy), and the client a request or WebSocket comes from (`X-Forwarded-For` from a trusted proxy).
    public let addresses: ClientAddresses
    // Owned by the service thread: each accepted connection's address, from accept to close.
    private var acceptedFrom: String?
    private var addressOf: [OpaquePointer: String] = [:]
    private var openPerAddress: [String: Int] = [:]
    private weak var delegateRef: (any WebServerDelegate)?
    var delegate: (any WebServerDelegate)? { delegateRef }

    // Owned by the service thread.
    /// Refused `CONNECT`s' answers, each until it is written (`WebServer+Connect`).
    var connectRefusals: [OpaquePointer: [UInt8]] = [:]
    private var context: OpaquePointer?
    private var connections: [UInt64: Connection] = [:]
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private var protocolName: UnsafeMutablePointer<CChar>?
    private var ifaceName: UnsafeMutablePointer<CChar>?
    private var certPath: UnsafeMutablePointer<CChar>?
    private var keyPath: UnsafeMutablePointer<CChar>?
    /// The one protocol a TLS listener offers (ALPN).
    private var alpn: UnsafeMutablePointer<CChar>?
    /// The server's half of the heartbeat: libwebsockets pings a connection idle for 10 s and
    /// hangs up one that stays silent for 25 s (a client that vanished without a FIN).
    private let idlePolicy: UnsafeMutablePointer<lws_retry_bo_t> = {
        let p = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        p.initialize(to: lws_retry_bo_t(retry_ms_table: nil, retry_ms_table_count: 0, conceal_count: 0,
                                        secs_since_valid_ping: 10, secs_since_valid_hangup: 25, jitter_percent: 0))
        return p
    }()
    private var thread: Thread?
    /// The libev loop the context runs on (nil: libwebsockets' own poll loop, where the
    /// event-library plugin is missing).
    private var eventLoop: UnsafeMutableRawPointer?
    private var foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    /// Wakes the service thread every second, for two deadlines libwebsockets would otherwise
    /// keep late. Its libev plugin re-arms its one timer with `ev_timer_set` and `ev_timer_start`
    /// while that timer is armed, which libev ignores, so a deadline earlier than the armed one
    /// waited for the later one or the next socket event: a connection that sent nothing, or
    /// stopped in its body, was held 28 s (the 25 s idle hang-up's). A wake runs the plugin's
    /// idle pass, which serves every deadline that is due. And libwebsockets sets a body's
    /// timeout back to its own 20 s after each chunk, so the body deadline
    /// (`bodyTimeoutSeconds`) is checked here too (`cutOverdueBodies`): each fires within a
    /// second of its time.
    private var deadlineTick: DispatchSourceTimer?
    /// A certificate reload asked for (any thread) and its result (the service thread).
    private let reloadRequest = Locked<DispatchSemaphore?>(nil)
    private let reloadResult = Locked<Bool>(false)

    private let nextID = Atomic<UInt64>(1)
    private let running = Atomic<Bool>(false)
    /// How other threads wake the service thread; retired before the context is destroyed.
    private let waker = ServiceWaker()
    private let outbox = Locked<[(UInt64, Outgoing)]>([])
    private let stopped = DispatchSemaphore(value: 0)
    private(set) public var port: Int = 0

    /// - Parameters:
    ///   - host: the interface address to listen on (`127.0.0.1`, `0.0.0.0`).
    ///   - maxBodyBytes: larger HTTP bodies are refused with 413.
    ///   - bodyTimeoutSeconds: a body not all there this long after its head closes the connection.
    ///   - maxMessageBytes: larger WebSocket messages close the connection with 1009.
    ///   - maxQueuedBytes: more waiting for one WebSocket closes it with `slowConsumerCloseCode`.
    ///   - maxQueuedBytesTotal: more waiting over all WebSockets closes the one with the most.
    public init(host: String, tls: TLSFiles? = nil, maxBodyBytes: Int = 64 * 1024, bodyTimeoutSeconds: Int = 10, maxMessageBytes: Int = 64 * 1024,
                maxQueuedBytes: Int = 4 * 1024 * 1024, maxQueuedBytesTotal: Int = 256 * 1024 * 1024, maxOpenDescriptors: Int = DescriptorLimit.connectionBudget(limit: DescriptorLimit.current),
                maxConnectionsPerAddress: Int? = nil, addresses: ClientAddresses = ClientAddresses(), delegate: any WebServerDelegate) {
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.addresses = addresses
        self.host = host
        self.tls = tls
        self.maxBodyBytes = maxBodyBytes
        self.bodyTimeoutSeconds = max(1, bodyTimeoutSeconds)
        self.maxMessageBytes = maxMessageBytes
        self.maxQueuedBytes = maxQueuedBytes
        self.maxQueuedBytesTotal = maxQueuedBytesTotal
        self.maxOpenDescriptors = maxOpenDescriptors
        self.delegateRef = delegate
    }

    deinit {
        protocols?.deallocate()
        free(protocolName)
        free(ifaceName)
        free(certPath)
        free(keyPath)
        free(alpn)
        idlePolicy.deallocate()
    }

    /// Binds and starts serving; returns the bound TCP port (useful with port 0).
    public func start(port requested: Int) throws(WebServerError) -> Int {
        // (libwebsockets says only "Failed to create default vhost": the reason is found first.)
        if let reason = TCPBindProbe.failure(host: host, port: requested) {
            throw .cannotBind(host: host, port: requested, reason: reason)
        }
        callroom_lws_quiet(1)
        protocolName = strdup(signallingSubprotocol)
        ifaceName = strdup(host)
        let protos = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        protos.initialize(repeating: lws_protocols(), count: 2)
        protos[0].name = UnsafePointer(protocolName)
        protos[0].callback = webServerCallback
        protos[0].per_session_data_size = MemoryLayout<UInt64>.size
        protos[0].rx_buffer_size = 16 * 1024
        protocols = protos

        var info = lws_context_creation_info()
        info.port = Int32(requested)
        info.iface = UnsafePointer(ifaceName)
        info.protocols = UnsafePointer(protos)
        info.gid = -1
        info.uid = -1
        info.options = callroom_lws_opt_validate_utf8 | (host.contains(":") ? 0 : callroom_lws_opt_disable_ipv6)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.timeout_secs = 20
        info.max_http_header_data = 8192
        info.retry_and_idle_policy = UnsafePointer(idlePolicy)
        if let tls {
            certPath = strdup(tls.certificate)
            keyPath = strdup(tls.privateKey)
            info.options |= callroom_lws_opt_ssl_global_init
            info.ssl_cert_filepath = UnsafePointer(certPath)
            info.ssl_private_key_filepath = UnsafePointer(keyPath)
            // HTTP/1.1 only: the API's own headers (appId, authToken, apikey) are read as HTTP/1
            // custom headers, which libwebsockets does not give for HTTP/2 streams.
            alpn = strdup("http/1.1")
            info.alpn = UnsafePointer(alpn)
        }
        // On libev (epoll) where libwebsockets' plugin for it is installed; else its poll loop.
        var created: OpaquePointer?
        if let loop = callroom_ev_loop_new() {
            let loops = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
            loops.initialize(to: loop)
            var withLoop = info
            withLoop.options |= callroom_lws_opt_libev
            withLoop.foreign_loops = loops
            created = lws_create_context(&withLoop)
            if created != nil {
                eventLoop = loop
                foreignLoops = loops
            } else {
                loops.deallocate()
                callroom_ev_loop_destroy(loop)
            }
        }
        if created == nil { created = lws_create_context(&info) }
        guard let ctx = created else {
            throw .cannotCreateContext(host: host, port: requested)
        }
        context = ctx
        waker.publish(ctx)
        let vhost = lws_get_vhost_by_name(ctx, "default")
        port = vhost.map { Int(lws_get_vhost_listen_port($0)) } ?? requested
        running.store(true, ordering: .releasing)
        let t = Thread { [self] in self.serviceLoop() }
        t.name = "callroom.web"
        t.start()
        thread = t
        let tick = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        tick.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(100))
        tick.setEventHandler { [waker] in waker.wake() }
        tick.resume()
        deadlineTick = tick
        return port
    }

    /// Loads the certificate and key files again (they were replaced: a renewal) for new
    /// connections; open ones keep theirs. False when the files do not load (the old ones stay).
    /// Any thread; waits for the service thread.
    public func reloadCertificates() -> Bool {
        guard let tls, running.load(ordering: .acquiring) else { return false }
        // Read here: a bad pair is refused before libwebsockets sees it.
        guard let cert = FileManager.default.contents(atPath: tls.certificate), let key = FileManager.default.contents(atPath: tls.privateKey),
              !cert.isEmpty, !key.isEmpty else { return false }
        let done = DispatchSemaphore(value: 0)
        reloadRequest.withLock { $0 = done }
        reloadPEM.withLock { $0 = (cert, key) }
        waker.wake()
        guard done.wait(timeout: .now() + 5) == .success else { return false }
        return reloadResult.withLock { $0 }
    }

    private let reloadPEM = Locked<(Data, Data)?>(nil)

    /// Closes every connection whose request body is not all in by its deadline, said to the
    /// delegate once each, and every lingering one past its linger (`deadlineTick` runs this
    /// every second). Service thread.
    private func cutOverdueBodies() {
        let now = monotonicNanoseconds()
        for conn in connections.values where !conn.dispatched && conn.bodyLength > 0 && now >= conn.bodyDeadline {
            conn.bodyDeadline = .max
            delegate?.webServer(self, refusedSlowBodyFrom: conn.peer, received: conn.bodyReceived, of: conn.bodyLength)
            lws_set_timeout(conn.wsi, PENDING_TIMEOUT_HTTP_CONTENT, LWS_TO_KILL_ASYNC)
        }
        for conn in connections.values where conn.lingering && now >= conn.lingerDeadline {
            conn.lingerDeadline = .max
            lws_set_timeout(conn.wsi, PENDING_TIMEOUT_HTTP_CONTENT, LWS_TO_KILL_ASYNC)
        }
    }

    private func performReload() {
        guard let done = reloadRequest.withLock({ r -> DispatchSemaphore? in let d = r; r = nil; return d }) else { return }
        var ok = false
        if let ctx = context, let (cert, key) = reloadPEM.withLock({ p -> (Data, Data)? in let v = p; p = nil; return v }) {
            ok = cert.withUnsafeBytes { c in
                key.withUnsafeBytes { k in
                    lws_tls_cert_updated(ctx, certPath, keyPath, c.baseAddress?.assumingMemoryBound(to: CChar.self), c.count,
                                         k.baseAddress?.assumingMemoryBound(to: CChar.self), k.count) == 0
                }
            }
        }
        reloadResult.withLock { $0 = ok }
        done.signal()
    }

    /// Stops serving, closes every connection and waits for the service thread to finish.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        deadlineTick?.cancel()
        deadlineTick = nil
        waker.wake()
        stopped.wait()
    }

    private func serviceLoop() {
        guard let ctx = context else { return }
        while running.load(ordering: .acquiring) {
            if let loop = eventLoop {
                callroom_ev_run_once(loop)
            } else if lws_service(ctx, 0) < 0 {
                break
            }
        }
        waker.retire()
        lws_context_destroy(ctx)
        if let loop = eventLoop {
            callroom_ev_run_nowait(loop)
            callroom_ev_loop_destroy(loop)
            eventLoop = nil
        }
        foreignLoops?.deallocate()
        foreignLoops = nil
        context = nil
        connections.removeAll()
        for (_, item) in outbox.withLock({ q -> [(UInt64, Outgoing)] in defer { q.removeAll() }; return q }) { Self.drop(item) }
        stopped.signal()
    }

    // MARK: Cross-thread API

    /// Queues a WebSocket message to `connection`. Safe from any thread; dropped if it has closed.
    public func send(_ bytes: [UInt8], binary: Bool = false, to connection: UInt64) {
        enqueue(connection, .message(bytes, binary: binary))
    }

    /// Sends a text message. Safe from any thread.
    public func send(text: String, to connection: UInt64) {
        enqueue(connection, .message(Array(text.utf8), binary: false))
    }

    /// Closes a WebSocket after the messages already queued to it. Safe from any thread.
    public func close(_ connection: UInt64, code: UInt16 = 1000, reason: String = "") {
        enqueue(connection, .close(code: code, reason: reason))
    }

    func enqueue(_ id: UInt64, _ item: Outgoing) {
        // Stopped (or not started): nothing will send it.
        guard running.load(ordering: .acquiring) else { return Self.drop(item) }
        outbox.withLock { $0.append((id, item)) }
        waker.wake()
    }

    /// What will not be sent: a streamed body's producer is stopped (not left to time out).
    private static func drop(_ item: Outgoing) {
        if case .response(let r) = item { r.stream?.cancel() }
    }

    // MARK: Service-thread handlers

    fileprivate func handle(wsi: OpaquePointer?, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
                            data: UnsafeMutableRawPointer?, len: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            guard let user else { return 0 }
            let fd = callroom_lws_filter_fd(user)
            guard fd < maxOpenDescriptors else {
                delegate?.webServer(self, refusedConnectionOverDescriptorBudget: fd)
                return 1
            }
            var buf = [CChar](repeating: 0, count: 64)
            let peer = callroom_lws_filter_address(user, &buf, Int32(buf.count)) == 0 ? String(cBuffer: buf) : "?"
            let address = IPAddress.limitKey(peer)
            if let cap = maxConnectionsPerAddress, !addresses.isExempt(peer), !addresses.isTrustedProxy(peer),
               case let held = openPerAddress[address, default: 0], held >= cap {
                delegate?.webServer(self, refusedConnectionFrom: peer, holding: held)
                return 1
            }
            // The adoption that follows creates the connection's wsi at once (WSI_CREATE): counted there.
            acceptedFrom = address
            return 0
        case LWS_CALLBACK_WSI_CREATE:
            if let wsi, let address = acceptedFrom {
                acceptedFrom = nil
                addressOf[wsi] = address
                openPerAddress[address, default: 0] += 1
            }
            return 0
        case LWS_CALLBACK_WSI_DESTROY:
            if let wsi { connectRefusals[wsi] = nil }
            if let wsi, let address = addressOf.removeValue(forKey: wsi) {
                let left = (openPerAddress[address] ?? 1) - 1
                openPerAddress[address] = left > 0 ? left : nil
            }
            return 0
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            performReload()
            drainOutbox()
            cutOverdueBodies()
            return 0
        case LWS_CALLBACK_HTTP:
            guard let wsi, let user else { return -1 }
            let conn = connection(for: wsi, user: user)
            // Nothing after a refusal is a request (a request smuggled behind a bad length).
            if conn.lingering { return -1 }
            let uri = data.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: len), as: UTF8.self) }
            beginRequest(conn, uri: uri ?? "/")
            // Each refusal is answered at once and the connection closed: what follows on it is
            // never read — neither a body nor, behind a length read differently, another request.
            // A NUL (`%00` in the path or query, a raw one in a header) would end the value
            // there for anything reading it as C does — `/v3/users/ok1%00/x` as `/v3/users/ok1`,
            // `apikey: KEY\0junk` as the key: the request is not what it says, and is refused.
            if conn.hasNULInHead {
                return answerAndClose(conn, .badRequest, "The request's path, query or headers hold a NUL byte.")
            }
            if Self.copyHeader(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) != nil {
                return answerAndClose(conn, .lengthRequired, "Send the body with a Content-Length, not chunked.")
            }
            guard let contentLength = Self.contentLength(Self.copyHeader(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH)) else {
                return answerAndClose(conn, .badRequest, "Content-Length must be one whole number of bytes.")
            }
            if contentLength > maxBodyBytes {
                return answerAndClose(conn, .bodyTooLarge, "Request body exceeds \(maxBodyBytes) bytes.")
            }
            if contentLength == 0 {
                return dispatchRequest(conn, id: user.load(as: UInt64.self))
            }
            conn.bodyLength = contentLength
            conn.bodyDeadline = monotonicNanoseconds() + UInt64(bodyTimeoutSeconds) * 1_000_000_000
            lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, Int32(bodyTimeoutSeconds))
            return 0
        case LWS_CALLBACK_HTTP_BODY:
            // (A request answered already — chunked, 411 — reads nothing more; a lingering one
            // drops what comes until its linger is over.)
            if let user, let conn = connections[user.load(as: UInt64.self)], conn.lingering {
                return monotonicNanoseconds() < conn.lingerDeadline ? 0 : -1
            }
            guard let wsi, let user, let conn = connections[user.load(as: UInt64.self)], let data, !conn.dispatched else { return 0 }
            conn.bodyReceived += len
            // The deadline is the body's, not each chunk's: libwebsockets sets its own 20 s
            // timeout again around each chunk (after this callback too), so the deadline is
            // checked here, at each chunk, and every second by `cutOverdueBodies`.
            let now = monotonicNanoseconds()
            guard now < conn.bodyDeadline else {
                conn.bodyDeadline = .max
                delegate?.webServer(self, refusedSlowBodyFrom: conn.peer, received: conn.bodyReceived, of: conn.bodyLength)
                return -1
            }
            lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, Int32((conn.bodyDeadline - now + 999_999_999) / 1_000_000_000))
            // A length past `maxBodyBytes` was refused with the head (413), so libwebsockets hands
            // over at most `bodyLength` bytes; more would be its fault, and closes the connection.
            guard conn.body.count + len <= conn.bodyLength else { return -1 }
            conn.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: len))
            return 0
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            guard let user, let conn = connections[user.load(as: UInt64.self)] else { return -1 }
            return dispatchRequest(conn, id: user.load(as: UInt64.self))
        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let user, let conn = connections[user.load(as: UInt64.self)] else { return -1 }
            return writeHTTP(conn, id: user.load(as: UInt64.self))
        case LWS_CALLBACK_CLOSED_HTTP:
            if let user, let conn = connections.removeValue(forKey: user.load(as: UInt64.self)) { queuedBytesTotal -= conn.txBytes }
            return 0
        case LWS_CALLBACK_ESTABLISHED:
            guard let wsi, let user else { return -1 }
            let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
            user.storeBytes(of: id, as: UInt64.self)
            let conn = Connection(wsi: wsi)
            conn.isWebSocket = true
            conn.path = Self.copyHeader(wsi, WSI_TOKEN_GET_URI) ?? "/"
            conn.peer = client(of: wsi)
            connections[id] = conn
            delegate?.webServer(self, didOpen: id, path: conn.path, peer: conn.peer)
            return 0
        case LWS_CALLBACK_RECEIVE:
            guard let wsi, let id = user?.load(as: UInt64.self), let conn = connections[id] else { return -1 }
            // Past the limit the connection closes at once — not at the message's last fragment,
            // which a peer need never send (it streamed fragments for ever into a dropped buffer).
            guard !conn.rxOverflow else { return 0 }
            if let data, len > 0 {
                guard conn.rx.count + len <= maxMessageBytes else {
                    conn.rxOverflow = true
                    conn.rx = []
                    closeRefused(conn, code: 1009, reason: "message too big")
                    delegate?.webServer(self, refusedOversizedMessage: id, peer: conn.peer)
                    return 0
                }
                conn.rx.append(contentsOf: UnsafeRawBufferPointer(start: data, count: len))
            }
            if lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0 {
                let message = conn.rx
                conn.rx = []
                let binary = lws_frame_is_binary(wsi) != 0
                delegate?.webServer(self, connection: id, didReceive: message, binary: binary)
            }
            return 0
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let wsi, let user, let conn = connections[user.load(as: UInt64.self)] else { return -1 }
            return writeWebSocket(conn, wsi: wsi)
        case LWS_CALLBACK_CLOSED:
            guard let user else { return 0 }
            let id = user.load(as: UInt64.self)
            if let conn = connections.removeValue(forKey: id) {
                queuedBytesTotal -= conn.txBytes
                delegate?.webServer(self, didClose: id)
            }
            return 0
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            // `Upgrade: h2c` (curl --http2 on http://) was taken: the request went on as an
            // HTTP/2 stream, where the API's own headers are not read (`apikey` "missing") and
            // none of the limits here apply to its streams. The upgrade is ignored instead, as
            // RFC 9110 §7.8 lets a server, and the request answered over HTTP/1.1 (TLS offers
            // HTTP/1.1 only, for the same reason). libwebsockets compares the value it handed
            // here after this returns: emptied, it matches no upgrade it knows.
            if let value = data?.assumingMemoryBound(to: CChar.self), len == 0,
               String(cString: value).lowercased() == "h2c" {
                value[0] = 0
            }
            return 0
        // Only a CONNECT request becomes a raw connection here (libwebsockets makes it one).
        case LWS_CALLBACK_RAW_ADOPT:
            guard let wsi else { return -1 }
            return refuseConnect(wsi)
        case LWS_CALLBACK_RAW_WRITEABLE:
            guard let wsi else { return -1 }
            return writeConnectRefusal(wsi)
        case LWS_CALLBACK_RAW_RX:
            return 0  // read and dropped
        default:
            return lws_callback_http_dummy(wsi, reason, user, data, len)
        }
    }

    private func connection(for wsi: OpaquePointer, user: UnsafeMutableRawPointer) -> Connection {
        var id = user.load(as: UInt64.self)
        if id == 0 || connections[id] == nil {
            id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
            user.storeBytes(of: id, as: UInt64.self)
            connections[id] = Connection(wsi: wsi)
        }
        // Force-unwrap-free: we just ensured presence.
        return connections[id] ?? Connection(wsi: wsi)
    }

    private func drainOutbox() {
        let items = outbox.withLock { q -> [(UInt64, Outgoing)] in let items = q; q.removeAll(); return items }
        for (id, item) in items {
            guard let conn = connections[id] else {
                Self.drop(item)
                continue
            }
            switch item {
            case .response(let r):
                guard conn.awaitingResponse else {
                    Self.drop(item)
                    continue
                }
                conn.response = r
            case .message(let bytes, let binary):
                guard conn.closeRequest == nil else { continue }
                if conn.txBytes + bytes.count > maxQueuedBytes {
                    dropSlow(conn, id: id, reason: "too slow: over \(maxQueuedBytes) bytes waiting")
                    continue
                }
                conn.tx.append((bytes, binary))
                conn.txBytes += bytes.count
                queuedBytesTotal += bytes.count
                if queuedBytesTotal > maxQueuedBytesTotal { dropSlowest() }
            case .close(let code, let reason):
                conn.closeRequest = (code, reason)
            case .bodyReady:
                guard conn.response?.stream != nil else { continue }
            }
            lws_callback_on_writable(conn.wsi)
        }
    }

    /// All the queues together are over `maxQueuedBytesTotal`: the WebSockets with the most
    /// waiting go, the slowest readers, until the rest fit.
    private func dropSlowest() {
        while queuedBytesTotal > maxQueuedBytesTotal, let (id, conn) = connections.max(by: { $0.value.txBytes < $1.value.txBytes }), conn.txBytes > 0 {
            dropSlow(conn, id: id, reason: "too slow: the server's \(maxQueuedBytesTotal) bytes for all queues are spent, \(conn.txBytes) waiting for this one")
        }
    }

    /// A WebSocket that does not read: its queue goes at once, a close frame is offered, and
    /// the connection is cut if even that is not taken within 2 s.
    private func dropSlow(_ conn: Connection, id: UInt64, reason: String) {
        let queued = conn.txBytes
        conn.tx = []
        conn.txBytes = 0
        queuedBytesTotal -= queued
        closeRefused(conn, code: Self.slowConsumerCloseCode, reason: reason)
        delegate?.webServer(self, droppedSlowConnection: id, peer: conn.peer, queuedBytes: queued)
    }

    /// A refused WebSocket: a close frame with `code` is offered next, and the connection is cut
    /// if even that is not taken within 2 s.
    private func closeRefused(_ conn: Connection, code: UInt16, reason: String) {
        conn.closeRequest = (code, reason)
        lws_set_timeout(conn.wsi, PENDING_TIMEOUT_CLOSE_SEND, 2)
        lws_callback_on_writable(conn.wsi)
    }

    private func writeWebSocket(_ conn: Connection, wsi: OpaquePointer) -> Int32 {
        if !conn.tx.isEmpty {
            let (bytes, binary) = conn.tx.removeFirst()
            conn.txBytes -= bytes.count
            queuedBytesTotal -= bytes.count
            var buffer = [UInt8](repeating: 0, count: Int(callroom_lws_pre)) + bytes
            let n = buffer.withUnsafeMutableBufferPointer { buf in
                lws_write(wsi, buf.baseAddress! + Int(callroom_lws_pre), bytes.count, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT)
            }
            if n < bytes.count { return -1 }
            if !conn.tx.isEmpty || conn.closeRequest != nil { lws_callback_on_writable(wsi) }
            return 0
        }
        if let (code, reason) = conn.closeRequest {
            var r = Array(reason.utf8.prefix(120))
            r.withUnsafeMutableBufferPointer { lws_close_reason(wsi, lws_close_status(UInt32(code)), $0.baseAddress, $0.count) }
            return -1
        }
        return 0
    }
}

/// The libwebsockets protocol callback for `WebServer` (a top-level function: C callbacks
/// cannot capture context; the server comes through the context user pointer).
private func webServerCallback(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                               _ data: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
    guard let wsi, let ctx = lws_get_context(wsi), let raw = lws_context_user(ctx) else {
        return 0
    }
    let server = Unmanaged<WebServer>.fromOpaque(raw).takeUnretainedValue()
    return server.handle(wsi: wsi, reason: reason, user: user, data: data, len: len)
}
