import CallroomKit
import CallsAudio
import CallsCore
import CallsSecurity
import CallsTransport
import CometChatCallsSDK
import Foundation
import Synchronization

/// `callroom bots --rooms R --per-room N --duration S`: a load generator. Every bot joins over
/// real signalling, binds a real UDP socket and sends real Opus/RTP (frames encoded once from a
/// tone, replayed with the bot's own sequence numbers and timestamps) at the real rate of 50
/// packets a second; every bot receives everything the relay sends it. Each packet carries its
/// send time in a header extension (id 2), so relay delay is measured on one clock.
///
/// ```
///  sender threads:  every 20 ms, for each of its bots: RTP(seq, ts, ssrc, level, send-time) ─▶ its socket ─▶ relay
///  receiver thread: epoll(all sockets) ─▶ recvmmsg ─▶ count; every 7th receiver: arrival jitter, relay delay
/// ```
final class LoadGenerator: @unchecked Sendable {
    struct Bot: Sendable {
        let uid: String
        let room: Int
        var ssrc: UInt32 = 0
        var socket: UDPSocket?
        var signal: SignalSink?
        var joinedAt: UInt64 = 0
        /// `join` sent → `joined` received, in milliseconds (the signalling round trip).
        var joinRoundTripMs: Double = 0
        /// Answers the relay's consent challenges (a bot that stopped would be unbound).
        var consent: MediaConsent?
        /// Its SRTP key from `joined`, and (with `--srtp`) the sender protecting its packets.
        var key: WireMediaKey?
        var srtp: SRTPSender?
        /// The relay its room's node named in `joined` (in a cluster, rooms are on different nodes).
        var relay = SocketAddress(ip: 0, port: 0)
    }

    /// Collects one bot's signalling messages.
    final class SignalSink: WebSocketClientDelegate {
        let joined = Locked<ServerMessage.Joined?>(nil)
        /// When `joined` arrived (monotonic nanoseconds, on the WebSocket's thread).
        let joinedNanoseconds = Atomic<UInt64>(0)
        let closed = Atomic<Bool>(false)
        /// The bot's connection (set once it is made; its delegate is this sink).
        let connection = Locked<WebSocketClient?>(nil)
        var client: WebSocketClient? { connection.withLock { $0 } }
        func webSocketDidOpen(_ c: WebSocketClient) {}
        func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
            if case .joined(let j)? = try? ServerMessage(json: Data(message)) {
                joinedNanoseconds.store(monotonicNanoseconds(), ordering: .relaxed)
                joined.withLock { $0 = j }
            }
        }
        func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) { closed.store(true, ordering: .releasing) }
    }

    /// The nodes the bots' signalling goes to, bot i to node i mod n (a load balancer's spread).
    let serverURLs: [URL]
    let appID: String
    let authKey: String
    let rooms: Int
    let perRoom: Int
    let srtp: Bool
    private(set) var bots: [Bot] = []
    private let running = Atomic<Bool>(false)
    private let sent = Atomic<Int>(0)
    private let received = Atomic<Int>(0)
    private let stats = Locked<(delays: [Double], jitter: [Double])>(([], []))

    /// With `srtp`, every packet is protected with the bot's key (real libsrtp, AES-128-GCM),
    /// so the relay forwards what real clients send: 17 bytes larger.
    init(serverURLs: [URL], appID: String, authKey: String, rooms: Int, perRoom: Int, srtp: Bool = false) {
        self.srtp = srtp
        self.serverURLs = serverURLs
        self.appID = appID
        self.authKey = authKey
        self.rooms = rooms
        self.perRoom = perRoom
    }

    /// Logs every bot in (REST), joins it (WebSocket) and binds its UDP socket, `concurrency`
    /// bots at a time (a join storm, as when a meeting starts); bots keep (room, index) order.
    func joinAll(concurrency: Int = 16) async throws(CometChatCallException) {
        let plan = (0..<rooms).flatMap { r in (0..<perRoom).map { (room: r, index: $0) } }
        let (urls, app, key) = (serverURLs, appID, authKey)
        var done: [(Int, Bot)] = []
        do {
            try await withThrowingTaskGroup(of: (Int, Bot).self) { group in
                var next = 0
                func schedule() {
                    guard next < plan.count else { return }
                    let n = next, p = plan[n]
                    next += 1
                    group.addTask {
                        let bot = try await Self.join(room: p.room, index: p.index, serverURL: urls[n % urls.count], appID: app, authKey: key)
                        return (n, bot)
                    }
                }
                for _ in 0..<max(1, concurrency) { schedule() }
                while let result = try await group.next() {
                    done.append(result)
                    schedule()
                }
            }
        } catch let e as CometChatCallException {
            throw e
        } catch {
            throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "\(error)")
        }
        done.sort { $0.0 < $1.0 }
        bots = done.map(\.1)
        if srtp {
            for i in bots.indices {
                guard let w = bots[i].key, let key = SRTPKey(w), let s = try? SRTPSender(ssrc: bots[i].ssrc, key: key) else {
                    throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "bot \(bots[i].uid): no usable media key")
                }
                bots[i].srtp = s
            }
        }
    }

    /// One bot: login, call token, signalling join, media bind (acknowledged).
    private static func join(room r: Int, index i: Int, serverURL: URL, appID: String,
                             authKey: String) async throws(CometChatCallException) -> Bot {
        let uid = "load-\(r)-\(i)"
        let c = CallsClient(serverURL: serverURL, appID: appID) { _ in }
        _ = try await c.login(uid: uid, authKey: authKey)
        let token = try await c.generateToken(sessionID: "load-room-\(r)")
        let sink = SignalSink()
        let ws = WebSocketClient(url: serverURL.appendingPathComponent("v1/signal"), delegate: sink)
        sink.connection.withLock { $0 = ws }
        do { try ws.connect() } catch { throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "\(error)") }
        let joinSent = monotonicNanoseconds()
        ws.send(text: ClientMessage.join(.init(callToken: token, sessionId: "load-room-\(r)", audioMuted: false,
                                               sessionType: .voice, idleTimeoutSeconds: 0)).json())
        let deadline = Date().addingTimeInterval(10)
        var joined: ServerMessage.Joined?
        while joined == nil && Date() < deadline {
            try? await Task.sleep(nanoseconds: 5_000_000)
            joined = sink.joined.withLock { $0 }
        }
        guard let j = joined, let relay = SocketAddress.resolve(host: j.mediaHost ?? serverURL.host ?? "127.0.0.1", port: j.mediaPort),
              let udp = try? UDPSocket(host: "0.0.0.0", port: 0) else {
            throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "bot \(uid) could not join")
        }
        // A bind (or its ack) lost under load is retried, as a real client would.
        let consent = MediaConsent(ssrc: j.you.ssrc, token: Hex.decode(j.bindToken) ?? [])
        guard consent.handshake(send: { udp.send($0, to: relay) }, receive: { udp.receiveCopy(timeoutMs: $0) }) else {
            throw CometChatCallException(errorCode: "NETWORK_ERROR", errorDescription: "bot \(uid): no bind ack")
        }
        let rtt = Double(sink.joinedNanoseconds.load(ordering: .relaxed) &- joinSent) / 1e6
        return (Bot(uid: uid, room: r, ssrc: j.you.ssrc, socket: udp, signal: sink, joinRoundTripMs: rtt, consent: consent,
                    key: j.mediaKeys?.first { $0.ssrc == j.you.ssrc }, relay: relay))
    }

    /// Asks the server to record every room (its moderator bot sends the request); returns how
    /// many rooms asked. The recorder needs SRTP packets to read: use with `srtp`.
    func startRecordings() -> Int {
        var asked = Set<Int>()
        for b in bots where !asked.contains(b.room) {
            guard let j = b.signal?.joined.withLock({ $0 }), j.you.role == .moderator else { continue }
            b.signal?.client?.send(text: ClientMessage.setSessionFeature(feature: .recording, enabled: true).json())
            asked.insert(b.room)
        }
        return asked.count
    }

    /// Sends and receives for `seconds`, then reports.
    func run(seconds: Double) -> Report {
        // Real Opus frames of a tone, encoded once.
        var frames: [[UInt8]] = []
        if let enc = try? OpusEncoder(frameMs: 20) {
            let tone = ToneInput(frequency: 440, frameSamples: 960)
            var pcm = [Int16](repeating: 0, count: 960), buf = [UInt8](repeating: 0, count: 1500)
            for _ in 0..<50 {
                pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
                if let n = try? pcm.withUnsafeBufferPointer({ p in try buf.withUnsafeMutableBufferPointer { try enc.encode(p, into: $0) } }) {
                    frames.append(Array(buf.prefix(n)))
                }
            }
        }
        running.store(true, ordering: .releasing)
        let done = DispatchSemaphore(value: 0)
        let receiver = Thread { [self] in self.receiveLoop(); done.signal() }
        receiver.start()
        // Senders on one thread per core: on loopback the kernel's delivery of each packet runs
        // in its sender's system call, so one thread cannot keep 1,000 bots at 50 packets a second.
        let start = monotonicNanoseconds()
        let payloads = frames
        let threads = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4, bots.count))
        let sendersDone = DispatchSemaphore(value: 0)
        for t in 0..<threads {
            let mine = Array(bots.enumerated().filter { $0.offset % threads == t }.map(\.element))
            let sender = Thread { [self] in
                self.sendLoop(mine, frames: payloads, start: start, seconds: seconds)
                sendersDone.signal()
            }
            sender.name = "callroom.load.send.\(t)"
            sender.start()
        }
        for _ in 0..<threads { sendersDone.wait() }
        // Let the last packets arrive.
        Thread.sleep(forTimeInterval: 0.3)
        running.store(false, ordering: .releasing)
        done.wait()
        let expected = sent.load(ordering: .relaxed) * (perRoom - 1)
        let got = received.load(ordering: .relaxed)
        let s = stats.withLock { $0 }
        return Report(sent: sent.load(ordering: .relaxed), delivered: got, expected: expected,
                      seconds: Double(monotonicNanoseconds() - start) / 1e9,
                      jitterMs: s.jitter.sorted(), delayMs: s.delays.sorted())
    }

    struct Report {
        var sent: Int
        var delivered: Int
        var expected: Int
        var seconds: Double
        var jitterMs: [Double]
        var delayMs: [Double]
        var lossPercent: Double { expected == 0 ? 0 : max(0, 100 * Double(expected - delivered) / Double(expected)) }
        func p(_ xs: [Double], _ q: Double) -> Double { Self.quantile(xs, q) }
        /// The q-quantile of sorted values (nearest rank below), NaN for none.
        static func quantile(_ xs: [Double], _ q: Double) -> Double { xs.isEmpty ? .nan : xs[min(xs.count - 1, Int(Double(xs.count - 1) * q))] }
    }

    /// Sends one RTP packet from each of `group` every 20 ms until `seconds` have passed.
    private func sendLoop(_ group: [Bot], frames: [[UInt8]], start: UInt64, seconds: Double) {
        var pacer = Pacer(periodNanoseconds: 20_000_000)
        var frame = 0
        var packet = [UInt8](repeating: 0, count: 1500)
        while Double(monotonicNanoseconds() - start) / 1e9 < seconds {
            pacer.wait()
            let payload = frames[frame % max(1, frames.count)]
            for b in group {
                let now = monotonicNanoseconds()
                let n = packet.withUnsafeMutableBytes { p -> Int in
                    var h = RTPPacket.writeHeader(into: p, sequenceNumber: UInt16(truncatingIfNeeded: frame),
                                                  timestamp: UInt32(truncatingIfNeeded: frame * 960), ssrc: b.ssrc,
                                                  audioLevel: .init(level: 20, voiceActivity: true))
                    // Grow the one-byte extension block to 4 words: the level (id 1), then id 2 with
                    // 8 bytes of send time, then padding; the payload starts at byte 32.
                    p[15] = 4
                    p[18] = (2 << 4) | 7
                    for k in 0..<8 { p[19 + k] = UInt8((now >> (56 - 8 * UInt64(k))) & 0xFF) }
                    for k in 27..<32 { p[k] = 0 }
                    h = 32
                    for (k, byte) in payload.enumerated() { p[h + k] = byte }
                    guard let s = b.srtp else { return h + payload.count }
                    return (try? s.protect(p, length: h + payload.count)) ?? 0
                }
                if packet.withUnsafeBytes({ b.socket?.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: b.relay) ?? false }) {
                    sent.add(1, ordering: .relaxed)
                }
            }
            frame += 1
        }
    }

    /// Receives on every bot socket: epoll for readiness, `recvmmsg` for up to 32 datagrams a call.
    /// Every datagram is counted; one receiver in seven also records arrival jitter per stream
    /// and relay delay, which keeps the per-packet work of the other six to a counter.
    private func receiveLoop() {
        guard let poller = ReadinessPoller() else { return }
        let sockets = bots.compactMap(\.socket)
        for (i, s) in sockets.enumerated() { poller.add(s.fd, tag: UInt64(i)) }
        let batch = UDPBatchReceiver(capacity: 32)
        var lastArrival: [UInt64: (arrival: UInt64, ts: UInt32)] = [:]  // (receiver << 32 | ssrc)
        var delays: [Double] = [], jitters: [Double] = []
        var count = 0
        while running.load(ordering: .acquiring) {
            poller.wait(timeoutMs: 50) { tag in
                let r = Int(tag)
                let sampled = r % 7 == 0
                while true {
                    let n = batch.receive(on: sockets[r].fd)
                    guard n > 0 else { break }
                    // A consent challenge (24 bytes; RTP here is 32 or more): answered, not counted.
                    // The length is in the message header already: media bytes are not touched.
                    for i in 0..<n where batch.length(i) == MediaBinding.challengeLength {
                        let d = batch.datagram(i)
                        guard MediaBinding.isControl(d) else { continue }
                        count -= 1
                        if let answer = bots[r].consent?.answer(d) { sockets[r].send(answer, to: bots[r].relay) }
                    }
                    count += n
                    guard sampled else { continue }
                    let now = monotonicNanoseconds()
                    for i in 0..<n {
                        let d = batch.datagram(i)
                        guard d.count >= 32 else { continue }
                        var sentAt: UInt64 = 0
                        for k in 0..<8 { sentAt = sentAt << 8 | UInt64(d[19 + k]) }
                        if sentAt > 0 && sentAt <= now { delays.append(Double(now - sentAt) / 1e6) }
                        let ssrc = RTPPacket.ssrc(inDatagram: d)
                        let ts = UInt32(d[4]) << 24 | UInt32(d[5]) << 16 | UInt32(d[6]) << 8 | UInt32(d[7])
                        let key = UInt64(r) << 32 | UInt64(ssrc)
                        if let last = lastArrival[key] {
                            let transit = Double(now - last.arrival) / 1e6 - Double(ts &- last.ts) / 48.0
                            jitters.append(abs(transit))
                        }
                        lastArrival[key] = (now, ts)
                    }
                }
            }
        }
        received.store(count, ordering: .releasing)
        stats.withLock { $0 = (delays, jitters) }
    }

    /// Leaves cleanly: closes every signalling connection (the server records the leaves).
    func leaveAll() {
        for b in bots {
            b.signal?.client?.send(text: ClientMessage.leave.json())
        }
        Thread.sleep(forTimeInterval: 0.3)
        for b in bots { b.signal?.client?.disconnect(); b.socket?.close() }
    }
}
