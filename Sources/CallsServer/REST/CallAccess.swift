import CallsStore

/// What one viewer of a call may fetch of it (#34): the operator (API key) and the call's
/// moderators everything; any other participant only what overlaps their own presence — the
/// recordings and transcripts that ran while they were there, the chat sent meanwhile. A late
/// joiner gets nothing of what ended before they came. A value; any thread.
struct CallAccess: Sendable, Equatable {
    /// nil: everything; else the viewer's spans in the call (epoch ms; an open span ends `now`).
    let spans: [ClosedRange<Int64>]?

    /// The access of `viewer` (nil: the operator) to `call`, at `now` (epoch ms). Nil when the
    /// viewer was never in the call.
    init?(viewer: String?, call: StoredCall, now: Int64) {
        guard let viewer else {
            spans = nil
            return
        }
        let rows = call.participants.filter { $0.uid == viewer }
        // The parties of a ringing call see its log even if they never joined (a missed or
        // declined call): with no presence, no recordings, transcripts or chat.
        let party = call.initiator?.id == viewer || call.members.contains { $0.uid == viewer }
        guard !rows.isEmpty || party else { return nil }
        spans = rows.contains(where: \.moderated) ? nil : rows.map { $0.joinedAt...max($0.joinedAt, $0.leftAt ?? now) }
    }

    /// Whether something that ran from `start` to `end` (nil: still running) overlaps a span.
    func covers(start: Int64, end: Int64?) -> Bool {
        guard let spans else { return true }
        let finish = end ?? Int64.max
        return spans.contains { $0.lowerBound <= finish && start <= $0.upperBound }
    }

    /// Whether a recording ran while the viewer was there.
    func covers(_ r: StoredRecording) -> Bool { covers(start: r.startedAt, end: r.endedAt) }

    /// Whether a transcript ran while the viewer was there (an `endTime` of 0: still running).
    func covers(_ t: StoredTranscript) -> Bool { covers(start: t.startTime, end: t.endTime > 0 ? t.endTime : nil) }

    /// The call as this viewer may see it: recordings and transcripts outside their presence left out.
    func restrict(_ call: StoredCall) -> StoredCall {
        guard spans != nil else { return call }
        var c = call
        c.recordings = call.recordings.filter(covers)
        c.transcripts = call.transcripts.filter(covers)
        return c
    }
}
