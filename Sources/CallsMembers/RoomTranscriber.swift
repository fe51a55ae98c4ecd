import CallsAudio
import CallsCaptions
import CallsCore
import CallsStore
import Foundation

/// The server's transcriber for one room: a `ServerMember`'s sink that decodes each speaker
/// (libopus), captions them (`SpeakerCaptioner`: SpeexDSP to 16 kHz, a recogniser leased from
/// the server's `RecognizerPool`), sends every partial and final caption to the server to
/// broadcast, and writes the transcript (`TranscriptWriter`: WebVTT and JSON lines as it goes,
/// the JSON document when it stops).
///
/// ```
///  receive thread: SRTP unprotect ─▶ per speaker: Opus decode ─▶ SpeakerCaptioner ─▶ caption ─▶ signalling ─▶ the room
///                                                                                 └▶ final  ─▶ {tid}.vtt, {tid}.jsonl
///  at the end:     {tid}.json, the row (end, URL, segments)
/// ```
/// Each speaker's time is their RTP clock (`RTPClockAnchor`), so captions keep the speech's
/// timing through the relay's batching and DTX gaps.
///
/// Thread rules: `received`/`tick` on the member's receive thread, `finished` on the stopping
/// thread after it; `member` is set once, before the member starts.
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
    private let writer: TranscriptWriter
    /// Captions the transcript's files refused (a full disk): said when it starts and when it
    /// ends (how many were not kept), not once a caption.
    private let writeOutage: OutageLog
    private let startedAt = epochMilliseconds()
    /// Set before the member starts (`attach`); captions go out through it.
    private weak var member: ServerMember?
    package func attach(_ member: ServerMember) { self.member = member }
    /// Recognition runs in `received`: a thread of its own.
    package let sharesReceiveThread = false

    private final class Speaker {
        package let who: ServerMember.Speaker
        package let decoder: OpusDecoder
        package let captioner: SpeakerCaptioner
        /// The speaker's RTP clock on the transcript's timeline.
        package var clock = RTPClockAnchor(toleranceMs: 3000)
        package var pcm = [Int16](repeating: 0, count: 5760)
        package var reportedFailures = 0
        package init(who: ServerMember.Speaker, decoder: OpusDecoder, captioner: SpeakerCaptioner) {
            self.who = who; self.decoder = decoder; self.captioner = captioner
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
        writer = try TranscriptWriter(dir: config.dir, tid: config.tid, sessionId: config.sessionId, language: config.language,
                                      engine: pool.engine.name, startedAt: startedAt)
    }

    package func received(_ h: RTPHeader, payload: UnsafeBufferPointer<UInt8>, from who: ServerMember.Speaker?, atMs: Int64) throws(ServerMemberFailure) {
        guard let s = try speaker(who, ssrc: h.ssrc) else { return }
        let t = s.clock.sample(of: h.timestamp, arrivedAtMs: atMs) / 48
        let n = s.pcm.withUnsafeMutableBufferPointer { s.decoder.decode(payload, into: $0) }
        guard n > 0 else { return }
        s.pcm.withUnsafeBufferPointer { s.captioner.frame(UnsafeBufferPointer(rebasing: $0[0..<n]), voice: h.audioLevel?.voiceActivity, atMs: t) }
        try checkFailures(s)
    }

    package func tick(nowMs: Int64) throws(ServerMemberFailure) {
        for s in speakers.values {
            s.captioner.tick(nowMs: nowMs)
            try checkFailures(s)
        }
    }

    package func finished(failure: String?) {
        let end = member?.nowMs() ?? 0
        for s in speakers.values { s.captioner.finish(nowMs: end) }
        let now = epochMilliseconds()
        let segments = writer.count
        let url = Self.path(config.sessionId, config.tid)
        let meta = Self.meta(config.language, pool.engine.name, segments, url)
        // The JSON document, then the row that says where it is: on a full disk (or a database
        // restarting) whatever is left of the two is done once there is room, every 5 s.
        let documentWritten = Locked(true)
        do { _ = try writer.finish() } catch { documentWritten.withLock { $0 = false } }
        let finishRest = { @Sendable [store, tid = config.tid, lines = writer.linesPath] () -> String? in
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
            let s = Speaker(who: who, decoder: decoder, captioner: captioner)
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
            try writer.append(seg)
            writeOutage.succeeded()
        } catch {
            writeOutage.failed(["error": "\(error)"])
        }
    }

    /// A recogniser failure is logged once; the captions go on for the other utterances.
    private func checkFailures(_ s: Speaker) throws(ServerMemberFailure) {
        let failures = s.captioner.failures
        guard failures.count > s.reportedFailures else { return }
        if s.reportedFailures == 0 { log.error("recogniser failed", ["tid": config.tid, "pid": s.who.pid, "error": failures.last ?? ""]) }
        s.reportedFailures = failures.count
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
