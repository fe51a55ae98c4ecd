import CallsCore
import CallsSecurity
import CallsTransport
import Foundation
import Synchronization

/// What a server member does with a room's media: the recorder, the transcriber, the streamer.
package protocol ServerMemberSink: AnyObject, Sendable {
    /// One verified, decrypted packet from `speaker` (nil: a sender not in the roster yet), at
    /// `atMs` (milliseconds since the member joined). On the member's receive thread.
    func received(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from speaker: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure)
    /// Every ≈ 20 ms after a batch of packets (receive thread): time-driven work.
    func tick(nowMs: Int64) throws(ServerMemberFailure)
    /// The member has stopped: its threads are done; finish files and rows (the stopping thread).
    func finished(failure: String?)
    /// The member it serves, before it starts (sinks that send through it keep it, weakly).
    func attach(_ member: ServerMember)
    /// Whether its media can share the `ServerMemberHub`'s thread (false: work in `received`
    /// too heavy to hold up other rooms — recognition).
    var sharesReceiveThread: Bool { get }
}

extension ServerMemberSink {
    package func tick(nowMs: Int64) throws(ServerMemberFailure) {}
    package func attach(_ member: ServerMember) {}
    package var sharesReceiveThread: Bool { true }
}

/// A sink could not go on (a full disk, a recogniser that failed): the member stops. `reason` is
/// logged; `told` (default: `reason`) is what the room hears — never the server's own paths.
package struct ServerMemberFailure: Error {
    var reason: String
    var told: String?
    init(reason: String, told: String? = nil) {
        self.reason = reason
        self.told = told
    }
}

/// A member of a room run by the server (for recording, transcription, streaming): it joins
/// over the server's own signalling like any client (a call token with the feature's role,
/// which keeps it out of the roster), binds a UDP socket to the relay with the consent
/// handshake (so the socket relay and the kernel fast path both deliver to it), holds the
/// room's SRTP keys, never sends media, and hands every packet to its sink.
///
/// ```
///  signalling (WebSocket thread): joined / mediaKeys / roster / left ──▶ keys, names, stop
///  receive thread:  UDP ─▶ consent answer │ SRTP unprotect ─▶ sink.received │ every 20 ms sink.tick
///  stop:            threads end ─▶ socket, signalling closed ─▶ sink.finished
/// ```
/// Thread rules: `start`/`stop`/`send` from any thread; media runs on the receive thread —
/// the `ServerMemberHub`'s for recorders and streamers, the member's own for transcribers — and
/// `stop` waits until it no longer does; state shared through `Locked`.
package final class ServerMember: WebSocketClientDelegate, @unchecked Sendable {
    package struct Config: Sendable {
        package var signallingURL: URL
        package var trust: TLSTrust
        package var relay: SocketAddress
        package var sessionId: String
        /// The feature run's id (`rec_…`, `tr_…`, `st_…`).
        package var id: String
        package var callToken: String
        package var feature: SessionFeature
        package init(signallingURL: URL, trust: TLSTrust, relay: SocketAddress, sessionId: String, id: String, callToken: String, feature: SessionFeature) {
            self.signallingURL = signallingURL
            self.trust = trust
            self.relay = relay
            self.sessionId = sessionId
            self.id = id
            self.callToken = callToken
            self.feature = feature
        }
    }

    /// Who sends with an SSRC (from `joined` and the roster).
    package struct Speaker: Sendable, Equatable {
        package var uid: String
        package var pid: String
        package var name: String
        package init(uid: String, pid: String, name: String) {
            self.uid = uid
            self.pid = pid
            self.name = name
        }
    }

    package let config: Config
    private let log: ServerLog
    private let onFinished: @Sendable (ServerMember) -> Void
    private var client: WebSocketClient?
    private let socket: UDPSocket
    private let receiver: SRTPReceiver
    /// Redundant audio back to one packet per frame (the pump's alone: one thread at a time).
    private var unpacker = RedundancyUnpacker()
    /// When the member joined (monotonic ns): `atMs` counts from here.
    private let startedAt = Atomic<UInt64>(0)
    private let running = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let finishing = Atomic<Bool>(false)
    private let threadsDone = DispatchSemaphore(value: 0)
    /// Threads started (under `state`'s lock with the check that the member is not stopping).
    private let threads = Atomic<Int>(0)

    private struct State {
        package var consent: MediaConsent?
        /// By audio SSRC, and by video SSRC for members that take video.
        package var names: [UInt32: Speaker] = [:]
        package var failure: String?
        package var sink: (any ServerMemberSink)?
        /// Its tag in the hub, once the hub receives for it.
        package var hubTag: UInt64?
    }
    private let state: Locked<State>

    /// Receives for recorders and streamers (nil: every member has its own thread).
    private let hub: ServerMemberHub?
    /// recvmmsg: a wake-up takes everything 20 ms gathered in a call or two, not one each.
    private let batch = UDPBatchReceiver(capacity: 64)

    package init(config: Config, sink: any ServerMemberSink, hub: ServerMemberHub? = nil, log: ServerLog,
         onFinished: @escaping @Sendable (ServerMember) -> Void) throws {
        self.config = config
        self.hub = hub
        self.log = log
        self.onFinished = onFinished
        state = Locked(State(sink: sink))
        socket = try UDPSocket(host: "127.0.0.1", port: 0)
        receiver = try SRTPReceiver()
        sink.attach(self)
    }

    /// Joins the room.
    package func start() throws {
        let c = WebSocketClient(url: config.signallingURL, trust: config.trust, delegate: self)
        client = c
        try c.connect()
    }

    /// Stops (idempotent): threads end, the sink finishes.
    package func stop() {
        // Under the lock `spawn` takes: no thread starts once this has read the count.
        let started = state.withLock { _ -> Int in
            _ = stopped.exchange(true, ordering: .acquiringAndReleasing)
            running.store(false, ordering: .releasing)
            return threads.load(ordering: .acquiring)
        }
        guard !finishing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for _ in 0..<started { threadsDone.wait() }
        // Out of the hub before the socket closes (the hub lets go of it first).
        if let tag = state.withLock({ $0.hubTag }) { hub?.remove(tag, fd: socket.fd) }
        socket.close()
        client?.disconnect()
        let (sink, failure) = state.withLock { s in
            defer { s.sink = nil }
            return (s.sink, s.failure)
        }
        sink?.finished(failure: failure)
        onFinished(self)
    }

    /// A message to the server over this member's signalling (captions, stream status).
    package func send(_ m: ClientMessage) { client?.send(text: m.json()) }

    /// Milliseconds since the member joined.
    package func nowMs() -> Int64 { Int64((monotonicNanoseconds() &- startedAt.load(ordering: .acquiring)) / 1_000_000) }

    /// Who sends with `ssrc`.
    package func speaker(_ ssrc: UInt32) -> Speaker? { state.withLock { $0.names[ssrc] } }

    /// Stops with a reason (logged, and kept for the sink); the room is told `told` (default: `why`).
    package func fail(_ why: String, told: String? = nil) {
        let first = state.withLock { s -> Bool in
            defer { s.failure = s.failure ?? why }
            return s.failure == nil
        }
        // The moderator hears why (before the connection closes).
        if first { send(.memberStopped(reason: told ?? why)) }
        log.error("server member failed", ["feature": config.feature.rawValue, "session": config.sessionId, "id": config.id, "error": why])
        DispatchQueue.global().async { self.stop() }
    }

    // MARK: Signalling (the WebSocket's thread)

    package func webSocketDidOpen(_ c: WebSocketClient) {
        c.send(text: ClientMessage.join(.init(callToken: config.callToken, sessionId: config.sessionId, audioMuted: true,
                                              videoPaused: true, sessionType: .voice, idleTimeoutSeconds: 0)).json())
    }

    package func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        guard !binary, let m = try? ServerMessage(json: Data(message)) else { return }
        switch m {
        case .joined(let j):
            guard let token = Hex.decode(j.bindToken) else { return fail("no bind token in joined") }
            state.withLock { s in
                s.consent = MediaConsent(ssrc: j.you.ssrc, token: token)
            }
            for p in j.participants { roster(p) }
            install(j.mediaKeys ?? [])
            startedAt.store(monotonicNanoseconds(), ordering: .releasing)
            guard !stopped.load(ordering: .acquiring) else { return }
            running.store(true, ordering: .releasing)
            spawn("callroom.\(config.feature.rawValue).receive") { $0.receiveLoop() }
            log.info("server member joined", ["feature": config.feature.rawValue, "session": config.sessionId, "id": config.id])
        case .mediaKeys(let keys):
            install(keys)
        case .participantJoined(let w):
            roster(w)
        case .participantUpdated(let w, _):
            roster(w)
        case .left:
            DispatchQueue.global().async { self.stop() }
        case .error(let code, let message):
            fail("\(code.rawValue): \(message)")
        default:
            break
        }
    }

    package func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) {
        DispatchQueue.global().async { self.stop() }
    }

    private func install(_ keys: [WireMediaKey]) {
        for w in keys {
            guard let key = SRTPKey(w) else { continue }
            try? receiver.setKey(key, for: w.ssrc)
            if takesVideo, let v = w.videoSsrc { try? receiver.setKey(key, for: v) }
        }
    }

    /// Recorders take everyone's video (their files are WebM where someone sent video).
    private var takesVideo: Bool { config.feature == .recording }

    /// A roster entry: who sends with its SSRCs (a recorder gets everyone's video: the room
    /// sends it every sender's, and asks them for keyframes when it joins).
    private func roster(_ w: WireParticipant) {
        let speaker = Speaker(uid: w.uid, pid: w.pid, name: w.name)
        state.withLock { s in
            s.names[w.ssrc] = speaker
            if takesVideo, let v = w.videoSsrc { s.names[v] = speaker }
        }
    }

    // MARK: Media

    private func spawn(_ name: String, _ body: @escaping @Sendable (ServerMember) -> Void) {
        let go = state.withLock { _ -> Bool in
            guard !stopped.load(ordering: .acquiring) else { return false }
            threads.add(1, ordering: .releasing)
            return true
        }
        guard go else { return }
        let t = Thread { [self] in
            body(self)
            self.threadsDone.signal()
        }
        t.name = name
        t.start()
    }

    /// The bind handshake, then either the hub's care (recorders, streamers) or a loop of its
    /// own (transcribers: recognition runs in `received`).
    private func receiveLoop() {
        guard let consent = state.withLock({ $0.consent }) else { return }
        let relay = config.relay
        guard consent.handshake(send: { socket.send($0, to: relay) }, receive: { socket.receiveCopy(timeoutMs: $0) }) else {
            return fail("the relay did not acknowledge the \(config.feature.rawValue) member's bind")
        }
        if let hub, state.withLock({ $0.sink?.sharesReceiveThread ?? false }) {
            // Registered under the lock `stop` takes: a member stopping now is never added.
            let added = state.withLock { s -> Bool in
                guard !stopped.load(ordering: .acquiring), let tag = hub.add(self, fd: socket.fd) else { return false }
                s.hubTag = tag
                return true
            }
            if added { return }
        }
        while running.load(ordering: .acquiring) {
            if socket.waitReadable(timeoutMs: 20) { pump() }
            tickFromHub()
            // No member needs low latency: let 20 ms of packets gather before the next
            // wake-up (a wake-up per packet was most of the recorder's cost: context switches).
            usleep(20_000)
        }
    }

    /// Takes what the socket holds (recvmmsg batches): consent answered, media to the sink.
    /// On the hub's thread or the member's own.
    package func pump() {
        guard running.load(ordering: .acquiring), let (consent, sink) = state.withLock({ s in s.consent.flatMap { c in s.sink.map { (c, $0) } } }) else { return }
        let relay = config.relay
        do {
            while case let count = batch.receive(on: socket.fd), count > 0 {
                let at = nowMs()
                for i in 0..<count {
                    guard batch.source(i) == relay else { continue }
                    let raw = batch.datagram(i)
                    if MediaBinding.isControl(raw) {
                        if let answer = consent.answer(raw) { socket.send(answer, to: relay) }
                        continue
                    }
                    let buf = batch.mutableDatagram(i)
                    guard let length = try? receiver.unprotect(buf, length: batch.length(i)) else { continue }
                    let d = UnsafeRawBufferPointer(rebasing: buf[0..<length])
                    guard let h = try? RTPHeader(parsing: d) else { continue }
                    let payload = UnsafeBufferPointer(rebasing: d.bindMemory(to: UInt8.self)[h.payloadRange])
                    let who = speaker(h.ssrc)
                    try unpacker.unpack(h, payload: payload) { (frame, bytes) throws(ServerMemberFailure) in
                        try sink.received(frame, payload: bytes, from: who, atMs: at)
                    }
                }
                if count < batch.capacity { break }
            }
        } catch {
            running.store(false, ordering: .releasing)
            fail(error.reason, told: error.told)
        }
    }

    /// The sink's time-driven work (every ≈ 20 ms).
    package func tickFromHub() {
        guard running.load(ordering: .acquiring), let sink = state.withLock({ $0.sink }) else { return }
        do { try sink.tick(nowMs: nowMs()) } catch {
            running.store(false, ordering: .releasing)
            fail(error.reason, told: error.told)
        }
    }
}
