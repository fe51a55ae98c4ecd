import CallsCaptions
import CallsCore
import CallsDatabase
import CallsMembers
import CallsRecording
import CallsStore
import Foundation

/// What a start does about the last run's unclean end, before anything serves: refuses a data
/// directory whose database was lost beside old keys, and finishes what a crash cut — transcripts
/// (the JSON document from the lines written so far), recordings (each file's last page marked as
/// the end, the mix made) — so their rows are complete. (Open calls are closed by the store:
/// `closeInterruptedCalls`, for this node or, in a cluster, the nodes that are gone.)
///
/// Thread rules: the server's start, before any thread of its own runs.
enum CrashRecovery {
    /// Keys from an earlier start, and a database file that is empty or has no schema: the
    /// data was lost or replaced (a truncated copy, a wrong file). Starting would make a new
    /// empty store under the old keys; refused instead. (No file at all is a fresh store.)
    static func checkDatabaseBesideKeys(_ path: String) throws(ServerStartError) {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: path) else { return }
        let size = (attrs[.size] as? NSNumber)?.intValue ?? 0
        let remedy = "restore the database from a backup, or move keys.json and the database away to start afresh"
        guard size > 0 else { throw .database("the database \(path) is empty (0 bytes) but keys.json is from an earlier start: \(remedy)") }
        let hasSchema: Bool
        do {
            let db = try SQLiteDatabase(path: path, readOnly: true)
            hasSchema = try !db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('schema_version', 'users')").isEmpty
        } catch {
            throw .database("the database \(path) cannot be read (\(error)) but keys.json is from an earlier start: \(remedy)")
        }
        guard hasSchema else { throw .database("the database \(path) has no CallRoom schema but keys.json is from an earlier start: \(remedy)") }
    }


    /// Transcripts a crash cut: the JSON document written from the lines (every caption up to
    /// the last), the row finished.
    static func finaliseInterruptedTranscripts(_ store: CallStore, dataDir: String, log: ServerLog, onlyLocal: Bool = false) throws(DatabaseError) {
        let open = try store.unfinishedTranscripts()
        for t in open {
            let lines = (dataDir as NSString).appendingPathComponent("transcripts/\(t.tid).jsonl")
            // (Another node's transcript, perhaps running now: not this node's to finish.)
            if onlyLocal && !FileManager.default.fileExists(atPath: lines) { continue }
            let doc = try? TranscriptWriter.finalise(linesPath: lines)
            let segments = doc?.segments ?? []
            let ended = t.startedAt + Int64(((segments.map(\.end).max() ?? 0) * 1000).rounded())
            let url = RoomTranscriber.path(t.sessionId, t.tid)
            try store.transcriptionFinished(tid: t.tid, endedAt: max(ended, t.startedAt + 1), url: url,
                                             meta: RoomTranscriber.meta(doc?.language ?? "en-US", doc?.engine ?? "pocketsphinx", segments.count, url))
            log.warn("finalised a transcript an unclean shutdown cut", ["tid": t.tid, "segments": "\(segments.count)"])
        }
    }

    /// Recordings a crash cut: every file's last page marked as the end (a torn page dropped),
    /// each video track put into its WebM, and the row finished with what the files hold.
    /// Returns their sessions (a recording starts again in each when its people come back).
    @discardableResult
    static func finaliseInterruptedRecordings(_ store: CallStore, dataDir: String, log: ServerLog,
                                              onlyLocal: Bool = false) throws(DatabaseError) -> [String] {
        let open = try store.unfinishedRecordings()
        var sessions: [String] = []
        for r in open {
            let dir = (dataDir as NSString).appendingPathComponent("recordings/\(r.rid)")
            // (Another node's recording, perhaps running now: not this node's to finish.)
            if onlyLocal && !FileManager.default.fileExists(atPath: dir) { continue }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            var files: [StoredRecordingFile] = []
            // The mix is made when a recording stops: a cut one gets it now, from its participants' files.
            let tracks = names.filter { $0.hasSuffix(".opus") && $0 != "mixed.opus" }.sorted()
            for t in tracks {
                if let f = StoredRecordingFile.finalised(dir + "/" + t, kind: "participant", uid: nil, pid: String(t.dropLast(5))) { files.append(f) }
            }
            let mixed = names.contains("mixed.opus") ? StoredRecordingFile.finalised(dir + "/mixed.opus", kind: "mixed", uid: nil, pid: nil)
                : files.isEmpty ? nil : try? StoredRecordingFile.mix(tracks.map { dir + "/" + $0 }, inDirectory: dir)
            if let f = mixed { files.insert(f, at: 0) }
            // Video tracks: each beside its audio (if any) into a WebM (from the start mark next to it).
            for v in names.filter({ $0.hasSuffix(".ivf") }).sorted() {
                let pid = String(v.dropLast(4))
                let audio = names.contains("\(pid).opus") ? dir + "/\(pid).opus" : nil
                if let f = StoredRecordingFile.webm(pid: pid, uid: nil, audio: audio, video: dir + "/" + v, inDirectory: dir, log: log) {
                    files.append(f)
                }
            }
            let ended = r.startedAt + (files.map(\.durationMs).max() ?? 0)
            try store.recordingFinished(rid: r.rid, endedAt: ended, files: files)
            log.warn("finalised a recording an unclean shutdown cut", ["rid": r.rid, "files": "\(files.count)"])
            if !r.sessionId.isEmpty { sessions.append(r.sessionId) }
        }
        return sessions
    }
}
