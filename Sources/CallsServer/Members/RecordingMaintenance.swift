import CallsCaptions
import CallsCore
import CallsDatabase
import CallsRecording
import CallsStore
import Foundation

/// The recordings' upkeep while the server runs: deleting those — and transcripts — past their
/// retention (at start, then hourly, with `recordingRetentionDays`) and making the mixes a full
/// disk held back (every 30 s, once there is room). Store failures are `StoreOutage`'s: the step is
/// skipped and tried on the next turn.
///
/// Thread rules: the timers run on a utility queue (on the scheduler: virtual in tests); `sweep` and `mixPending` from any thread
/// (tests call them); `stop` from the server's owner.
final class RecordingMaintenance: Sendable {
    private let store: CallStore
    private let dataDir: String
    private let retentionDays: Int
    private let log: ServerLog
    private let outage: StoreOutage
    private let timers = Locked<[RepeatingWork]>([])
    private let scheduler: any Scheduler

    init(store: CallStore, dataDir: String, retentionDays: Int, log: ServerLog, scheduler: any Scheduler = DispatchScheduler.shared) {
        self.scheduler = scheduler
        self.store = store
        self.dataDir = dataDir
        self.retentionDays = retentionDays
        self.log = log
        outage = StoreOutage("recordings", log: log)
    }

    /// Starts the timers: mixes every 30 s (the first after 1 s), retention hourly (the first now).
    func start() {
        let queue = DispatchQueue.global(qos: .utility)
        var started = [RepeatingWork(on: scheduler, queue: queue, first: 1, every: 30) { [weak self] in self?.mixPending() }]
        if retentionDays > 0 {
            started.append(RepeatingWork(on: scheduler, queue: queue, first: 0, every: 3600) { [weak self] in self?.sweep() })
        }
        timers.withLock { $0 = started }
    }

    func stop() {
        for t in timers.withLock({ t in defer { t = [] }; return t }) { t.cancel() }
    }

    /// What a retention sweep deleted.
    struct Swept: Equatable {
        var recordings = 0
        var transcripts = 0
    }

    /// Deletes the recordings and transcripts that ended more than `retentionDays` before `now`
    /// (files and rows; their objects are queued for deletion from the bucket).
    @discardableResult
    func sweep(now: Int64 = epochMilliseconds()) -> Swept {
        guard retentionDays > 0 else { return Swept() }
        let before = now - Int64(retentionDays) * 86_400_000
        var swept = Swept()
        if let expired = outage.attempt("delete expired recordings", { () throws(DatabaseError) in
            try store.deleteRecordings(endedBefore: before)
        }) {
            for rid in expired {
                try? FileManager.default.removeItem(atPath: (dataDir as NSString).appendingPathComponent("recordings/\(rid)"))
            }
            if !expired.isEmpty { log.info("recordings past retention deleted", ["count": "\(expired.count)"]) }
            swept.recordings = expired.count
        }
        if let expired = outage.attempt("delete expired transcripts", { () throws(DatabaseError) in
            try store.deleteTranscripts(endedBefore: before)
        }) {
            let dir = (dataDir as NSString).appendingPathComponent("transcripts")
            for tid in expired {
                for suffix in TranscriptWriter.fileSuffixes { try? FileManager.default.removeItem(atPath: "\(dir)/\(tid)\(suffix)") }
            }
            if !expired.isEmpty { log.info("transcripts past retention deleted", ["count": "\(expired.count)"]) }
            swept.transcripts = expired.count
        }
        return swept
    }

    /// Recordings that stopped without their mix (the disk was full): the mix made now from the
    /// participants' files, where they are on this node, and added to the recording. A failure
    /// (still no room) leaves nothing behind and is tried again later. Returns how many were made.
    @discardableResult
    func mixPending() -> Int {
        guard let pending = outage.attempt("recordings without a mix", { () throws(DatabaseError) in
            try store.recordingsWithoutMix(limit: 20)
        }) else { return 0 }
        var made = 0
        for r in pending {
            let dir = (dataDir as NSString).appendingPathComponent("recordings/\(r.rid)")
            let tracks = r.tracks.map { dir + "/" + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
            guard !tracks.isEmpty else { continue }  // (another node's, or deleted)
            guard let f = try? StoredRecordingFile.mix(tracks, inDirectory: dir) else { continue }
            do {
                try store.recordingFileAdded(rid: r.rid, file: f)
                made += 1
                log.info("recording mix made after its stop", ["rid": r.rid, "seconds": "\(f.durationMs / 1000)"])
            } catch {
                log.error("store failed on a recording's late mix", ["rid": r.rid, "error": error.description])
            }
        }
        return made
    }

    /// Bytes the recordings take on disk.
    static func recordingBytes(dataDir: String) -> Int64 {
        let root = (dataDir as NSString).appendingPathComponent("recordings")
        guard let e = FileManager.default.enumerator(atPath: root) else { return 0 }
        var total: Int64 = 0
        while let name = e.nextObject() as? String {
            total += (try? FileManager.default.attributesOfItem(atPath: root + "/" + name)[.size] as? NSNumber)?.int64Value ?? 0
        }
        return total
    }
}
