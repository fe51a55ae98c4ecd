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
    private let retries: WriteRetries

    private struct State {
        package var writers: [UInt32: OggOpusWriter] = [:]
        package var names: [UInt32: ServerMember.Speaker] = [:]
        /// Each video sender's frames being put together, and their file.
        package var video: [UInt32: VideoTrack] = [:]
    }

    /// One participant's video: RTP back to VP8 frames, frames into `{pid}.ivf`.
    private struct VideoTrack {
        var who: ServerMember.Speaker
        var assembler = VP8FrameAssembler()
        var writer: VP8TrackWriter
        /// When a keyframe was last asked for (ms), so a sender is asked at most once a second.
        var askedAtMs: Int64 = -10_000
    }
    private weak var member: ServerMember?
    /// Most video senders recorded at once (each holds a file and a frame assembler).
    static let maxVideoTracks = 64
    private let state = Locked(State())

    /// Creates the recording's directory.
    /// `retries`: the server's, which stops a refused end row's retries when it stops.
    package init(config: Config, store: CallStore, log: ServerLog, outbox: WebhookOutbox, retries: WriteRetries) throws {
        self.config = config
        self.store = store
        self.log = log
        self.outbox = outbox
        self.retries = retries
        try FileManager.default.createDirectory(atPath: config.dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    package func attach(_ member: ServerMember) { self.member = member }

    /// The packet as it came, into its sender's file (opened at its first packet); video
    /// packets into their sender's frames.
    package func received(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from who: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure) {
        if h.payloadType == VP8Payload.payloadType { return try receivedVideo(h, payload: payload, from: who, atMs: atMs) }
        let failure = state.withLock { s -> ServerMemberFailure? in
            if let who { s.names[h.ssrc] = who }
            if s.writers[h.ssrc] == nil {
                let name = who?.pid ?? String(h.ssrc, radix: 16)
                do {
                    s.writers[h.ssrc] = try OggOpusWriter(path: config.dir + "/\(name).opus", serial: Int32(bitPattern: h.ssrc),
                                                          tags: ["artist": who?.uid ?? "", "title": config.sessionId,
                                                                 OggOpusMixdown.offsetTag: "\(atMs)"])
                } catch { return Self.failure(error) }
            }
            do { try s.writers[h.ssrc]?.append(payload, timestamp: h.timestamp) } catch { return Self.failure(error) }
            return nil
        }
        if let failure { throw failure }
    }

    /// A file that could not be written: the log has the error (its path); the room hears the
    /// disk's state, not the server's paths.
    static func failure(_ error: any Error) -> ServerMemberFailure {
        let diskFull = (error as? RecordingError)?.isDiskFull == true
        return ServerMemberFailure(reason: "\(error)", told: diskFull ? "the server's disk is full" : "the server could not write the recording")
    }

    private func receivedVideo(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from who: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure) {
        guard let who else { return }  // (not in the roster yet: its frames come again)
        enum Outcome { case fine, ask(String), failed(ServerMemberFailure) }
        let outcome = state.withLock { s -> Outcome in
            if s.video[h.ssrc] == nil {
                guard s.video.count < Self.maxVideoTracks else { return .fine }
                s.video[h.ssrc] = VideoTrack(who: who, writer: VP8TrackWriter(path: config.dir + "/\(who.pid).ivf"))
            }
            // (Taken out while it is worked on: the assembler's buffers are not copied per packet.)
            guard var track = s.video.removeValue(forKey: h.ssrc) else { return .fine }
            defer { s.video[h.ssrc] = track }
            var needKeyframe = false
            switch track.assembler.insert(sequence: h.sequenceNumber, timestamp: h.timestamp, marker: h.marker, payload: UnsafeRawBufferPointer(payload)) {
            case .pending: break
            case .needKeyframe: needKeyframe = true
            case .frame(let f):
                do { needKeyframe = !(try track.writer.append(f.data, isKeyframe: f.isKeyframe, atMs: atMs, rtpTimestamp: f.timestamp)) } catch { return .failed(Self.failure(error)) }
            }
            guard needKeyframe, atMs - track.askedAtMs >= 1000 else { return .fine }
            track.askedAtMs = atMs
            return .ask(track.who.pid)
        }
        switch outcome {
        case .fine: return
        case .ask(let pid): member?.send(.requestKeyframe(pid: pid))
        case .failed(let failure): throw failure
        }
    }

    // MARK: The end

    package func finished(failure: String?) {
        let (writers, names, video) = state.withLock { s in
            let r = (s.writers, s.names, s.video)
            s.writers = [:]
            s.video = [:]
            return r
        }
        for w in writers.values { try? w.finish() }
        for v in video.values { try? v.writer.finish() }
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
        files += videoFiles(video.values.map { ($0.who, $0.writer) }, audio: writers.map { (names[$0.key]?.pid, $0.value.path) })
        let now = epochMilliseconds()
        let duration = files.map(\.durationMs).max() ?? 0
        let rows = outbox.recordingRows(.init(sessionId: config.sessionId, rid: config.rid,
                                              recordingURL: Self.url(config.publicURL, config.sessionId, config.rid),
                                              startTime: now - duration, endTime: now, duration: Double(duration) / 1000), at: now)
        do { try store.recordingFinished(rid: config.rid, endedAt: now, files: files, outbox: rows) } catch {
            // (A full disk, a database restarting: the row is written once the store takes it.)
            log.error("store failed on recording end; trying again every 5 s", ["rid": config.rid, "error": error.description])
            retries.start(WriteRetry("recording end", fields: ["rid": config.rid], log: log) { [store, rid = config.rid, files] in
                do { try store.recordingFinished(rid: rid, endedAt: now, files: files, outbox: rows) } catch { return "\(error)" }
                return nil
            })
        }
        log.info("recording finished", ["session": config.sessionId, "rid": config.rid, "files": "\(files.count)",
                                        "seconds": "\(duration / 1000)", "error": failure ?? ""])
    }

    /// Each video sender's WebM: their VP8 beside their audio (`WebMMuxer`; the video alone for
    /// a sender with no audio file — muted throughout), the IVF removed. No keyframe: no WebM.
    private func videoFiles(_ tracks: [(who: ServerMember.Speaker, writer: VP8TrackWriter)], audio: [(pid: String?, path: String)]) -> [StoredRecordingFile] {
        tracks.compactMap { who, writer in
            guard writer.frames > 0 else {
                StoredRecordingFile.removeVideoTrack(writer.path)
                return nil
            }
            let a = audio.first(where: { $0.pid == who.pid })?.path
            return StoredRecordingFile.webm(pid: who.pid, uid: who.uid, audio: a, video: writer.path, inDirectory: config.dir, log: log)
        }
    }

    /// Where the mixed file is served.
    package static func url(_ publicURL: String, _ sessionId: String, _ rid: String) -> String {
        let s = sessionId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? sessionId
        return publicURL + "/v3/calls/\(s)/recordings/\(rid)"
    }
}

extension StoredRecordingFile {
    /// Participant `pid`'s WebM from their audio file (nil or missing: the video alone) and
    /// video track (the track and its start mark removed after, made or not): nil when it cannot
    /// be made (said in the log). Any thread.
    package static func webm(pid: String, uid: String?, audio: String?, video: String, inDirectory dir: String, log: ServerLog) -> StoredRecordingFile? {
        defer { removeVideoTrack(video) }
        guard let videoStart = VP8TrackWriter.startMs(of: video) else { return nil }
        let sound = audio.flatMap { a in OggOpusMixdown.startOffsetMs(a).map { WebMMuxer.Track(a, startMs: $0) } }
        let output = dir + "/\(pid).webm"
        do throws(RecordingError) {
            try WebMMuxer.mux(audio: sound, video: WebMMuxer.Track(video, startMs: videoStart), into: output)
        } catch {
            log.warn("a participant's video could not be put into WebM", ["dir": dir, "pid": pid, "error": "\(error)"])
            return nil
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? NSNumber)?.int64Value ?? 0
        // (The file's length: ffprobe's, from its last packet.)
        let audioMs = sound.flatMap { try? OggOpusFile.inspect($0.path).seconds }.map { Int64($0 * 1000) }
        let durationMs = WebMMuxer.durationMs(output) ?? audioMs ?? 0
        var f = StoredRecordingFile(name: "\(pid).webm", kind: "participant", uid: uid, pid: pid, durationMs: durationMs, bytes: bytes)
        f.video = true
        return f
    }

    package static func removeVideoTrack(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: path + ".start")
    }

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
