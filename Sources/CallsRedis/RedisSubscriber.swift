import CHiredis
import CallsCore
import Foundation

/// One Redis pub/sub subscription on a thread of its own: a dedicated connection (a subscribed
/// connection can send nothing else), `SUBSCRIBE channel`, then every message handed to
/// `onMessage` on that thread, in the order Redis sent them. When Redis goes away the thread
/// reconnects every half second and subscribes again (what was published meanwhile is lost —
/// pub/sub keeps nothing — and `onReconnected` is told). `stop()` wakes the blocked read by
/// shutting the socket down.
///
/// Thread rules: `start`/`stop` from the owner; `onMessage`/`onState` run on the subscriber's thread.
package final class RedisSubscriber: @unchecked Sendable {
    package let address: String
    package let channel: String
    private let onMessage: @Sendable ([UInt8]) -> Void
    /// Told true when subscribed (first time and after each reconnection), false when the connection is lost.
    private let onState: @Sendable (Bool) -> Void
    private let lock = NSLock()
    private var stopping = false
    /// The connection the thread reads from (for `stop` to shut its socket); behind `lock`.
    private var context: UnsafeMutablePointer<redisContext>?
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    package init(address: String, channel: String, onState: @escaping @Sendable (Bool) -> Void = { _ in },
         onMessage: @escaping @Sendable ([UInt8]) -> Void) {
        self.address = address
        self.channel = channel
        self.onState = onState
        self.onMessage = onMessage
    }

    /// Subscribes now (throws when Redis cannot be reached), then reads on a new thread.
    package func start() throws(RedisError) {
        let c = try subscribe()
        lock.withLock { context = c }
        onState(true)
        let t = Thread { [self] in run() }
        t.name = "callroom.redis.sub"
        thread = t
        t.start()
    }

    /// Ends the subscription and waits for the thread.
    package func stop() {
        let running = lock.withLock { () -> Bool in
            guard !stopping else { return false }
            stopping = true
            if let c = context { shutdown(c.pointee.fd, Int32(SHUT_RDWR)) }
            return thread != nil
        }
        if running { finished.wait() }
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func run() {
        defer { finished.signal() }
        while !isStopping {
            guard let c = lock.withLock({ context }) else {
                Thread.sleep(forTimeInterval: 0.5)
                if isStopping { break }
                if let fresh = try? subscribe() {
                    let kept = lock.withLock { () -> Bool in
                        guard !stopping else { return false }
                        context = fresh
                        return true
                    }
                    if !kept { redisFree(fresh); break }
                    onState(true)
                }
                continue
            }
            var raw: UnsafeMutableRawPointer?
            if redisGetReply(c, &raw) != REDIS_OK || raw == nil {
                lock.withLock { context = nil }
                redisFree(c)
                if !isStopping { onState(false) }
                continue
            }
            guard let raw else { continue }
            let reply = raw.assumingMemoryBound(to: redisReply.self)
            // ["message", channel, payload]
            if reply.pointee.type == REDIS_REPLY_ARRAY, reply.pointee.elements == 3,
               let payload = reply.pointee.element[2], payload.pointee.type == REDIS_REPLY_STRING, let s = payload.pointee.str {
                let bytes = Array(UnsafeRawBufferPointer(start: s, count: payload.pointee.len))
                freeReplyObject(raw)
                onMessage(bytes)
            } else {
                freeReplyObject(raw)
            }
        }
        if let c = lock.withLock({ () -> UnsafeMutablePointer<redisContext>? in defer { context = nil }; return context }) { redisFree(c) }
    }

    /// A new connection, subscribed (no read timeout: it waits for messages; TCP keep-alive finds a dead peer).
    private func subscribe() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        let connectTimeout = timeval(tv_sec: 1, tv_usec: 0)
        let c: UnsafeMutablePointer<redisContext>?
        if let path = RedisClient.socketPath(address) {
            c = redisConnectUnixWithTimeout(path, connectTimeout)
        } else {
            guard let (host, port) = RedisClient.hostPort(address) else { throw .unavailable("'\(address)' is not redis://HOST:PORT or unix:///PATH") }
            c = redisConnectWithTimeout(host, Int32(port), connectTimeout)
            if let c { redisEnableKeepAlive(c) }
        }
        guard let c, callroom_redis_err(c) == 0 else {
            let message = String(cString: callroom_redis_errstr(c))
            if let c { redisFree(c) }
            throw .unavailable("\(address): \(message)")
        }
        _ = fcntl(c.pointee.fd, F_SETFD, FD_CLOEXEC)  // not inherited by the processes we start
        let ok: Bool = channel.withCString { ch in
            var lengths = [9, strlen(ch)]
            return "SUBSCRIBE".withCString { cmd in
                var argv: [UnsafePointer<CChar>?] = [cmd, ch]
                guard let r = redisCommandArgv(c, 2, &argv, &lengths) else { return false }
                defer { freeReplyObject(r) }
                return r.assumingMemoryBound(to: redisReply.self).pointee.type == REDIS_REPLY_ARRAY
            }
        }
        guard ok else {
            let message = String(cString: callroom_redis_errstr(c))
            redisFree(c)
            throw .unavailable("\(address): SUBSCRIBE failed: \(message)")
        }
        return c
    }
}
