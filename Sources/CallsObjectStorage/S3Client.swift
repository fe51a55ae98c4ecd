import CallsSecurity
import CallsSupport
import CallsTransport
import Foundation

/// Objects in an S3-compatible bucket over libcurl, every request signed with AWS Signature V4
/// by libcurl itself (`CURLOPT_AWS_SIGV4`; the payload's SHA-256 sent as `x-amz-content-sha256`).
/// Files larger than one part go up as a multipart upload (aborted if a part fails, so no
/// half-object is left to pay for). Errors say the store's code, never a credential.
///
/// Thread rules: one thread at a time (it owns one libcurl handle).
public final class S3Client {
    public let configuration: ObjectStorageConfiguration
    private let curl: CurlClient
    private let timeoutMs: Int
    /// Bytes per part of a multipart upload (S3: at least 5 MiB except the last).
    public let partSize: Int

    /// - Throws: `ObjectStorageError.badReply` for a configuration `problem`, `.unreachable` when
    ///   libcurl cannot start.
    public init(_ configuration: ObjectStorageConfiguration, partSize: Int = 8 << 20, timeoutMs: Int = 60_000, caFile: String? = nil) throws(ObjectStorageError) {
        if let problem = configuration.problem { throw .badReply(problem) }
        self.configuration = configuration
        self.partSize = max(5 << 20, partSize)
        self.timeoutMs = timeoutMs
        do { curl = try CurlClient(caFile: caFile ?? configuration.caFile, version: .http2OverTLS) } catch { throw .unreachable(error.description) }
        curl.awsSigV4 = ("aws:amz:\(configuration.region):s3", configuration.accessKeyID, configuration.secretAccessKey)
    }

    /// Creates the bucket (tests and first-time setup; a bucket that exists and is ours is fine).
    public func createBucket() throws(ObjectStorageError) {
        do {
            _ = try send("PUT", path: "/\(configuration.bucket)", body: [])
        } catch .refused(_, let code, _) where code == "BucketAlreadyOwnedByYou" {
            return
        }
    }

    /// Stores `bytes` at `key` in one request.
    public func put(_ key: String, bytes: [UInt8], contentType: String) throws(ObjectStorageError) {
        _ = try send("PUT", path: try path(key), body: bytes, headers: ["Content-Type: \(contentType)"])
    }

    /// Stores the file at `path` at `key`: one request up to `partSize`, else a multipart upload.
    public func upload(_ key: String, file: String, contentType: String) throws(ObjectStorageError) {
        guard let handle = FileHandle(forReadingAtPath: file) else { throw .file("\(file): cannot open") }
        defer { try? handle.close() }
        let size: Int
        do { size = Int(try handle.seekToEnd()); try handle.seek(toOffset: 0) } catch { throw .file("\(file): \(error)") }
        if size <= partSize {
            let bytes: [UInt8]
            do { bytes = [UInt8](try handle.readToEnd() ?? Data()) } catch { throw .file("\(file): \(error)") }
            return try put(key, bytes: bytes, contentType: contentType)
        }
        let objectPath = try path(key)
        let idQuery = "uploadId=" + Self.encode(try beginUpload(key, contentType: contentType).uploadID)
        do throws(ObjectStorageError) {
            var etags: [String] = []
            var number = 1
            while true {
                // (A read may return less than asked: a part is filled up to its size, or to the end.)
                var chunk = Data()
                while chunk.count < partSize {
                    let more: Data
                    do { more = try handle.read(upToCount: partSize - chunk.count) ?? Data() } catch { throw ObjectStorageError.file("\(file): \(error)") }
                    if more.isEmpty { break }
                    chunk += more
                }
                if chunk.isEmpty { break }
                let reply = try send("PUT", path: objectPath, query: "partNumber=\(number)&" + idQuery, body: [UInt8](chunk))
                guard let etag = reply.headers["etag"], !etag.isEmpty else { throw ObjectStorageError.badReply("no ETag for part \(number)") }
                etags.append(etag)
                number += 1
            }
            let parts = etags.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\(Self.escapeXML($0.element))</ETag></Part>" }
            let body = Array(("<CompleteMultipartUpload>" + parts.joined() + "</CompleteMultipartUpload>").utf8)
            let done = try send("POST", path: objectPath, query: idQuery, body: body, headers: ["Content-Type: application/xml"])
            // (S3 may answer 200 with an error in the body when completing.)
            if let code = S3XML.first(["Code"], in: done.body)["Code"] {
                throw ObjectStorageError.refused(status: done.status, code: code, message: S3XML.first(["Message"], in: done.body)["Message"] ?? "")
            }
        } catch {
            _ = try? send("DELETE", path: objectPath, query: idQuery, body: nil)  // AbortMultipartUpload
            throw error
        }
    }

    /// The object's bytes (at most `limit`).
    public func get(_ key: String, limit: Int = 64 << 20) throws(ObjectStorageError) -> [UInt8] {
        try send("GET", path: try path(key), body: nil, bodyLimit: limit).body
    }

    /// Bytes `range` of the object (clipped to its end, as S3 does) and the object's whole size,
    /// from the store's `Content-Range` (at most `limit` bytes).
    public func get(_ key: String, range: Range<Int>, limit: Int = 64 << 20) throws(ObjectStorageError) -> (bytes: [UInt8], total: Int) {
        let reply = try send("GET", path: try path(key), body: nil, headers: ["Range: bytes=\(range.lowerBound)-\(range.upperBound - 1)"], bodyLimit: limit)
        // `bytes a-b/total` (206), or the whole object (200: a store that ignores Range).
        if reply.status == 200 { return (Array(reply.body[min(range.lowerBound, reply.body.count)..<min(range.upperBound, reply.body.count)]), reply.body.count) }
        guard let total = reply.headers["content-range"]?.split(separator: "/").last.flatMap({ Int($0) }) else {
            throw .badReply("a ranged reply without Content-Range")
        }
        return (reply.body, total)
    }

    /// Bytes `range` of the object (nil: all of it) handed to `body` as they arrive, never held
    /// whole: a download of any size. `body` returning false ends the transfer, and so do fewer
    /// than one byte a second for `stallSeconds` (the receiver's pauses included). Returns when
    /// the transfer is over.
    /// - Throws: `.refused` for the store's error status, `.badReply` for a whole object where a
    ///   range was asked (a store that ignores Range), `.unreachable` when the transfer failed
    ///   or `body` ended it.
    public func stream(_ key: String, range: Range<Int>?, stallSeconds: Int = 60,
                       into body: @escaping (UnsafeRawBufferPointer) -> Bool) throws(ObjectStorageError) {
        final class Seen { var wholeForRange = false }
        let seen = Seen()
        var headers = ["x-amz-content-sha256: \(Hex.encode(Crypto.sha256([])))"]
        if let range { headers.append("Range: bytes=\(range.lowerBound)-\(range.upperBound - 1)") }
        let result = curl.get(configuration.endpoint + (try path(key)), headers: headers, deadline: .stall(seconds: stallSeconds)) { status, bytes in
            if range != nil, status != 206 {
                seen.wholeForRange = true
                return false
            }
            return body(bytes)
        }
        if seen.wholeForRange { throw .badReply("the store answered a ranged read with the whole object") }
        try check(result)
    }

    /// The object's size, or nil when there is none.
    public func size(_ key: String) throws(ObjectStorageError) -> Int? {
        do {
            let reply = try send("HEAD", path: try path(key), body: nil)
            return reply.headers["content-length"].flatMap { Int($0) }
        } catch .refused(let status, _, _) where status == 404 {
            return nil
        }
    }

    /// Removes the object (removing one that is not there is not an error, as in S3).
    public func delete(_ key: String) throws(ObjectStorageError) {
        _ = try send("DELETE", path: try path(key), body: nil)
    }

    /// A multipart upload begun and neither completed nor aborted (a crash cut it): its parts
    /// are kept, and paid for, until it is aborted.
    public struct IncompleteUpload: Equatable, Sendable {
        /// Relative to the configured prefix.
        public var key: String
        public var uploadID: String
        public var initiated: Date?

        public init(key: String, uploadID: String, initiated: Date?) {
            self.key = key
            self.uploadID = uploadID
            self.initiated = initiated
        }
    }

    /// The incomplete multipart uploads under the configured prefix (ListMultipartUploads; up to
    /// `pages` pages of 1000).
    public func incompleteUploads(pages: Int = 10) throws(ObjectStorageError) -> [IncompleteUpload] {
        var found: [IncompleteUpload] = []
        var markers: (key: String, id: String)?
        for _ in 0..<max(1, pages) {
            var query = "prefix=" + Self.encode(configuration.prefix) + "&uploads="
            if let m = markers { query = "key-marker=" + Self.encode(m.key) + "&" + query + "&upload-id-marker=" + Self.encode(m.id) }
            let reply = try send("GET", path: "/\(configuration.bucket)", query: query, body: nil, bodyLimit: 4 << 20)
            for r in S3XML.records("Upload", fields: ["Key", "UploadId", "Initiated"], in: reply.body) {
                guard let key = r["Key"], key.hasPrefix(configuration.prefix), let id = r["UploadId"], !id.isEmpty else { continue }
                found.append(IncompleteUpload(key: String(key.dropFirst(configuration.prefix.count)), uploadID: id,
                                              initiated: r["Initiated"].flatMap(Self.date)))
            }
            let page = S3XML.first(["IsTruncated", "NextKeyMarker", "NextUploadIdMarker"], in: reply.body)
            guard page["IsTruncated"] == "true", let key = page["NextKeyMarker"], let id = page["NextUploadIdMarker"] else { break }
            markers = (key, id)
        }
        return found
    }

    /// Begins a multipart upload of `key` (CreateMultipartUpload).
    func beginUpload(_ key: String, contentType: String) throws(ObjectStorageError) -> IncompleteUpload {
        let started = try send("POST", path: try path(key), query: "uploads=", body: [], headers: ["Content-Type: \(contentType)"])
        guard let uploadID = S3XML.first(["UploadId"], in: started.body)["UploadId"], !uploadID.isEmpty else {
            throw .badReply("no UploadId in the reply to CreateMultipartUpload")
        }
        return IncompleteUpload(key: key, uploadID: uploadID, initiated: Date())
    }

    /// Aborts a multipart upload (its parts are dropped).
    public func abort(_ upload: IncompleteUpload) throws(ObjectStorageError) {
        _ = try send("DELETE", path: try path(upload.key), query: "uploadId=" + Self.encode(upload.uploadID), body: nil)
    }

    /// S3's timestamps: ISO 8601, with or without fractional seconds.
    static func date(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: text) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)
    }

    // MARK: Requests

    /// `/BUCKET/PREFIX KEY` (keys are relative to the configured prefix).
    private func path(_ relativeKey: String) throws(ObjectStorageError) -> String {
        let key = configuration.prefix + relativeKey
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/-")
        guard (1...512).contains(key.utf8.count), key.allSatisfy(allowed.contains), !key.hasPrefix("/"),
              !key.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw .badKey(key)
        }
        return "/\(configuration.bucket)/\(key)"
    }

    private func send(_ method: String, path: String, query: String? = nil, body: [UInt8]?, headers: [String] = [],
                      bodyLimit: Int = 1 << 20) throws(ObjectStorageError) -> CurlClient.Response {
        let url = configuration.endpoint + path + (query.map { "?" + $0 } ?? "")
        let hash = Hex.encode(Crypto.sha256(body ?? []))
        // (Every header given here is signed: none may be one libcurl then drops, as "Expect:" is.)
        var headers = headers + ["x-amz-content-sha256: \(hash)"]
        // A body always names its type: libcurl's default (a form) makes some servers parse it away.
        if body != nil, !headers.contains(where: { $0.lowercased().hasPrefix("content-type:") }) { headers.append("Content-Type: application/octet-stream") }
        return try check(curl.request(method, url, headers: headers, body: body, timeoutMs: timeoutMs, bodyLimit: bodyLimit))
    }

    /// A 2xx reply, or the error the store (or the transfer) gave.
    @discardableResult
    private func check(_ result: Result<CurlClient.Response, CurlError>) throws(ObjectStorageError) -> CurlClient.Response {
        switch result {
        case .failure(let e):
            throw .unreachable(e.description)
        case .success(let r) where (200..<300).contains(r.status):
            return r
        case .success(let r):
            let fields = S3XML.first(["Code", "Message"], in: r.body)
            throw .refused(status: r.status, code: fields["Code"] ?? (r.status == 404 ? "NotFound" : "HTTP\(r.status)"), message: fields["Message"] ?? "")
        }
    }

    /// RFC 3986 percent-encoding of a query value (S3's upload ids may carry `+`, `/`, `=`).
    static func encode(_ s: String) -> String {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        return s.utf8.map { unreserved.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }

    static func escapeXML(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }
}
