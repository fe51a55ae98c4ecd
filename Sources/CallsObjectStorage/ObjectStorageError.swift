/// Why an object-storage request failed. Never carries a credential.
public enum ObjectStorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The store answered with an error: its HTTP status and S3 error code (`NoSuchKey`,
    /// `SignatureDoesNotMatch`, `InvalidAccessKeyId`, …) and message.
    case refused(status: Int, code: String, message: String)
    /// No answer: connection refused, DNS, TLS, a timeout (libcurl's words).
    case unreachable(String)
    /// An answer this client cannot use (no upload id, no ETag).
    case badReply(String)
    /// A local file could not be read.
    case file(String)
    /// A key outside what CallRoom writes (`[A-Za-z0-9._/-]`, no `..`, 1–512 bytes).
    case badKey(String)

    public var description: String {
        switch self {
        case .refused(let status, let code, let message): return "object storage refused (\(status) \(code)): \(message)"
        case .unreachable(let why): return "object storage unreachable: \(why)"
        case .badReply(let why): return "object storage answered oddly: \(why)"
        case .file(let why): return "cannot read the file: \(why)"
        case .badKey(let key): return "not an object key CallRoom writes: \(key)"
        }
    }

    /// Worth trying again later: no answer, or the store's own trouble (5xx, throttling).
    public var isTransient: Bool {
        switch self {
        case .unreachable: return true
        case .refused(let status, let code, _): return status >= 500 || status == 429 || code == "SlowDown" || code == "RequestTimeout"
        case .badReply, .file, .badKey: return false
        }
    }
}
