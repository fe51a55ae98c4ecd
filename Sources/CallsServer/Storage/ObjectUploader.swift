import CallsDatabase
import CallsObjectStorage
import CallsStore
import CallsSupport
import Foundation
import Synchronization

/// Works through the store's queue of files bound for object storage (`stored_objects`):
/// uploads the finished recordings and transcripts this node holds (multipart for large
/// ones), deletes the objects of recordings past retention (any node), and retries each
/// failure with back-off. The queue is in the store, so an upload a crash or `kill -9` cut is
/// made again after the restart. Local files stay (the node serves its own from disk); the
/// bucket's copy is what other nodes serve and what outlives the node. A multipart upload a
/// crash cut stays in the bucket, parts and all, until aborted: at start and every 6 hours the
/// uploader aborts those under the prefix begun more than `abandonedAfter` ago (a day: no
/// upload of a recording takes that long), whichever node began them.
///
/// Thread rules: its turns run on the serial queue `callroom.objects` (every 2 s on the
/// scheduler: virtual in tests); `turn` may also be called from any thread (tests), and turns
/// never overlap (a lock); `start`/`stop` from the server's owner.
final class ObjectUploader: Sendable {
    /// What it has done since start (for `/metrics`).
    final class Counters: Sendable {
        let uploaded = Atomic<UInt64>(0)
        let uploadedBytes = Atomic<UInt64>(0)
        let deleted = Atomic<UInt64>(0)
        let failed = Atomic<UInt64>(0)
        let aborted = Atomic<UInt64>(0)
    }

    /// How old an incomplete multipart upload must be to be taken for abandoned.
    static let abandonedAfter: TimeInterval = 24 * 3600

    let configuration: ObjectStorageConfiguration
    let counters = Counters()
    private let store: CallStore
    private let dataDir: String
    private let nodeID: String?
    private let log: ServerLog
    private let scheduler: any Scheduler
    private let queue = DispatchQueue(label: "callroom.objects", qos: .utility)
    private let timers = Locked<[RepeatingWork]>([])
    /// Held for a whole turn: a test's turn and the timer's never overlap.
    private let turnLock = Mutex<Void>(())
    private let outage: StoreOutage

    /// - Parameter nodeID: this node's id in a cluster (rows it queued carry it); nil alone.
    init(configuration: ObjectStorageConfiguration, store: CallStore, dataDir: String, nodeID: String?, log: ServerLog,
         scheduler: any Scheduler = DispatchScheduler.shared) {
        self.configuration = configuration
        self.store = store
        self.dataDir = dataDir
        self.nodeID = nodeID
        self.log = log
        self.scheduler = scheduler
        outage = StoreOutage("object storage", log: log)
    }

    func start() {
        let work = [RepeatingWork(on: scheduler, queue: queue, first: 0.5, every: 2) { [weak self] in self?.turn() },
                    RepeatingWork(on: scheduler, queue: queue, first: 5, every: 6 * 3600) { [weak self] in self?.abortAbandonedUploads() }]
        timers.withLock { $0 = work }
    }

    func stop() {
        for t in timers.withLock({ t in defer { t = [] }; return t }) { t.cancel() }
    }

    /// Aborts the incomplete multipart uploads under the prefix begun before `now − olderThan`
    /// (ones whose start the store does not say are left); returns how many. Any thread.
    @discardableResult
    func abortAbandonedUploads(olderThan: TimeInterval = ObjectUploader.abandonedAfter, now: Date = Date()) -> Int {
        let uploads: [S3Client.IncompleteUpload]
        let client: S3Client
        do throws(ObjectStorageError) {
            client = try S3Client(configuration)
            uploads = Self.abandoned(try client.incompleteUploads(), olderThan: olderThan, now: now)
        } catch {
            log.warn("object storage: cannot list abandoned multipart uploads (tried again in 6 hours)", ["error": "\(error)"])
            return 0
        }
        var aborted = 0
        var failure: ObjectStorageError?
        for upload in uploads {
            // (One that cannot be aborted does not keep the others.)
            do throws(ObjectStorageError) {
                try client.abort(upload)
                aborted += 1
            } catch {
                failure = error
            }
        }
        if aborted > 0 {
            counters.aborted.add(UInt64(aborted), ordering: .relaxed)
            log.info("abandoned multipart uploads aborted", ["count": "\(aborted)"])
        }
        if let failure {
            log.warn("object storage: abandoned multipart uploads not aborted (tried again in 6 hours)",
                     ["count": "\(uploads.count - aborted)", "error": "\(failure)"])
        }
        return aborted
    }

    /// The uploads of `uploads` begun before `now − olderThan` (not those without a start).
    static func abandoned(_ uploads: [S3Client.IncompleteUpload], olderThan: TimeInterval, now: Date) -> [S3Client.IncompleteUpload] {
        uploads.filter { u in u.initiated.map { $0 < now.addingTimeInterval(-olderThan) } ?? false }
    }

    /// Before the server opens: stores and deletes a small object, so wrong credentials, a
    /// missing bucket or a refused write are said at start. Returns nil when the bucket took
    /// it, else what went wrong (no credential in it) and whether it may pass (the store
    /// unreachable or failing for now) or must not (refused).
    static func probe(_ configuration: ObjectStorageConfiguration, nodeID: String) -> (message: String, transient: Bool)? {
        do throws(ObjectStorageError) {
            let client = try S3Client(configuration, timeoutMs: 10_000)
            let name = String(nodeID.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "-" }.prefix(60))
            let key = "probe/callroomd-\(name)"
            try client.put(key, bytes: Array("callroomd probe\n".utf8), contentType: "text/plain")
            try client.delete(key)
            return nil
        } catch {
            return (error.description, error.isTransient)
        }
    }

    /// Uploads and deletions due now (at most 20); returns how many succeeded.
    @discardableResult
    func turn(now: Int64 = epochMilliseconds()) -> Int {
        turnLock.withLock { _ in
            guard let due = outage.attempt("objects due", { () throws(DatabaseError) in
                try store.dueObjects(now: now, nodeID: nodeID, limit: 20)
            }), !due.isEmpty else { return 0 }
            let client: S3Client
            do { client = try S3Client(configuration) } catch {
                log.error("object storage client cannot start", ["error": "\(error)"])
                return 0
            }
            var done = 0
            for object in due where work(object, client: client, now: now) { done += 1 }
            return done
        }
    }

    /// One row: true when it is done.
    private func work(_ object: StoredObject, client: S3Client, now: Int64) -> Bool {
        let path = (dataDir as NSString).appendingPathComponent(object.key)
        do throws(ObjectStorageError) {
            switch object.state {
            case .upload:
                let here = FileManager.default.fileExists(atPath: path)
                // Another node's file: its node uploads it (this one only if it has the file).
                if !here, let owner = object.nodeID, owner != nodeID { return false }
                guard here else { throw ObjectStorageError.file("\(object.key) is not in this node's data directory") }
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
                try client.upload(object.key, file: path, contentType: StoredFileReader.contentType(object.name))
                record { () throws(DatabaseError) in try store.objectStored(key: object.key, bytes: size, nodeID: nodeID, now: epochMilliseconds()) }
                counters.uploaded.add(1, ordering: .relaxed)
                counters.uploadedBytes.add(UInt64(max(0, size)), ordering: .relaxed)
                log.info("uploaded to object storage", ["key": object.key, "bytes": "\(size)", "attempts": "\(object.attempts + 1)"])
            case .delete:
                try client.delete(object.key)
                record { () throws(DatabaseError) in try store.objectDeleted(key: object.key) }
                counters.deleted.add(1, ordering: .relaxed)
                log.info("deleted from object storage", ["key": object.key])
            case .stored:
                return false
            }
            return true
        } catch {
            counters.failed.add(1, ordering: .relaxed)
            let delay = Self.retryDelay(afterAttempts: object.attempts + 1)
            record { () throws(DatabaseError) in
                try store.objectFailed(key: object.key, error: error.description, retryAt: now + delay)
            }
            let fields = ["key": object.key, "action": object.state.rawValue, "attempts": "\(object.attempts + 1)",
                          "retry_in_s": "\(delay / 1000)", "error": error.description]
            // A refusal (credentials, permissions, a missing bucket) is the operator's to mend: said
            // as an error when it is new for the key (its row keeps the last error); the same
            // refusal again, and passing trouble, as warnings.
            if !error.isTransient, object.lastError != StoredObject.errorText(error.description) {
                log.error("object storage refused a file; retrying with back-off until mended", fields)
            } else {
                log.warn("object storage attempt failed; retrying with back-off", fields)
            }
            return false
        }
    }

    private func record(_ body: () throws(DatabaseError) -> Void) {
        _ = outage.attempt("object storage bookkeeping", body)
    }

    /// 2 s after the first failure, doubling, at most 10 minutes.
    static func retryDelay(afterAttempts attempts: Int) -> Int64 {
        min(600_000, Int64(2000) << Int64(min(max(attempts - 1, 0), 9)))
    }
}
