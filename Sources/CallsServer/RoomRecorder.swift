import CallsCore
import CallsRecording
import CallsSecurity
import CallsTransport
import Foundation
import Synchronization

/// The server's recorder for one room: a member of the room like any client — it joins over the
/// server's own signalling (a call token with role `recorder`, which keeps it out of the roster),
/// binds a UDP socket to the relay with the consent handshake (so the socket relay and the kernel
/// fast path both deliver to it), holds the room's SRTP keys, and never sends media.
///
/// ```
///  signalling (WebSocket thread): joined / mediaKeys / roster / left ──▶ keys, names, stop
///  receive thread:  UDP ─▶ consent answer │ SRTP unprotect ─▶ per sender: OggOpusWriter (packets as they came)
///  at the end:      the participants' files ─▶ OggOpusMixdown (decode, mix, libopusenc) ─▶ mixed.opus
/// ```
/// Files go to `dir` (`{pid}.opus` while it records, `mixed.opus` made when it stops), 0600.
/// Live, it only writes packets (the mix after the call costs ≈ 1 s of CPU per minute of a
/// 10-person room, off the call's path); when it stops (a moderator, the room emptying, the
/// server stopping) every file is finished, the mix made, the row written, with
/// `recording_generated` for webhooks.
///
/// Thread rules: `start`/`stop` from any thread; the rest is confined to the threads above,
/// sharing `Locked` state.
final class RoomRecorder: WebSocketClientDelegate, @unchecked Sendable {
    struct Config: Sendable {
        var signallingURL: URL
        var trust: TLSTrust
        var relay: SocketAddress
        var sessionId: String
        var rid: String
        var callToken: String
        var dir: String
        var publicURL: String
    }

    let config: Config
    private let store: CallStore
    private let log: ServerLog
    private let outbox: WebhookOutbox
    private let onFinished: @Sendable (RoomRecorder) -> Void
    private var client: WebSocketClient?
    private let socket: UDPSocket
    private let receiver: SRTPReceiver
    /// When the recorder joined (monotonic ns): each participant's file is placed from here.
    private let startedAt = Atomic<UInt64>(0)
    private let running = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let finishing = Atomic<Bool>(false)
    private let threadsDone = DispatchSemaphore(value: 0)
    /// Threads started (under `state`'s lock with the check that the recorder is not stopping).
    private let threads = Atomic<Int>(0)

    private struct State {
        var consent: MediaConsent?
        var ssrc: UInt32 = 0
        /// Who each sender is (from `joined` and the roster messages).
        var names: [UInt32: (uid: String, pid: String)] = [:]
        var writers: [UInt32: OggOpusWriter] = [:]
        var failure: String?
    }
    private let state = Locked(State())

    init(config: Config, store: CallStore, log: ServerLog, outbox: WebhookOutbox,
         onFinished: @escaping @Sendable (RoomRecorder) -> Void) throws {
        self.config = config
        self.store = store
        self.log = log
        self.outbox = outbox
        self.onFinished = onFinished
        socket = try UDPSocket(host: "127.0.0.1", port: 0)
        receiver = try SRTPReceiver()
    }

    /// Creates the directory and joins the room.
    func start() throws {
        try FileManager.default.createDirectory(atPath: config.dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let c = WebSocketClient(url: config.signallingURL, trust: config.trust, delegate: self)
        client = c
        try c.connect()
    }

    /// Stops (idempotent): threads end, files are finished, the row is written.
    func stop() {
        // Under the lock `spawn` takes: no thread starts once this has read the count.
        let started = state.withLock { _ -> Int in
            _ = stopped.exchange(true, ordering: .acquiringAndReleasing)
            running.store(false, ordering: .releasing)
            return threads.load(ordering: .acquiring)
        }
        guard !finishing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for _ in 0..<started { threadsDone.wait() }
        socket.close()
        client?.disconnect()
        finishFiles()
        onFinished(self)
    }

    // MARK: Signalling (the WebSocket's thread)

    func webSocketDidOpen(_ c: WebSocketClient) {
        c.send(text: ClientMessage.join(.init(callToken: config.callToken, sessionId: config.sessionId, audioMuted: true,
                                              videoPaused: true, sessionType: .voice, idleTimeoutSeconds: 0)).json())
    }

    func webSocket(_ c: WebSocketClient, didReceive message: [UInt8], binary: Bool) {
        guard !binary, let m = try? ServerMessage(json: Data(message)) else { return }
        switch m {
        case .joined(let j):
            guard let token = Hex.decode(j.bindToken) else { return fail("no bind token in joined") }
            state.withLock { s in
                s.consent = MediaConsent(ssrc: j.you.ssrc, token: token)
                s.ssrc = j.you.ssrc
                for p in j.participants { s.names[p.ssrc] = (p.uid, p.pid) }
            }
            install(j.mediaKeys ?? [])
            startedAt.store(monotonicNanoseconds(), ordering: .releasing)
            guard !stopped.load(ordering: .acquiring) else { return }
            running.store(true, ordering: .releasing)
            spawn("callroom.recorder.receive") { $0.receiveLoop() }
            log.info("recorder joined", ["session": config.sessionId, "rid": config.rid])
        case .mediaKeys(let keys):
            install(keys)
        case .participantJoined(let w):
            state.withLock { $0.names[w.ssrc] = (w.uid, w.pid) }
        case .left:
            DispatchQueue.global().async { self.stop() }
        case .error(let code, let message):
            fail("\(code.rawValue): \(message)")
        default:
            break
        }
    }

    func webSocket(_ c: WebSocketClient, didCloseWith error: WebSocketClientError?) {
        DispatchQueue.global().async { self.stop() }
    }

    private func install(_ keys: [WireMediaKey]) {
        for w in keys {
            guard let key = SRTPKey(w) else { continue }
            try? receiver.setKey(key, for: w.ssrc)
        }
    }

    private func fail(_ why: String) {
        state.withLock { $0.failure = $0.failure ?? why }
        log.error("recorder failed", ["session": config.sessionId, "rid": config.rid, "error": why])
        DispatchQueue.global().async { self.stop() }
    }

    // MARK: Media

    private func spawn(_ name: String, _ body: @escaping @Sendable (RoomRecorder) -> Void) {
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

    private func receiveLoop() {
        guard let consent = state.withLock({ $0.consent }) else { return }
        let relay = config.relay
        guard consent.handshake(send: { socket.send($0, to: relay) }, receive: { socket.receiveCopy(timeoutMs: $0) }) else {
            return fail("the relay did not acknowledge the recorder's bind")
        }
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buf.deallocate() }
        while running.load(ordering: .acquiring) {
            guard socket.waitReadable(timeoutMs: 50) else { continue }
            while let (n, from) = socket.receive(into: buf) {
                guard from == relay else { continue }
                let raw = UnsafeRawBufferPointer(rebasing: buf[0..<n])
                if MediaBinding.isControl(raw) {
                    if let answer = consent.answer(raw) { socket.send(answer, to: relay) }
                    continue
                }
                guard let length = try? receiver.unprotect(buf, length: n) else { continue }
                let d = UnsafeRawBufferPointer(rebasing: buf[0..<length])
                guard let h = try? RTPHeader(parsing: d) else { continue }
                record(h, d)
            }
            // A recording needs no low latency: let 20 ms of packets gather before the next
            // wake-up (a wake-up per packet was most of the recorder's cost: context switches).
            usleep(20_000)
        }
    }

    /// The packet as it came, into its sender's file (opened at its first packet).
    private func record(_ h: RTPHeader, _ d: UnsafeRawBufferPointer) {
        let payload = UnsafeBufferPointer(rebasing: d.bindMemory(to: UInt8.self)[h.payloadRange])
        let error = state.withLock { s -> String? in
            if s.writers[h.ssrc] == nil {
                let who = s.names[h.ssrc]
                let name = who?.pid ?? String(h.ssrc, radix: 16)
                let offsetMs = (monotonicNanoseconds() &- startedAt.load(ordering: .acquiring)) / 1_000_000
                do {
                    s.writers[h.ssrc] = try OggOpusWriter(path: config.dir + "/\(name).opus", serial: Int32(bitPattern: h.ssrc),
                                                          tags: ["artist": who?.uid ?? "", "title": config.sessionId,
                                                                 OggOpusMixdown.offsetTag: "\(offsetMs)"])
                } catch { return "\(error)" }
            }
            do { try s.writers[h.ssrc]?.append(payload, timestamp: h.timestamp) } catch { return "\(error)" }
            return nil
        }
        if let error { fail(error) }
    }

    // MARK: The end

    private func finishFiles() {
        let (writers, names, failure) = state.withLock { s in
            let r = (s.writers, s.names, s.failure)
            s.writers = [:]
            return r
        }
        for w in writers.values { try? w.finish() }
        // The mixed file, from the participants' (after the call, off its path).
        let mixed = config.dir + "/mixed.opus"
        if !writers.isEmpty {
            do { try OggOpusMixdown.mix(writers.values.map(\.path).sorted(), into: mixed) } catch {
                log.error("recording mixdown failed", ["rid": config.rid, "error": "\(error)"])
            }
        }
        var files: [StoredRecordingFile] = []
        if let f = StoredRecordingFile.finalised(mixed, kind: "mixed", uid: nil, pid: nil) { files.append(f) }
        for (ssrc, w) in writers {
            if let f = StoredRecordingFile.finalised(w.path, kind: "participant", uid: names[ssrc]?.uid, pid: names[ssrc]?.pid) { files.append(f) }
        }
        let now = epochMilliseconds()
        let duration = files.map(\.durationMs).max() ?? 0
        let rows = outbox.recordingRows(.init(sessionId: config.sessionId, rid: config.rid,
                                              recordingURL: Self.url(config.publicURL, config.sessionId, config.rid),
                                              startTime: now - duration, endTime: now, duration: Double(duration) / 1000), at: now)
        do { try store.recordingFinished(rid: config.rid, endedAt: now, files: files, outbox: rows) } catch {
            log.error("store failed on recording end", ["rid": config.rid, "error": error.description])
        }
        log.info("recording finished", ["session": config.sessionId, "rid": config.rid, "files": "\(files.count)",
                                        "seconds": "\(duration / 1000)", "error": failure ?? ""])
    }

    /// Where the mixed file is served.
    static func url(_ publicURL: String, _ sessionId: String, _ rid: String) -> String {
        let s = sessionId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? sessionId
        return publicURL + "/v3/calls/\(s)/recordings/\(rid)"
    }
}

extension StoredRecordingFile {
    /// A recording's file once finished: finalised (`OggOpusFile.finalise`: an end marked if a
    /// crash left none), with its length and size. Nil when it is missing or not Ogg Opus.
    static func finalised(_ path: String, kind: String, uid: String?, pid: String?) -> StoredRecordingFile? {
        guard let s = try? OggOpusFile.finalise(path) else { return nil }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        return StoredRecordingFile(name: (path as NSString).lastPathComponent, kind: kind, uid: uid, pid: pid,
                                   durationMs: Int64(s.seconds * 1000), bytes: bytes)
    }
}
