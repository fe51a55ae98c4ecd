import CallsCore
import Foundation

/// A transcript of a call. Times are milliseconds since the epoch. A value; any thread.
public typealias Transcript = TranscriptRecord

extension TranscriptRecord {
    /// The transcript's date (its start), as documented.
    public var transcriptDate: Int64 { startTime }
    /// Where the transcript can be downloaded (same as `url`).
    public var transcriptUrl: String { url }
}

/// Pages through a session's transcripts: `TranscriptsRequest.TranscriptsBuilder().set(sessionId:).set(limit:).build()`.
/// Transcripts exist once the server transcribes; until then every page is empty (not an error).
/// Thread rules: one thread at a time; handlers run on the SDK callback queue.
public final class TranscriptsRequest: @unchecked Sendable {
    public final class TranscriptsBuilder {
        var sessionId = ""
        var limit = 30
        public init() {}
        @discardableResult public func set(sessionId: String) -> TranscriptsBuilder { self.sessionId = sessionId; return self }
        /// Page size, 1…1000 (default 30).
        @discardableResult public func set(limit: Int) -> TranscriptsBuilder { self.limit = max(1, min(1000, limit)); return self }
        public func build() -> TranscriptsRequest { TranscriptsRequest(sessionId: sessionId, limit: limit) }
    }

    let sessionId: String
    let limit: Int
    private let lock = NSLock()
    private var page = 0

    init(sessionId: String, limit: Int) {
        self.sessionId = sessionId
        self.limit = limit
    }

    public func fetchNext(onSuccess: @escaping ([Transcript]) -> Void, onError: @escaping (CometChatCallException?) -> Void) {
        CometChatCalls.run(onSuccess: onSuccess, onError: { onError($0) }) { () async throws(CometChatCallException) in
            try await self.fetchNext()
        }
    }

    /// async form of `fetchNext`.
    public func fetchNext() async throws(CometChatCallException) -> [Transcript] {
        let p = lock.withLock { () -> Int in page += 1; return page }
        let (c, _) = try CometChatCalls.requireClient()
        guard let user = c.user else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "Log in to read transcripts.")
        }
        guard !sessionId.isEmpty, let sid = sessionId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) else {
            throw CometChatCallException(errorCode: CometChatCallException.sessionIDError, errorDescription: "Set a session id.")
        }
        let rest = RESTClient(baseURL: c.serverURL, appID: c.appID, trust: c.trust)
        return try await rest.call("GET", "/v3/calls/\(sid)/transcriptions?page=\(p)&perPage=\(limit)",
                                   headers: ["authToken": user.authToken], as: [Transcript].self)
    }
}
