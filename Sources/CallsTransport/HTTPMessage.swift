/// An HTTP request as the web server hands it to its delegate. A value; safe to pass between threads.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string, percent-decoded by libwebsockets.
    public var path: String
    /// Query arguments (`a=b&c=d`), last one wins.
    public var query: [String: String]
    /// Request headers the server looks for, by lower-case name (see `WebServer.capturedHeaders`).
    public var headers: [String: String]
    public var body: [UInt8]
    /// The peer's address, for logs and rate limits.
    public var peer: String
    /// The client asked with `HEAD` (`method` says `GET`: it is answered as one, the head alone
    /// sent). A handler may skip making the body — a download from object storage is never
    /// opened — and answer its length with `DeclaredBody`.
    public var isHead: Bool

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: [UInt8] = [], peer: String = "", isHead: Bool = false) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
        self.isHead = isHead
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// An HTTP response. A value; safe to pass between threads.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var content: Content
    /// More response headers (lower-case names), e.g. `content-range`.
    public var headers: [(name: String, value: String)] = []

    /// Where the body comes from.
    public enum Content: Sendable {
        /// These bytes (sent in chunks, never copied whole into one write).
        case bytes([UInt8])
        /// A file read as it is sent: a download holds one chunk of it in memory, not the file.
        case file(FileBody)
        /// A body made elsewhere while it is sent (a download from object storage): the server
        /// writes what has come on each chance to write.
        case stream(any HTTPBodyStream)
    }

    /// `count` bytes of the file at `path` from `offset`. The server opens it when the answer's
    /// head is written (answering 404 if it cannot) and ends the connection if the file turns
    /// out shorter.
    public struct FileBody: Sendable, Equatable {
        public var path: String
        public var offset: Int
        public var count: Int
        public init(path: String, offset: Int, count: Int) {
            self.path = path
            self.offset = offset
            self.count = count
        }
    }

    public init(status: Int, contentType: String, content: Content, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.contentType = contentType
        self.content = content
        self.headers = headers
    }

    /// A response whose body is read from `file` as it is sent.
    public init(status: Int, contentType: String, file: FileBody, headers: [(name: String, value: String)] = []) {
        self.init(status: status, contentType: contentType, content: .file(file), headers: headers)
    }

    /// A response whose body comes from `stream` as it is sent.
    public init(status: Int, contentType: String, stream: any HTTPBodyStream, headers: [(name: String, value: String)] = []) {
        self.init(status: status, contentType: contentType, content: .stream(stream), headers: headers)
    }

    public init(status: Int, contentType: String = "application/json", body: [UInt8], headers: [(name: String, value: String)] = []) {
        self.init(status: status, contentType: contentType, content: .bytes(body), headers: headers)
    }

    /// The body's length in bytes (the file's part, or the stream's).
    public var contentLength: Int {
        switch content {
        case .bytes(let b): return b.count
        case .file(let f): return f.count
        case .stream(let s): return s.count
        }
    }

    /// The streamed body's producer, if the body is one.
    var stream: (any HTTPBodyStream)? {
        if case .stream(let s) = content { return s }
        return nil
    }

    public init(status: Int, json: String) {
        self.init(status: status, contentType: "application/json", body: Array(json.utf8))
    }
}

/// A response body produced on another thread while it is sent, with its length known before
/// the head goes (`count`). The server calls `start` once on its service thread when the head is
/// written, then `read` whenever it may write; `cancel` when the response is over (sent, or the
/// connection gone), after which the producer stops and frees what it held.
///
/// Thread rules: `start` and `read` on the server's service thread; `cancel` from any thread (an
/// answer dropped before it was sent is cancelled where it is dropped); `wake`, given to
/// `start`, from any thread (the producer calls it when more has come or it failed).
public protocol HTTPBodyStream: AnyObject, Sendable {
    /// The body's length in bytes.
    var count: Int { get }
    /// The response's head is out: the producer may call `wake` from now on.
    func start(wake: @escaping @Sendable () -> Void)
    /// Copies up to `max` bytes into `into`: how many (0: none yet — `wake` comes when there
    /// are), nil when the body failed or ended short (the connection is cut: the client sees
    /// a body shorter than its head said, never a wrong one).
    func read(into: UnsafeMutableRawPointer, max: Int) -> Int?
    /// The response is over: stop producing.
    func cancel()
}

/// A body known only by its length, for the answer to a `HEAD` (`HTTPRequest.isHead`): the head
/// says how long the GET's body would be, and nothing is made. Sent to a GET by mistake it ends
/// the connection short (a client never takes it for a whole body).
///
/// Thread rules: any thread (it holds only its length).
public final class DeclaredBody: HTTPBodyStream {
    public let count: Int
    public init(count: Int) { self.count = count }
    public func start(wake: @escaping @Sendable () -> Void) {}
    public func read(into: UnsafeMutableRawPointer, max: Int) -> Int? { nil }
    public func cancel() {}
}
