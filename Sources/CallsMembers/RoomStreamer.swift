import CallsCore
import CallsRecording
import CallsTransport
import Foundation
import Synchronization

/// The server's live stream of one room to Icecast: a `ServerMember`'s sink that mixes the
/// room as it is said (`LiveMix`: decode, place by RTP clock, sum 200 ms behind), encodes the
/// mix as Ogg Opus (`OggOpusEncoder`, libopusenc) and sends the pages to an Icecast mount
/// (`IcecastSource`, libshout) from a sender thread of its own.
///
/// ```
///  receive thread: SRTP unprotect ─▶ LiveMix ─▶ every 20 ms: mix ─▶ OggOpusEncoder ─▶ pages ─┐
///  sender thread:  pages ─▶ libshout ─▶ Icecast        (dropped: reconnect, a new Ogg stream) ◀┘
/// ```
/// The first connection is made before the member joins (`connect`), so a refused password is
/// the moderator's error at once and `streaming: live` is true when the room hears it. When
/// Icecast drops, the room hears `reconnecting` (with why); the sender tries every second (up
/// to 5 s apart) for `reconnectSeconds`, then gives up: the stream stops and the moderator is
/// told. Each reconnection starts a fresh Ogg stream (new headers), as a new source must.
///
/// Thread rules: `connect` before the member starts (any thread); `received`/`tick` on the
/// member's receive thread; the sender thread owns the `IcecastSource`; `finished` on the
/// stopping thread; shared state behind a lock.
package final class RoomStreamer: ServerMemberSink, @unchecked Sendable {
    package struct Config: Sendable {
        package var sessionId: String
        package var id: String
        package var target: IcecastTarget
        package var reconnectSeconds: Double
        /// Blocks the stream never connects to, however its target's name resolves.
        package var refusedDestinations: [IPNetwork]
        package init(sessionId: String, id: String, target: IcecastTarget, reconnectSeconds: Double,
                     refusedDestinations: [IPNetwork] = IPNetwork.neverDialled) {
            self.sessionId = sessionId
            self.id = id
            self.target = target
            self.reconnectSeconds = reconnectSeconds
            self.refusedDestinations = refusedDestinations
        }
    }

    package let config: Config
    private let log: ServerLog
    /// Set before the member starts (`attach`); status goes out through it.
    private weak var member: ServerMember?
    package func attach(_ member: ServerMember) { self.member = member }
    private let source: IcecastSource
    private let mix = LiveMix(delayMs: 200)
    /// Confined to the receive thread (then the stopping thread).
    private var encoder: OggOpusEncoder?

    private struct Shared {
        package var pages: [UInt8] = []
        /// The sender reconnected: the next pages must start a new Ogg stream.
        package var restart = false
        package var failure: String?
        package var senderRunning = true
    }
    private let shared = Locked(Shared())
    private let senderDone = DispatchSemaphore(value: 0)
    private var senderStarted = false

    package init(config: Config, log: ServerLog) throws {
        self.config = config
        self.log = log
        source = try IcecastSource(target: config.target, name: "CallRoom: \(config.sessionId)")
    }

    /// The first connection (before joining): throws what Icecast said.
    package func connect() throws(StreamError) {
        try connectSource(timeout: 5)
        log.info("stream connected", ["session": config.sessionId, "id": config.id, "target": config.target.description])
    }

    // MARK: Receive thread

    package func received(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from who: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure) {
        mix.packet(ssrc: h.ssrc, timestamp: h.timestamp, payload: payload, atMs: atMs)
    }

    package func tick(nowMs: Int64) throws(ServerMemberFailure) {
        if !senderStarted {
            senderStarted = true
            let t = Thread { [self] in
                sendLoop()
                senderDone.signal()
            }
            t.name = "callroom.streaming.send"
            t.start()
        }
        let (restart, failure) = shared.withLock { s in
            defer { s.restart = false }
            return (s.restart, s.failure)
        }
        if let failure { throw ServerMemberFailure(reason: failure) }
        if restart || encoder == nil {
            // A new source connection takes a new Ogg stream: a fresh encoder writes its headers first.
            encoder = try? OggOpusEncoder(bitrate: 48_000, muxingDelayMs: 200, tags: ["title": config.sessionId, "encoder": "callroomd"]) { [shared] page in
                shared.withLock { $0.pages.append(contentsOf: page) }
                return nil
            }
        }
        guard let encoder else { throw ServerMemberFailure(reason: "the stream's Opus encoder could not start") }
        var failed: String?
        mix.render(untilMs: nowMs) { block in
            do { try encoder.write(block, name: config.target.mount) } catch { failed = "\(error)" }
        }
        if let failed { throw ServerMemberFailure(reason: "the stream's encoder failed: \(failed)") }
    }

    // MARK: Sender thread

    private func sendLoop() {
        var droppedAt: Date?
        var wait = 1.0
        var nextTry = Date()
        while shared.withLock({ $0.senderRunning }) {
            if source.isConnected {
                let pages = shared.withLock { s -> [UInt8] in
                    defer { s.pages.removeAll(keepingCapacity: true) }
                    return s.pages
                }
                do {
                    try source.send(pages)
                } catch {
                    droppedAt = Date()
                    wait = 1
                    nextTry = Date().addingTimeInterval(wait)
                    log.warn("stream dropped; reconnecting", ["session": config.sessionId, "error": "\(error)"])
                    member?.send(.streamStatus(state: .reconnecting, detail: "\(error)"))
                }
            } else if Date() >= nextTry {
                do {
                    try connectSource(timeout: 3)
                    // Pages made while it was away belong to the old stream: a new one starts now.
                    shared.withLock { s in
                        s.pages.removeAll()
                        s.restart = true
                    }
                    let away = droppedAt.map { Date().timeIntervalSince($0) } ?? 0
                    droppedAt = nil
                    log.info("stream reconnected", ["session": config.sessionId, "after_s": String(format: "%.1f", away)])
                    member?.send(.streamStatus(state: .live, detail: nil))
                } catch {
                    shared.withLock { $0.pages.removeAll() }
                    if case .refusedDestination = error {
                        shared.withLock { $0.failure = "\(error)" }
                        return
                    }
                    if let d = droppedAt, Date().timeIntervalSince(d) > config.reconnectSeconds {
                        shared.withLock { $0.failure = "the Icecast server stayed away for \(Int(config.reconnectSeconds)) s (\(error))" }
                        return
                    }
                    wait = min(5, wait * 1.5)
                    nextTry = Date().addingTimeInterval(wait)
                }
            }
            usleep(20_000)
        }
    }

    /// Connects the source to its target's checked address, within `timeout` seconds. The name
    /// is resolved here and every address it gives is checked against `refusedDestinations` (one
    /// refused refuses the target); plain HTTP then dials the addresses checked, in the resolver's
    /// order until one answers, so no second lookup elsewhere can answer differently (DNS
    /// rebinding). TLS dials the name, which libshout checks the certificate against: a host that
    /// cannot show one for it gets a handshake and nothing more.
    private func connectSource(timeout: TimeInterval) throws(StreamError) {
        let target = config.target
        let addresses: [IPAddress]
        do { addresses = try IPAddress.resolve(target.host) } catch { throw .unreachable("\(error)") }
        if let refused = addresses.first(where: { a in config.refusedDestinations.contains { $0.contains(a) } }) {
            let named = refused.description == target.host ? "" : " (\(target.host))"
            throw .refusedDestination("\(refused)\(named) is a link-local, multicast or unspecified address, or a cloud metadata service")
        }
        guard !target.tls else { return try source.connect(timeout: timeout, address: nil) }
        let deadline = Date().addingTimeInterval(timeout)
        var last = StreamError.unreachable("\(target.host): no address")
        for address in addresses {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { break }
            do { return try source.connect(timeout: left, address: address.description) } catch {
                guard case .unreachable = error else { throw error }
                last = error
            }
        }
        throw last
    }

    // MARK: The end

    package func finished(failure: String?) {
        if let encoder {
            try? encoder.finish(name: config.target.mount)  // the last pages: the end of the Ogg stream
            self.encoder = nil
        }
        if senderStarted {
            // Let the sender flush the last pages (a moment), then stop it.
            for _ in 0..<25 where shared.withLock({ !$0.pages.isEmpty && $0.failure == nil }) && source.isConnected { usleep(20_000) }
            shared.withLock { $0.senderRunning = false }
            senderDone.wait()
        }
        source.close()
        log.info("stream stopped", ["session": config.sessionId, "id": config.id, "error": failure ?? ""])
    }
}
