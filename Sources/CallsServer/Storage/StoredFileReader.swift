import CallsObjectStorage
import CallsStore
import CallsSupport
import CallsTransport
import Foundation
import Synchronization

/// A finished recording's or transcript's file, read where it is: this node's data directory
/// first, else the bucket (any node serves what any node uploaded), whole or a byte range, of
/// any size. A file on this node's disk is read as it is sent (a download holds one chunk of
/// it, `WebServer.bodyChunkBytes`); one in the bucket is streamed from the store as it is sent
/// (`BucketDownload`: at most `BucketDownload.bufferBytes` held), a range fetched as a range.
/// At most `maxBucketReads` bucket downloads run at once on this node, `maxBucketReadsPerUser`
/// of them one user's. A value; any thread.
struct StoredFileReader {
    /// What a read gives: where the body comes from, the file's whole size, and which range of
    /// it is sent (nil: whole).
    struct Served {
        enum Body {
            /// This node's copy: the part of the file to send.
            case file(HTTPResponse.FileBody)
            /// The bucket's, streamed.
            case bucket(BucketDownload)
            /// The bucket's, for a `HEAD`: its length alone (no download opened).
            case declared(Int)
        }
        var body: Body
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
            switch body {
            case .file(let file): return HTTPResponse(status: status, contentType: contentType, file: file, headers: headers)
            case .bucket(let download): return HTTPResponse(status: status, contentType: contentType, stream: download, headers: headers)
            case .declared(let count): return HTTPResponse(status: status, contentType: contentType, stream: DeclaredBody(count: count), headers: headers)
            }
        }
    }

    let dataDir: String
    let store: CallStore
    /// Nil: no object storage (files are only on the node that made them).
    let objectStorage: ObjectStorageConfiguration?
    /// Where a bucket download that fails mid-file is told (before the head, the client is told).
    var log: ServerLog?
    /// The least a bucket download's client takes while the store waits on it (slower: cut).
    var readerFloor: ReaderPace.Floor = .standard
    /// Downloads from the bucket at once on this node (each a thread and at most
    /// `BucketDownload.bufferBytes`); more are answered 503.
    static let maxBucketReads = 8
    /// Bucket downloads one user (an `authToken`'s) may run at once on this node; more are
    /// answered 429. The operator's key is held only to `maxBucketReads`.
    static let maxBucketReadsPerUser = 2
    /// The bucket downloads running on this node: in all, and per user.
    private struct Slots {
        var total = 0
        var byUser: [String: Int] = [:]
    }
    private static let slots = Mutex(Slots())
    /// Bucket downloads running now on this node (tests, and what the slot count is).
    static var bucketReadsNow: Int { slots.withLock { $0.total } }
    /// Bucket downloads started in this process (tests).
    static let bucketReadsStarted = Atomic<Int>(0)

    /// The bytes of `key` (relative to the data directory and the bucket's prefix), whole or
    /// the range `rangeSpec` asks for (`bytes=a-b`); `gone` words the 404. `user`: whose
    /// download it is (nil: the operator's).
    /// - Throws: `Unsatisfiable` for a range the file cannot give (answered 416); `ServerError`:
    ///   404 when it is nowhere, 503 while the file waits for its upload on another node, when the
    ///   bucket cannot be read (its code, never a credential) or this node's bucket reads are
    ///   all busy; 429 when `user` runs `maxBucketReadsPerUser` already.
    func read(_ key: String, rangeSpec: String?, gone: String, user: String? = nil, headOnly: Bool = false) throws -> Served {
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
            return try fromBucket(key, size: Int(row.bytes ?? 0), rangeSpec: rangeSpec, objectStorage, gone: gone, user: user, headOnly: headOnly)
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
            return Served(body: .file(HTTPResponse.FileBody(path: path, offset: 0, count: total)), total: total, range: nil)
        }
        guard let range = RESTRouter.byteRange(spec, total: total) else { throw Unsatisfiable(total: total, spec: spec) }
        return Served(body: .file(HTTPResponse.FileBody(path: path, offset: range.lowerBound, count: range.count)),
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

    /// Takes a download slot for `user` (nil: the operator), or says why not: the user's own
    /// are all running (429), or the node's are (503).
    private static func take(_ user: String?) -> ServerError? {
        slots.withLock { s in
            if let user, s.byUser[user, default: 0] >= maxBucketReadsPerUser {
                return ServerError(.rateLimited, "You have \(maxBucketReadsPerUser) downloads from object storage running on this node; "
                                   + "wait for one to finish.")
            }
            guard s.total < maxBucketReads else {
                return ServerError(.unavailable, "Too many downloads from object storage on this node now; try again shortly.")
            }
            s.total += 1
            if let user { s.byUser[user, default: 0] += 1 }
            return nil
        }
    }

    /// Gives back a slot `take` gave `user`.
    private static func release(_ user: String?) {
        slots.withLock { s in
            s.total -= 1
            guard let user else { return }
            let left = s.byUser[user, default: 1] - 1
            s.byUser[user] = left > 0 ? left : nil
        }
    }

    /// A range the file cannot give (answered 416 with its size).
    struct Unsatisfiable: Error {
        var total: Int
        var spec: String
    }

    private func fromBucket(_ key: String, size: Int, rangeSpec: String?, _ c: ObjectStorageConfiguration, gone: String,
                            user: String?, headOnly: Bool) throws -> Served {
        var range: Range<Int>?
        if let spec = rangeSpec {
            guard let r = RESTRouter.byteRange(spec, total: size) else { throw Unsatisfiable(total: size, spec: spec) }
            range = r
        }
        // A HEAD takes no slot and opens no download: the row knows the length.
        if headOnly { return Served(body: .declared(range?.count ?? size), total: size, range: range) }
        if let refusal = Self.take(user) { throw refusal }
        Self.bucketReadsStarted.add(1, ordering: .relaxed)
        do throws(ObjectStorageError) {
            // (The slots are the download's until its thread ends: sent, cut, or refused.)
            let count = range?.count ?? size
            let floor = readerFloor
            let download = try BucketDownload.open(c, key: key, range: range, count: count, floor: floor) { [log] end in
                Self.release(user)
                switch end {
                case .failed(let error, let received) where received > 0:
                    log?.warn("a download from object storage was cut mid-file", ["key": key, "bytes": "\(received) of \(count)", "error": error.description])
                case .tooSlow(let received, let took):
                    log?.info("a download from object storage was cut: its client reads too slowly",
                              ["key": key, "bytes": "\(received) of \(count)",
                               "took": "\(took) bytes in \(floor.seconds) s (the least is \(floor.bytes))"])
                default:
                    break
                }
            }
            return Served(body: .bucket(download), total: size, range: range)
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
