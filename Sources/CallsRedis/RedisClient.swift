import CHiredis
import Foundation

/// Why a Redis command did not give an answer.
public enum RedisError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Redis cannot be reached (down, restarting, or the connection lost): the next command
    /// tries to connect again.
    case unavailable(String)
    /// Redis answered with an error (a wrong command, a script error).
    case reply(String)

    public var description: String {
        switch self {
        case .unavailable(let m): return "redis unavailable: \(m)"
        case .reply(let m): return "redis: \(m)"
        }
    }
}

/// One Redis reply, as values.
public enum RedisReply: Sendable, Equatable {
    case null
    case integer(Int64)
    case string(String)
    case status(String)
    case array([RedisReply])

    public var string: String? {
        switch self {
        case .string(let s), .status(let s): return s
        default: return nil
        }
    }
    public var integer: Int64? { if case .integer(let v) = self { return v }; return nil }
    public var array: [RedisReply] { if case .array(let a) = self { return a }; return [] }
}

/// One connection to Redis through hiredis that owns it (freed on deinit): blocking commands
/// with a timeout, arguments passed binary-safe (`redisCommandArgv`). A command on a connection
/// that turns out to be dead (Redis restarted since) is sent once more on a new one — every
/// command CallRoom sends is idempotent — so a Redis restart costs only the commands sent while
/// it was down (each fails with `.unavailable`).
///
/// The process must ignore SIGPIPE (callroomd does): hiredis writes with write(2), and a write
/// to a Redis that died raises it.
///
/// Thread rules: not thread-safe; one owner (the node registry's queue) or under a lock.
public final class RedisClient: @unchecked Sendable {
    /// `redis://HOST:PORT` or `unix:///path/to/redis.sock` (also a bare `/path` or `HOST:PORT`).
    public let address: String
    private let timeout: timeval
    private var context: UnsafeMutablePointer<redisContext>?

    public init(address: String, timeoutMs: Int = 1000) throws(RedisError) {
        self.address = address
        timeout = timeval(tv_sec: timeoutMs / 1000, tv_usec: Int((timeoutMs % 1000) * 1000))
        try connect()
    }

    deinit { if let context { redisFree(context) } }

    private func connect() throws(RedisError) {
        if let context { redisFree(context) }
        context = nil
        let c: UnsafeMutablePointer<redisContext>?
        if let path = Self.socketPath(address) {
            c = redisConnectUnixWithTimeout(path, timeout)
        } else {
            guard let (host, port) = Self.hostPort(address) else { throw .unavailable("'\(address)' is not redis://HOST:PORT or unix:///PATH") }
            c = redisConnectWithTimeout(host, Int32(port), timeout)
        }
        guard let c, callroom_redis_err(c) == 0 else {
            let message = String(cString: callroom_redis_errstr(c))
            if let c { redisFree(c) }
            throw .unavailable("\(address): \(message)")
        }
        redisSetTimeout(c, timeout)
        _ = fcntl(c.pointee.fd, F_SETFD, FD_CLOEXEC)  // not inherited by the processes we start
        context = c
    }

    /// The socket path of a `unix://` (or bare `/path`) address; nil for TCP.
    public static func socketPath(_ a: String) -> String? {
        if a.hasPrefix("unix://") { return String(a.dropFirst("unix://".count)) }
        return a.hasPrefix("/") ? a : nil
    }

    /// The host and port of a `redis://HOST:PORT` (or bare `HOST:PORT`) address; nil otherwise.
    public static func hostPort(_ a: String) -> (String, Int)? {
        let rest = a.hasPrefix("redis://") ? String(a.dropFirst("redis://".count)) : a
        let parts = rest.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, let p = Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "/"))), (1...65535).contains(p) else { return nil }
        return (parts[0], p)
    }

    /// Sends one command (`["SET", key, value, "PX", "3000"]`) and returns its reply.
    @discardableResult
    public func command(_ args: [String]) throws(RedisError) -> RedisReply {
        guard !args.isEmpty else { throw .reply("an empty command") }
        let wasConnected = context != nil
        do {
            return try send(args)
        } catch .unavailable(_) where wasConnected {
            // The connection was older than this command: Redis may have restarted since. Once more, anew.
            return try send(args)
        }
    }

    private func send(_ args: [String]) throws(RedisError) -> RedisReply {
        if context == nil { try connect() }
        guard let c = context else { throw .unavailable(address) }
        let raw: UnsafeMutableRawPointer? = Self.withArgv(args) { argv, lengths in
            redisCommandArgv(c, Int32(args.count), argv, lengths)
        } ?? nil
        guard let raw else {
            let message = String(cString: callroom_redis_errstr(c))
            redisFree(c)
            context = nil
            throw .unavailable("\(address): \(message)")
        }
        defer { freeReplyObject(raw) }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        if reply.pointee.type == REDIS_REPLY_ERROR { throw .reply(Self.text(reply)) }
        return Self.value(reply)
    }

    private static func text(_ r: UnsafeMutablePointer<redisReply>) -> String {
        guard let s = r.pointee.str else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: s, count: r.pointee.len), as: UTF8.self)
    }

    private static func value(_ r: UnsafeMutablePointer<redisReply>) -> RedisReply {
        switch r.pointee.type {
        case REDIS_REPLY_INTEGER: return .integer(r.pointee.integer)
        case REDIS_REPLY_STRING: return .string(text(r))
        case REDIS_REPLY_STATUS: return .status(text(r))
        case REDIS_REPLY_ARRAY:
            var out: [RedisReply] = []
            for i in 0..<r.pointee.elements { if let e = r.pointee.element[i] { out.append(value(e)) } }
            return .array(out)
        default: return .null
        }
    }

    /// Calls `body` with the arguments as byte buffers and their lengths (binary-safe: no NUL
    /// terminator is relied on), valid for the call; nil for no arguments.
    private static func withArgv<R>(_ args: [String], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R) -> R? {
        let owned: [UnsafeMutableBufferPointer<CChar>] = args.map { a in
            let bytes = Array(a.utf8)
            let b = UnsafeMutableBufferPointer<CChar>.allocate(capacity: max(1, bytes.count))
            for (i, v) in bytes.enumerated() { b[i] = CChar(bitPattern: v) }
            return b
        }
        defer { owned.forEach { $0.deallocate() } }
        var argv: [UnsafePointer<CChar>?] = owned.map { $0.baseAddress.map { UnsafePointer($0) } }
        let lengths = args.map { $0.utf8.count }
        return argv.withUnsafeMutableBufferPointer { a in
            lengths.withUnsafeBufferPointer { l in
                guard let ap = a.baseAddress, let lp = l.baseAddress else { return nil }
                return body(ap, lp)
            }
        }
    }
}
