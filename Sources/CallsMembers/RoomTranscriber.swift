import CallsAudio
import CallsCaptions
import CallsCore
import CallsStore
import Foundation
import Synchronization

/// The server's transcriber for one room: a `ServerMember`'s sink that decodes each speaker
/// (libopus), captions them (`SpeakerCaptioner`: SpeexDSP to 16 kHz, a recogniser leased from
/// the server's `RecognizerPool`), sends every partial and final caption to the server to
/// broadcast, and writes the transcript (`TranscriptWriter`: WebVTT and JSON lines as it goes,
/// the JSON document when it stops).
///
/// ```
///  receive thread: SRTP unprotect ─▶ per speaker: Opus decode ─▶ ┆ the speaker's queue: SpeakerCaptioner ─▶ caption ─▶ signalling ─▶ the room
///                                                                ┆                                        └▶ final  ─▶ {tid}.vtt, {tid}.jsonl
///  at the end:     every speaker's queue finishes, then {tid}.json, the row (end, URL, segments)
/// ```
/// Each speaker's time is their RTP clock (`RTPClockAnchor`), so captions keep the speech's
/// timing through the relay's batching and DTX gaps. Each speaker is captioned on a serial queue
/// of their own: a final pass waits for its recogniser there (0.5 s, seconds on a busy machine),
/// and holds back neither the other speakers' captions nor the receive thread. What waits on a
/// queue is bounded (`maxQueuedSamples`: past it a speaker's frames are dropped, said when it
/// starts and when the queue has room again).
///
/// Thread rules: `received`/`tick` on the member's receive thread (each speaker's captioner then
/// on that speaker's queue), `finished` on the stopping thread after it; `member` is set once,
/// before the member starts. The transcript's writer is shared by the queues (a lock).
package final class RoomTranscriber: ServerMemberSink, @unchecked Sendable {
    package struct Config: Sendable {
        package var sessionId: String
        package var tid: String
        package var language: String
        package var dir: String
        package init(sessionId: String, tid: String, language: String, dir: String) {
            self.sessionId = sessionId
            self.tid = tid
            self.language = language
            self.dir = dir
        }
    }

    package let config: Config
    private let pool: RecognizerPool
    private let store: CallStore
    private let log: ServerLog
    private let retries: WriteRetries
    private let writer: Locked<TranscriptWriter>
    /// Captions the transcript's files refused (a full disk): said when it starts and when it
    /// ends (how many were not kept), not once a caption.
    private let writeOutage: OutageLog
    private let startedAt = epochMilliseconds()
    /// Set before the member starts (`attach`); captions go out through it.
    private weak var member: ServerMember?
    package func attach(_ member: ServerMember) { self.member = member }
    /// A thread of its own: every speaker's Opus is decoded in `received` (recognition waits on
    /// the speakers' lanes, not there).
    package let sharesReceiveThread = false

    /// Decoded audio a speaker's queue may hold before their frames are dropped: 10 s at
    /// 48 kHz (960 kB) — recognition that far behind is a machine out of CPU.
    static let maxQueuedSamples = 48_000 * 10

    /// One speaker as the receive thread keeps them (decoder, clock, buffer) and their lane.
    private final class Speaker {
        let decoder: OpusDecoder
        /// The speaker's RTP clock on the transcript's timeline.
        var clock = RTPClockAnchor(toleranceMs: 3000)
        var pcm = [Int16](repeating: 0, count: 5760)
        /// The last frame was dropped (the lane held `maxQueuedSamples`): the next one it has room
        /// for ends `behind`'s outage. (`behind` counts the frames; this spares its lock a frame.)
        var dropping = false
        /// Said when the lane starts dropping and when it has room again (frames dropped, how long).
        let behind: OutageLog
        let lane: CaptionLane
        init(decoder: OpusDecoder, lane: CaptionLane, behind: OutageLog) { self.decoder = decoder; self.lane = lane; self.behind = behind }
    }

    /// Where one speaker is captioned: a serial queue, and the captioner only it touches (in a
    /// `Mutex` that is never contended, so the compiler checks it is not shared some other way).
    private final class CaptionLane: Sendable {
        struct Captioning: ~Copyable {
            var captioner: SpeakerCaptioner
            var reportedFailures = 0
        }
        let who: ServerMember.Speaker
        let queue = DispatchQueue(label: "callroom.transcriber.speaker")
        let captioning: Mutex<Captioning>
        /// Samples handed to `queue` and not yet captioned.
        let queued = Atomic<Int>(0)
        /// A tick waits on `queue` (another is not added).
        let tickQueued = Atomic<Bool>(false)
        init(who: ServerMember.Speaker, captioner: sending SpeakerCaptioner) {
            self.who = who
            captioning = Mutex(Captioning(captioner: captioner))
        }
    }
    /// Confined to the receive thread (then to the stopping thread, after it ended).
    private var speakers: [UInt32: Speaker] = [:]

    /// `retries`: the server's, which stops a refused end's retries when it stops.
    package init(config: Config, pool: RecognizerPool, store: CallStore, log: ServerLog, retries: WriteRetries) throws {
        self.config = config
        self.pool = pool
        self.store = store
        self.log = log
        self.retries = retries
        writeOutage = OutageLog(log, started: "transcript writes failed: captions are not kept in it until they work again",
                                ended: "transcript writes work again", fields: ["tid": config.tid])
        try FileManager.default.createDirectory(atPath: config.dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        writer = Locked(try TranscriptWriter(dir: config.dir, tid: config.tid, sessionId: config.sessionId, language: config.language,
                                             engine: pool.engine.name, startedAt: startedAt))
    }

    package func received(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from who: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure) {
        guard let s = try speaker(who, ssrc: h.ssrc) else { return }
        let t = s.clock.sample(of: h.timestamp, arrivedAtMs: atMs) / 48
        let n = s.pcm.withUnsafeMutableBufferPointer { s.decoder.decode(payload, into: $0) }
        guard n > 0 else { return }
        let lane = s.lane
        guard lane.queued.load(ordering: .relaxed) + n <= Self.maxQueuedSamples else {
            s.dropping = true
            s.behind.failed()
            return
        }
        if s.dropping {
            s.dropping = false
            s.behind.succeeded()
        }
        lane.queued.add(n, ordering: .relaxed)
        let frame = Array(s.pcm[0..<n]), voice = h.audioLevel?.voiceActivity
        lane.queue.async { [self] in
            lane.captioning.withLock { c in
                frame.withUnsafeBufferPointer { c.captioner.frame($0, voice: voice, atMs: t) }
                reportFailures(&c, lane.who)
            }
            lane.queued.subtract(n, ordering: .relaxed)
        }
    }

    package func tick(nowMs: Int64) throws(ServerMemberFailure) {
        for s in speakers.values where !s.lane.tickQueued.exchange(true, ordering: .acquiringAndReleasing) {
            let lane = s.lane
            lane.queue.async { [self] in
                lane.tickQueued.store(false, ordering: .releasing)
                lane.captioning.withLock { c in
                    c.captioner.tick(nowMs: nowMs)
                    reportFailures(&c, lane.who)
                }
            }
        }
    }

    package func finished(failure: String?) {
        let end = member?.nowMs() ?? 0
        // Every speaker's open utterance made final at once, each on its own queue (after what
        // waits there).
        let done = DispatchGroup()
        for lane in speakers.values.map(\.lane) {
            lane.queue.async(group: done) { lane.captioning.withLock { $0.captioner.finish(nowMs: end) } }
        }
        done.wait()
        let now = epochMilliseconds()
        let segments = writer.withLock { $0.count }
        let url = Self.path(config.sessionId, config.tid)
        let meta = Self.meta(config.language, pool.engine.name, segments, url)
        // The JSON document, then the row that says where it is: on a full disk (or a database
        // restarting) whatever is left of the two is done once there is room, every 5 s.
        let documentWritten = Locked(true)
        do { _ = try writer.withLock { (w) throws(CaptionError) in try w.finish() } } catch { documentWritten.withLock { $0 = false } }
        let finishRest = { @Sendable [store, tid = config.tid, lines = writer.withLock { $0.linesPath }] () -> String? in
            if !documentWritten.withLock({ $0 }) {
                do { try TranscriptWriter.finalise(linesPath: lines) } catch { return "\(error)" }
                documentWritten.withLock { $0 = true }
            }
            do { try store.transcriptionFinished(tid: tid, endedAt: now, url: url, meta: meta) } catch { return "\(error)" }
            return nil
        }
        if let why = finishRest() {
            log.error("the transcript's end (its document, its row) could not be written; trying again every 5 s", ["tid": config.tid, "error": why])
            retries.start(WriteRetry("transcription end", fields: ["tid": config.tid], log: log, attempt: finishRest))
        }
        log.info("transcription finished", ["session": config.sessionId, "tid": config.tid, "segments": "\(segments)", "error": failure ?? ""])
    }

    // MARK: Pieces

    private func speaker(_ who: ServerMember.Speaker?, ssrc: UInt32) throws(ServerMemberFailure) -> Speaker? {
        if let s = speakers[ssrc] { return s }
        guard let who else { return nil }  // not in the roster yet: its name comes with its join
        let tid = config.tid
        do {
            let decoder = try OpusDecoder()
            let captioner = try SpeakerCaptioner(language: config.language, pool: pool, timing: CaptionTiming(for: pool.engine.name)) { [weak self] c in
                self?.caption(c, who, tid)
            }
            let behind = OutageLog(log, started: "captions fell 10 s behind a speaker: their audio is dropped until they catch up",
                                   ended: "captions caught up with a speaker", fields: ["tid": tid, "pid": who.pid])
            let s = Speaker(decoder: decoder, lane: CaptionLane(who: who, captioner: captioner), behind: behind)
            speakers[ssrc] = s
            return s
        } catch {
            throw ServerMemberFailure(reason: "cannot caption \(who.pid): \(error)")
        }
    }

    private func caption(_ c: CaptionSegment, _ who: ServerMember.Speaker, _ tid: String) {
        member?.send(.caption(WireCaption(tid: tid, pid: who.pid, uid: who.uid, name: who.name, id: c.id, text: c.text,
                                          final: c.isFinal, start: c.startMs, end: c.endMs)))
        guard c.isFinal, !c.text.isEmpty else { return }
        let seg = TranscriptSegment(speaker: .init(uid: who.uid, pid: who.pid, name: who.name),
                                    start: Double(c.startMs) / 1000, end: Double(c.endMs) / 1000, text: c.text)
        do {
            try writer.withLock { (w) throws(CaptionError) in try w.append(seg) }
            writeOutage.succeeded()
        } catch {
            writeOutage.failed(["error": "\(error)"])
        }
    }

    /// A recogniser failure is logged once; the captions go on for the other utterances. On the
    /// speaker's queue.
    private func reportFailures(_ c: inout CaptionLane.Captioning, _ who: ServerMember.Speaker) {
        let failures = c.captioner.failures
        guard failures.count > c.reportedFailures else { return }
        if c.reportedFailures == 0 { log.error("recogniser failed", ["tid": config.tid, "pid": who.pid, "error": failures.last ?? ""]) }
        c.reportedFailures = failures.count
    }

    /// Where the transcript is served (its JSON; `.vtt` for WebVTT), under the server's URL:
    /// stored as this path, answered with the public URL in front (`StoredTranscript.served`).
    package static func path(_ sessionId: String, _ tid: String) -> String {
        let s = sessionId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? sessionId
        return "/v3/calls/\(s)/transcriptions/\(tid)"
    }

    /// The row's `metaData`: language, engine, segment count and the WebVTT URL.
    package static func meta(_ language: String, _ engine: String, _ segments: Int, _ path: String) -> String {
        struct Meta: Encodable { var language: String; var engine: String; var segments: Int; var vtt: String }
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: enc.encode(Meta(language: language, engine: engine, segments: segments, vtt: path + ".vtt")), as: UTF8.self)) ?? "{}"
    }
}

extension StoredTranscript {
    /// As REST answers it: `url` with the server's public URL in front (the row keeps the path,
    /// so a changed address or port never leaves stale links).
    package func served(_ publicURL: String) -> StoredTranscript {
        var t = self
        if t.url.hasPrefix("/") { t.url = publicURL + t.url }
        return t
    }
}
