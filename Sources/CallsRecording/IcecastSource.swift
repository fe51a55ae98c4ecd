import CallsCore
import CShout
import Foundation

/// Where a live stream goes: an Icecast mount, from `http[s]://user:password@host:port/mount`
/// (`{sessionId}` in the mount is replaced by the session's id). The user defaults to
/// Icecast's `source`.
public struct IcecastTarget: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String
    public var mount: String
    public var tls: Bool

    /// Parses a target; the error says what is wrong with it.
    public init(url: String, sessionId: String = "") throws(StreamError) {
        guard let u = URLComponents(string: url), let scheme = u.scheme?.lowercased(), ["http", "https", "icecast"].contains(scheme),
              let host = u.host, !host.isEmpty else {
            throw .badTarget("an Icecast URL is http://source:PASSWORD@HOST:PORT/MOUNT (got \(Self.redacted(url)))")
        }
        guard let password = u.password, !password.isEmpty else { throw .badTarget("the Icecast URL has no source password") }
        let safeSession = sessionId.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "session"
        let mount = u.path.replacingOccurrences(of: "%7BsessionId%7D", with: safeSession).replacingOccurrences(of: "{sessionId}", with: safeSession)
        guard mount.count > 1, mount.hasPrefix("/") else { throw .badTarget("the Icecast URL names no mount (…/live.opus)") }
        self.host = host
        tls = scheme == "https"
        port = u.port ?? (tls ? 443 : 8000)
        user = u.user.flatMap { $0.isEmpty ? nil : $0 } ?? "source"
        self.password = password
        self.mount = mount
    }

    /// Without the password.
    public var description: String { "\(tls ? "https" : "http")://\(user)@\(host):\(port)\(mount)" }

    static func redacted(_ url: String) -> String {
        guard var u = URLComponents(string: url) else { return "an unreadable URL" }
        if u.password != nil { u.password = "…" }
        return u.string ?? "an unreadable URL"
    }
}

/// Why a live stream could not be sent.
public enum StreamError: Error, Equatable, Sendable, CustomStringConvertible {
    case badTarget(String)
    /// The server answered but refused: a wrong password (401), a mount in use (403), …
    case refused(String)
    /// No server there, or it did not answer in time.
    case unreachable(String)
    /// The connection broke while streaming.
    case dropped(String)
    /// The target's address is one the server never connects to (nothing was sent).
    case refusedDestination(String)

    public var description: String {
        switch self {
        case .badTarget(let m): return m
        case .refused(let m): return "the Icecast server refused the stream: \(m)"
        case .unreachable(let m): return "cannot reach the Icecast server: \(m)"
        case .dropped(let m): return "the Icecast server dropped the stream: \(m)"
        case .refusedDestination(let m): return "not sent: \(m)"
        }
    }
}

/// One source connection to Icecast through libshout (Debian `libshout-dev`), sending Ogg
/// pages (libshout parses them for timing). Non-blocking: `connect` waits at most its timeout,
/// and `send` queues inside libshout rather than stalling the caller; a queue that keeps
/// growing (a server that stopped reading) counts as dropped. Owns its `shout_t`.
///
/// Thread rules: one thread at a time (the streamer's sender thread).
public final class IcecastSource {
    public let target: IcecastTarget
    private let shout: OpaquePointer
    private var connected = false
    /// More than this waiting in libshout's queue: the server is not reading; give up on it.
    public static let maxQueuedBytes = 512 * 1024

    private static let library: Void = { shout_init() }()

    public init(target: IcecastTarget, name: String) throws(StreamError) {
        _ = Self.library
        guard let s = shout_new() else { throw .unreachable("shout_new failed") }
        shout = s
        self.target = target
        var ok = shout_set_host(s, target.host) == SHOUTERR_SUCCESS
        ok = ok && shout_set_port(s, UInt16(clamping: target.port)) == SHOUTERR_SUCCESS
        ok = ok && shout_set_user(s, target.user) == SHOUTERR_SUCCESS
        ok = ok && shout_set_password(s, target.password) == SHOUTERR_SUCCESS
        ok = ok && shout_set_mount(s, target.mount) == SHOUTERR_SUCCESS
        ok = ok && shout_set_protocol(s, UInt32(SHOUT_PROTOCOL_HTTP)) == SHOUTERR_SUCCESS
        ok = ok && shout_set_content_format(s, UInt32(SHOUT_FORMAT_OGG), UInt32(SHOUT_USAGE_AUDIO), nil) == SHOUTERR_SUCCESS
        ok = ok && shout_set_tls(s, Int32(target.tls ? SHOUT_TLS_RFC2818 : SHOUT_TLS_DISABLED)) == SHOUTERR_SUCCESS
        ok = ok && shout_set_nonblocking(s, UInt32(SHOUT_BLOCKING_NONE)) == SHOUTERR_SUCCESS
        ok = ok && shout_set_agent(s, "callroomd") == SHOUTERR_SUCCESS
        _ = shout_set_meta(s, "name", name)
        guard ok else {
            let why = String(cString: shout_get_error(s))
            shout_free(s)
            throw .badTarget("libshout refused the target \(target): \(why)")
        }
    }

    deinit {
        if connected { shout_close(shout) }
        shout_free(shout)
    }

    /// Connects (the HTTP source request and its answer), waiting at most `timeout` seconds.
    /// `address` (an IP literal) is dialled instead of resolving the target's host again: the
    /// caller checked it (the source request still names the mount; TLS needs the name).
    public func connect(timeout: TimeInterval, address: String? = nil) throws(StreamError) {
        guard shout_set_host(shout, address ?? target.host) == SHOUTERR_SUCCESS else {
            throw .badTarget("libshout refused the host \(address ?? target.host): \(String(cString: shout_get_error(shout)))")
        }
        // libshout waits for its connect with select(2): a descriptor past FD_SETSIZE (1024)
        // aborts the process (glibc's fortify check). A busy server has that many; so the
        // socket is given a low number held for it (`LowDescriptors`), or the stream refused.
        guard LowDescriptors.release() else {
            throw .unreachable("this server has more than \(FD_SETSIZE) descriptors open and libshout cannot use a higher one")
        }
        defer { LowDescriptors.reserve() }
        let deadline = Date().addingTimeInterval(timeout)
        var r = shout_open(shout)
        while r == SHOUTERR_BUSY || r == SHOUTERR_RETRY {
            guard Date() < deadline else {
                shout_close(shout)
                throw .unreachable("no answer from \(target.host):\(target.port) within \(Int(timeout)) s")
            }
            usleep(10_000)
            r = shout_get_connected(shout)
        }
        guard r == SHOUTERR_SUCCESS || r == SHOUTERR_CONNECTED else {
            let why = String(cString: shout_get_error(shout))
            shout_close(shout)
            switch r {
            case SHOUTERR_NOLOGIN: throw .refused("\(why) (check the source user and password, and that \(target.mount) is free)")
            case SHOUTERR_NOCONNECT, SHOUTERR_SOCKET: throw .unreachable("\(target.host):\(target.port): \(why)")
            default: throw .refused(why)
            }
        }
        connected = true
    }

    public var isConnected: Bool { connected }

    /// Sends Ogg pages (queued by libshout if the socket is full).
    public func send(_ bytes: [UInt8]) throws(StreamError) {
        guard connected else { throw .dropped("not connected") }
        guard !bytes.isEmpty else { return try pump() }
        let r = bytes.withUnsafeBufferPointer { shout_send(shout, $0.baseAddress, $0.count) }
        guard r == SHOUTERR_SUCCESS || r == SHOUTERR_BUSY else { throw drop() }
        try pump()
    }

    /// Pushes what libshout queued; a queue past `maxQueuedBytes` drops the connection.
    public func pump() throws(StreamError) {
        guard connected else { return }
        let q = shout_queuelen(shout)
        guard q >= 0 else { throw drop() }
        if q > 0 {
            let r = shout_send(shout, nil, 0)
            guard r == SHOUTERR_SUCCESS || r == SHOUTERR_BUSY else { throw drop() }
        }
        guard shout_queuelen(shout) <= Self.maxQueuedBytes else {
            shout_close(shout)
            connected = false
            throw .dropped("it stopped reading (\(Self.maxQueuedBytes / 1024) KB waiting)")
        }
    }

    private func drop() -> StreamError {
        let why = String(cString: shout_get_error(shout))
        shout_close(shout)
        connected = false
        return .dropped(why)
    }

    /// Closes the connection (the server ends the mount).
    public func close() {
        guard connected else { return }
        shout_close(shout)
        connected = false
    }
}

/// A few low file descriptors held (open on /dev/null) from early on, for libshout: it passes
/// its socket to select(2), which only takes descriptors under FD_SETSIZE. Releasing one just
/// before libshout opens its socket gives that socket the lowest free number (POSIX). Any thread.
public enum LowDescriptors {
    private static let held = Locked<[Int32]>([])
    public static let count = 8

    /// Holds up to `count` low descriptors (call early, e.g. when a server starts). Idempotent.
    public static func reserve() {
        held.withLock { h in
            while h.count < count {
                let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { return }
                guard fd < FD_SETSIZE else { close(fd); return }
                h.append(fd)
            }
        }
    }

    /// Frees one (the lowest held) for the socket about to open; false when none is held and
    /// the lowest free descriptor is past FD_SETSIZE.
    static func release() -> Bool {
        let fd = held.withLock { h -> Int32? in
            guard let lowest = h.min() else { return nil }
            h.removeAll { $0 == lowest }
            return lowest
        }
        if let fd { close(fd); return true }
        let probe = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if probe >= 0 { close(probe) } }
        return probe >= 0 && probe < FD_SETSIZE
    }
}
