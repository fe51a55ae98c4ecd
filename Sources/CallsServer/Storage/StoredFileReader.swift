import CallsObjectStorage
import CallsStore
import CallsTransport
import Foundation
import Synchronization

/// A finished recording's or transcript's file, read where it is: this node's data directory
/// first, else the bucket (any node serves what any node uploaded), whole or a byte range.
/// A file on this node's disk is served from the file as it is sent (a download holds one
/// chunk of it, `WebServer.bodyChunkBytes`). A range is fetched from the bucket as a range;
/// reads from the bucket are bounded — at most `maxBucketReads` at once on this node and
/// `maxObjectBytes` each — so downloads cannot hold more than `maxBucketReads × maxObjectBytes`
/// of memory. A value; any thread (each read from the bucket makes its own client).
struct StoredFileReader {
    /// What a read gives: the bytes (or, from this node's disk, the part of the file to send),
    /// the file's whole size, and which range they are (nil: whole).
    struct Served {
        var bytes: [UInt8]
        var file: HTTPResponse.FileBody?
        var total: Int
        var range: Range<Int>?

        /// The answer carrying it: 206 with its `Content-Range` for a range, else 200.
        func response(contentType: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
            var headers = headers
            var status = 200
            if let range {
                status = 206
                headers.append(("content-range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"))
            }
            if let file { return HTTPResponse(status: status, contentType: contentType, file: file, headers: headers) }
            return HTTPResponse(status: status, contentType: contentType, body: bytes, headers: headers)
        }
    }

    let dataDir: String
    let store: CallStore
    /// Nil: no object storage (files are only on the node that made them).
    let objectStorage: ObjectStorageConfiguration?
    /// The most served from the bucket in one response (a larger file is fetched in ranges).
    static let maxObjectBytes = 256 << 20
    static let maxBucketReads = 4
    private static let bucketReads = Atomic<Int>(0)

    /// The bytes of `key` (relative to the data directory and the bucket's prefix), whole or
    /// the range `rangeSpec` asks for (`bytes=a-b`); `gone` words the 404.
    /// - Throws: `Unsatisfiable` for a range the file cannot give (answered 416); `ServerError`:
    ///   404 when it is nowhere, 503 while the file waits for its upload on another node, when the
    ///   bucket cannot be read (its code, never a credential) or this node's bucket reads are
    ///   all busy; 400 for a whole file beyond `maxObjectBytes` asked without a range.
    func read(_ key: String, rangeSpec: String?, gone: String) throws -> Served {
        let path = (dataDir as NSString).appendingPathComponent(key)
        if let served = try Self.fromDisk(path, rangeSpec: rangeSpec) { return served }
        guard let objectStorage else { throw ServerError(.notFound, gone) }
        let row: StoredObject?
        do { row = try store.storedObject(key: key) } catch { throw ServerError.databaseUnavailable }
        guard let row else { throw ServerError(.notFound, gone) }
        switch row.state {
        case .upload:
            throw ServerError(.unavailable, "The file is on node '\(row.nodeID ?? "?")' and not yet in object storage "
                              + "(\(row.attempts) failed attempts so far); try again shortly.")
        case .delete:
            throw ServerError(.notFound, gone)
        case .stored:
            return try fromBucket(key, size: Int(row.bytes ?? 0), rangeSpec: rangeSpec, objectStorage, gone: gone)
        }
    }

    /// This node's copy, whole or only the range asked for, to be read as it is sent; nil when
    /// this node has none it can read.
    private static func fromDisk(_ path: String, rangeSpec: String?) throws -> Served? {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? file.close() }
        guard let end = try? file.seekToEnd() else { return nil }
        let total = Int(end)
        guard let spec = rangeSpec else {
            return Served(bytes: [], file: HTTPResponse.FileBody(path: path, offset: 0, count: total), total: total, range: nil)
        }
        guard let range = RESTRouter.byteRange(spec, total: total) else { throw Unsatisfiable(total: total, spec: spec) }
        return Served(bytes: [], file: HTTPResponse.FileBody(path: path, offset: range.lowerBound, count: range.count),
                      total: total, range: range)
    }

    /// The media type of a recording's or transcript's file, by its name (uploads and downloads alike).
    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".opus") || name.hasSuffix(".ogg") { return "audio/ogg" }
        if name.hasSuffix(".webm") { return "video/webm" }
        if name.hasSuffix(".vtt") { return "text/vtt; charset=utf-8" }
        if name.hasSuffix(".json") { return "application/json" }
        return "application/octet-stream"
    }

    /// A range the file cannot give (answered 416 with its size).
    struct Unsatisfiable: Error {
        var total: Int
        var spec: String
    }

    private func fromBucket(_ key: String, size: Int, rangeSpec: String?, _ c: ObjectStorageConfiguration, gone: String) throws -> Served {
        var range: Range<Int>?
        if let spec = rangeSpec {
            guard let r = RESTRouter.byteRange(spec, total: size) else { throw Unsatisfiable(total: size, spec: spec) }
            // (At most `maxObjectBytes` in one answer: Content-Range says what came.)
            range = r.lowerBound..<min(r.upperBound, r.lowerBound + Self.maxObjectBytes)
        } else if size > Self.maxObjectBytes {
            throw ServerError.badRequest("The file is \(size) bytes: ask for it in ranges (Range: bytes=a-b) of at most \(Self.maxObjectBytes) bytes.")
        }
        guard Self.bucketReads.add(1, ordering: .acquiringAndReleasing).newValue <= Self.maxBucketReads else {
            Self.bucketReads.subtract(1, ordering: .acquiringAndReleasing)
            throw ServerError(.unavailable, "Too many downloads from object storage on this node now; try again shortly.")
        }
        defer { Self.bucketReads.subtract(1, ordering: .acquiringAndReleasing) }
        do throws(ObjectStorageError) {
            let client = try S3Client(c)
            if let range {
                let (bytes, total) = try client.get(key, range: range, limit: Self.maxObjectBytes)
                return Served(bytes: bytes, file: nil, total: total, range: range.lowerBound..<(range.lowerBound + bytes.count))
            }
            let bytes = try client.get(key, limit: Self.maxObjectBytes)
            return Served(bytes: bytes, file: nil, total: bytes.count, range: nil)
        } catch .refused(let status, let code, _) where status == 404 || code == "NoSuchKey" {
            throw ServerError(.notFound, gone)
        } catch {
            // (The store's code, not its message: nothing of the store's reply beyond that reaches a client.)
            let cause: String
            switch error {
            case .refused(let status, let code, _): cause = "\(status) \(code)"
            case .unreachable: cause = "unreachable"
            case .badReply, .file, .badKey: cause = "an answer it could not use"
            }
            throw ServerError(.unavailable, "The file is in object storage, which cannot be read now (\(cause)); try again shortly.")
        }
    }
}
