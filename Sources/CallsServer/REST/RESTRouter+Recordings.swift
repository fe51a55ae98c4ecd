import CallsCaptions
import CallsCore
import CallsStore
import CallsTransport
import Foundation

// MARK: Recordings (`/v3/calls/{sessionId}/recordings/{rid}[/{pid}]`) and transcripts (`…/transcriptions/{tid}[.vtt|.json]`)
extension RESTRouter {
    /// The mixed recording (no `pid`) or one participant's, as `audio/ogg` — or their video and
    /// audio as `video/webm` (`{pid}.webm`) — to the operator
    /// (apikey) or a participant of the call (authToken); `Range: bytes=…` answered with 206.
    func recordingFile(_ r: HTTPRequest, sessionId: String, rid: String, pid: String?) throws -> HTTPResponse {
        try validate(sessionId: sessionId)
        let viewer = try callViewer(r)
        // The call it belongs to must be one the viewer was in (the operator sees every call),
        // and the recording must have run while they were there (moderators: any).
        let notFound = ServerError(.notFound, "No recording '\(rid.prefix(40))' of session '\(sessionId.prefix(80))'.")
        guard let (rec, call) = try store.recording(sessionId: sessionId, rid: rid) else { throw notFound }
        guard let access = CallAccess(viewer: viewer, call: call, now: epochMilliseconds()) else { throw notFound }
        guard access.covers(rec) else {
            throw ServerError(.forbidden, "You were not in the call while recording '\(rid.prefix(40))' ran; only a moderator or the operator may fetch it.")
        }
        // Only names the store holds: never a path from the request.
        let name = pid.map { $0.hasSuffix(".webm") ? $0 : "\($0).opus" } ?? "mixed.opus"
        guard rec.files.contains(where: { $0.name == name }) else {
            throw ServerError(.notFound, rec.endedAt == nil ? "The recording is still going; its files come when it stops."
                                                           : "No file '\(name.prefix(60))' in recording '\(rid.prefix(40))'.")
        }
        // This node's disk, else the bucket (any node serves what any node uploaded), a range as a range.
        var headers: [(name: String, value: String)] = [("accept-ranges", "bytes"),
                                                        ("content-disposition", "inline; filename=\"\(rid)-\(name)\"")]
        let served: StoredFileReader.Served
        do {
            served = try files.read(StoredObject.key(.recording, owner: rid, name: name), rangeSpec: Self.servedRange(r.header("range")),
                                    gone: "The file of recording '\(rid.prefix(40))' is gone (retention?).", user: viewer, headOnly: r.isHead)
        } catch let u as StoredFileReader.Unsatisfiable {
            headers.append(("content-range", "bytes */\(u.total)"))
            return HTTPResponse(status: 416, json: RESTErrorCode.badRequest.json("Range '\(u.spec.prefix(60))' is not satisfiable (\(u.total) bytes)."))
                .adding(headers)
        }
        return served.response(contentType: StoredFileReader.contentType(name), headers: headers)
    }

    /// A transcript: `{tid}` or `{tid}.json` (the JSON document), `{tid}.vtt` (WebVTT), to the
    /// operator or a participant of its call. A transcript still being made is served as far
    /// as it goes (the WebVTT file grows with each caption; the JSON is built from the lines).
    func transcriptFile(_ r: HTTPRequest, sessionId: String, name: String) throws -> HTTPResponse {
        try validate(sessionId: sessionId)
        let viewer = try callViewer(r)
        let isVTT = name.hasSuffix(".vtt")
        let tid = isVTT ? String(name.dropLast(4)) : name.hasSuffix(".json") ? String(name.dropLast(5)) : name
        guard tid.hasPrefix("tr_"), tid.count <= 40, tid.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
              let (t, callID) = try store.transcript(sessionId: sessionId, tid: tid) else {
            throw ServerError(.notFound, "No transcript '\(name.prefix(40))' of session '\(sessionId.prefix(80))'.")
        }
        if let viewer {
            guard let call = try store.call(id: callID), let access = CallAccess(viewer: viewer, call: call, now: epochMilliseconds()) else {
                throw ServerError(.notFound, "No transcript '\(name.prefix(40))' of session '\(sessionId.prefix(80))'.")
            }
            guard access.covers(t) else {
                throw ServerError(.forbidden, "You were not in the call while transcript '\(tid)' ran; only a moderator or the operator may fetch it.")
            }
        }
        let gone = "The transcript '\(tid)' is gone (retention?)."
        if isVTT {
            return try files.read(StoredObject.key(.transcript, owner: tid, name: "\(tid).vtt"), rangeSpec: nil, gone: gone, user: viewer, headOnly: r.isHead)
                .response(contentType: StoredFileReader.contentType("\(tid).vtt"))
        }
        if t.endTime > 0 {
            return try files.read(StoredObject.key(.transcript, owner: tid, name: "\(tid).json"), rangeSpec: nil, gone: gone, user: viewer, headOnly: r.isHead)
                .response(contentType: "application/json")
        }
        // Still being made: built from its lines, on the node that makes it.
        let lines = (config.dataDir as NSString).appendingPathComponent("transcripts/\(tid).jsonl")
        guard let body = (try? TranscriptWriter.document(linesPath: lines)).flatMap({ doc -> Data? in
            let enc = JSONEncoder()
            enc.outputFormatting = [.prettyPrinted, .sortedKeys]
            return try? enc.encode(doc)
        }) else {
            throw ServerError(.notFound, gone)
        }
        return HTTPResponse(status: 200, contentType: "application/json", body: [UInt8](body))
    }

    /// Finished files, from this node's disk or the bucket.
    var files: StoredFileReader { StoredFileReader(dataDir: config.dataDir, store: store, objectStorage: config.objectStorage, log: log) }

    /// The `Range` header this server serves a part for: one `bytes` range. Several ranges, or
    /// another unit, are ignored (the whole file, 200), as RFC 9110 §14.2 allows — never 416,
    /// which would say no part of them exists.
    static func servedRange(_ header: String?) -> String? {
        guard let h = header?.trimmingCharacters(in: .whitespaces), h.lowercased().hasPrefix("bytes="), !h.contains(",") else { return nil }
        return "bytes=" + h.dropFirst(6)
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n` (one range) within `total`; nil when not satisfiable.
    static func byteRange(_ spec: String, total: Int) -> Range<Int>? {
        let s = spec.trimmingCharacters(in: .whitespaces)
        guard s.hasPrefix("bytes="), !s.contains(","), total > 0 else { return nil }
        let parts = s.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let a = parts[0].trimmingCharacters(in: .whitespaces), b = parts[1].trimmingCharacters(in: .whitespaces)
        if a.isEmpty {
            guard let n = Int(b), n > 0 else { return nil }
            return max(0, total - n)..<total
        }
        guard let start = Int(a), start >= 0, start < total else { return nil }
        if b.isEmpty { return start..<total }
        guard let end = Int(b), end >= start else { return nil }
        return start..<min(total, end + 1)
    }
}

extension HTTPResponse {
    func adding(_ more: [(name: String, value: String)]) -> HTTPResponse {
        var r = self
        r.headers += more
        return r
    }
}
