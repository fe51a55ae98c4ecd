import CallsSupport

/// A transcript of a call as the REST API carries it (`GET /v3/calls/{sessionId}/transcriptions`):
/// written by the server, read by the SDK's `TranscriptsRequest`. Times are ms since the epoch.
public struct TranscriptRecord: Codable, Sendable, Equatable {
    public var tid: String
    public var mid: String
    public var roomName: String
    public var startTime: Int64
    public var endTime: Int64
    public var url: String
    public var metaData: String?
    /// Where its files are kept (absent from servers before object storage: `local`).
    public var storage: FileStorage?

    public init(tid: String, mid: String, roomName: String, startTime: Int64, endTime: Int64, url: String, metaData: String?,
                storage: FileStorage? = nil) {
        self.tid = tid; self.mid = mid; self.roomName = roomName; self.startTime = startTime; self.endTime = endTime
        self.url = url; self.metaData = metaData
        self.storage = storage
    }
}
