import CallsCore
import CallsRecording
import CallsSecurity
import CallsStore
import CallsTransport
import Foundation
import Synchronization

/// The server's recorder for one room: a `ServerMember`'s sink that writes each participant's
/// packets as they came (`OggOpusWriter`), and the mixed file when it stops.
///
/// ```
///  receive thread:  SRTP unprotect ─▶ per sender: OggOpusWriter (packets as they came)
///  at the end:      the participants' files ─▶ OggOpusMixdown (decode, mix, libopusenc) ─▶ mixed.opus
/// ```
/// Files go to `dir` (`{pid}.opus` while it records, `mixed.opus` made when it stops), 0600.
/// Live, it only writes packets (the mix after the call costs ≈ 1 s of CPU per minute of a
/// 10-person room, off the call's path); when it stops (a moderator, the room emptying, the
/// server stopping) every file is finished, the mix made, the row written, with
/// `recording_generated` for webhooks.
///
/// Thread rules: `received` on the member's receive thread, `finished` on the stopping thread
/// after it; state behind a lock.
package final class RoomRecorder: ServerMemberSink, @unchecked Sendable {
    package struct Config: Sendable {
        package var sessionId: String
        package var rid: String
        package var dir: String
        package var publicURL: String
        package init(sessionId: String, rid: String, dir: String, publicURL: String) {
            self.sessionId = sessionId
            self.rid = rid
            self.dir = dir
            self.publicURL = publicURL
        }
    }

    package let config: Config
    private let store: CallStore
    private let log: ServerLog
    private let outbox: WebhookOutbox

    private struct State {
        package var writers: [UInt32: OggOpusWriter] = [:]
        package var names: [UInt32: ServerMember.Speaker] = [:]
    }
    private let state = Locked(State())

    /// Creates the recording's directory.
    package init(config: Config, store: CallStore, log: ServerLog, outbox: WebhookOutbox) throws {
        self.config = config
        self.store = store
        self.log = log
        self.outbox = outbox
        try FileManager.default.createDirectory(atPath: config.dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// The packet as it came, into its sender's file (opened at its first packet).
    package func received(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from who: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure) {
        let error = state.withLock { s -> String? in
            if let who { s.names[h.ssrc] = who }
            if s.writers[h.ssrc] == nil {
                let name = who?.pid ?? String(h.ssrc, radix: 16)
                do {
                    s.writers[h.ssrc] = try OggOpusWriter(path: config.dir + "/\(name).opus", serial: Int32(bitPattern: h.ssrc),
                                                          tags: ["artist": who?.uid ?? "", "title": config.sessionId,
                                                                 OggOpusMixdown.offsetTag: "\(atMs)"])
                } catch { return "\(error)" }
            }
            do { try s.writers[h.ssrc]?.append(payload, timestamp: h.timestamp) } catch { return "\(error)" }
            return nil
        }
        if let error { throw ServerMemberFailure(reason: error) }
    }

    // MARK: The end

    package func finished(failure: String?) {
        let (writers, names) = state.withLock { s in
            let r = (s.writers, s.names)
            s.writers = [:]
            return r
        }
        for w in writers.values { try? w.finish() }
        // The mixed file, from the participants' (after the call, off its path). Without room
        // for it, the server makes it once there is (`CallServer.mixPendingRecordings`).
        var files: [StoredRecordingFile] = []
        if !writers.isEmpty {
            do throws(RecordingError) {
                if let f = try StoredRecordingFile.mix(writers.values.map(\.path).sorted(), inDirectory: config.dir) { files.append(f) }
            } catch {
                log.warn("recording mix deferred: it is made once the disk has room", ["rid": config.rid, "error": "\(error)"])
            }
        }
        for (ssrc, w) in writers {
            if let f = StoredRecordingFile.finalised(w.path, kind: "participant", uid: names[ssrc]?.uid, pid: names[ssrc]?.pid) { files.append(f) }
        }
        let now = epochMilliseconds()
        let duration = files.map(\.durationMs).max() ?? 0
        let rows = outbox.recordingRows(.init(sessionId: config.sessionId, rid: config.rid,
                                              recordingURL: Self.url(config.publicURL, config.sessionId, config.rid),
                                              startTime: now - duration, endTime: now, duration: Double(duration) / 1000), at: now)
        do { try store.recordingFinished(rid: config.rid, endedAt: now, files: files, outbox: rows) } catch {
            log.error("store failed on recording end", ["rid": config.rid, "error": error.description])
        }
        log.info("recording finished", ["session": config.sessionId, "rid": config.rid, "files": "\(files.count)",
                                        "seconds": "\(duration / 1000)", "error": failure ?? ""])
    }

    /// Where the mixed file is served.
    package static func url(_ publicURL: String, _ sessionId: String, _ rid: String) -> String {
        let s = sessionId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? sessionId
        return publicURL + "/v3/calls/\(s)/recordings/\(rid)"
    }
}

extension StoredRecordingFile {
    /// A recording's file once finished: finalised (`OggOpusFile.finalise`: an end marked if a
    /// crash left none), with its length and size. Nil when it is missing or not Ogg Opus.
    /// The room's mix made from the participants' files `tracks` into `dir/mixed.opus` and
    /// finalised (nil: nothing playable came of it). A mix that fails is removed — a
    /// part-written mix is never served — and the error thrown. Any thread.
    package static func mix(_ tracks: [String], inDirectory dir: String) throws(RecordingError) -> StoredRecordingFile? {
        let mixed = dir + "/mixed.opus"
        do { _ = try OggOpusMixdown.mix(tracks, into: mixed) } catch {
            try? FileManager.default.removeItem(atPath: mixed)
            throw error
        }
        return finalised(mixed, kind: "mixed", uid: nil, pid: nil)
    }

    package static func finalised(_ path: String, kind: String, uid: String?, pid: String?) -> StoredRecordingFile? {
        guard let s = try? OggOpusFile.finalise(path) else { return nil }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        return StoredRecordingFile(name: (path as NSString).lastPathComponent, kind: kind, uid: uid, pid: pid,
                                   durationMs: Int64(s.seconds * 1000), bytes: bytes)
    }
}
