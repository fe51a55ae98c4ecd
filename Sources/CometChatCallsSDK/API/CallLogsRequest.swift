import CallsCore
import Foundation

/// Pages through the logged-in user's call log: `CallLogsRequest.CallLogsBuilder().set(limit: 20).build()`,
/// then `fetchNext` (older pages) and `fetchPrevious` (back toward the newest).
///
/// Thread rules: a request is used by one thread at a time; handlers run on the SDK callback queue.
public final class CallLogsRequest: @unchecked Sendable {
    /// Builds a `CallLogsRequest`. Every filter is optional.
    public final class CallLogsBuilder {
        var limit = 30
        var query: [String: String] = [:]

        public init() {}

        /// Page size, 1…100 (default 30; larger values are capped at 100).
        @discardableResult public func set(limit: Int) -> CallLogsBuilder { self.limit = max(1, min(100, limit)); return self }
        /// `.video` or `.voice` (logged as `audio`).
        @discardableResult public func set(callType: SessionType) -> CallLogsBuilder { query["type"] = callType == .video ? "video" : "audio"; return self }
        @discardableResult public func set(callStatus: CallStatus) -> CallLogsBuilder { query["status"] = callStatus.rawValue; return self }
        @discardableResult public func set(hasRecording: Bool) -> CallLogsBuilder { query["hasRecording"] = "\(hasRecording)"; return self }
        @discardableResult public func set(hasTranscriptions: Bool) -> CallLogsBuilder { query["hasTranscription"] = "\(hasTranscriptions)"; return self }
        /// `.meet` lists meetings (group receivers); `.call` 1:1 calls.
        @discardableResult public func set(callCategory: CallCategory) -> CallLogsBuilder {
            query["receiverType"] = callCategory == .call ? "user" : "group"
            return self
        }
        /// Only calls you placed (`.outgoing`: you joined first) or received (`.incoming`).
        @discardableResult public func set(callDirection: CallDirection) -> CallLogsBuilder { direction = callDirection; return self }
        /// Only calls this user also took part in.
        @discardableResult public func set(uid: String) -> CallLogsBuilder { query["uid"] = uid; return self }
        /// Only calls of this group (for meetings: this session id).
        @discardableResult public func set(guid: String) -> CallLogsBuilder { query["guid"] = guid; return self }

        var direction: CallDirection?

        public func build() -> CallLogsRequest { CallLogsRequest(limit: limit, query: query, direction: direction) }
    }

    let limit: Int
    let query: [String: String]
    let direction: CallDirection?
    private let lock = NSLock()
    private var page = 0

    init(limit: Int, query: [String: String], direction: CallDirection?) {
        self.limit = limit
        self.query = query
        self.direction = direction
    }

    /// The next (older) page; an empty array once past the end.
    public func fetchNext(onSuccess: @escaping ([CallLog]) -> Void, onError: @escaping (CometChatCallException?) -> Void) {
        let p = lock.withLock { () -> Int in page += 1; return page }
        fetch(page: p, onSuccess: onSuccess, onError: onError)
    }

    /// The previous (newer) page; an empty array before the first.
    public func fetchPrevious(onSuccess: @escaping ([CallLog]) -> Void, onError: @escaping (CometChatCallException?) -> Void) {
        let p = lock.withLock { () -> Int in page = max(0, page - 1); return page }
        guard p > 0 else {
            let box = UncheckedBox(onSuccess)
            return CometChatCalls.callbackQueue.async { box.value([]) }
        }
        fetch(page: p, onSuccess: onSuccess, onError: onError)
    }

    /// async form of `fetchNext`.
    public func fetchNext() async throws(CometChatCallException) -> [CallLog] {
        let p = lock.withLock { () -> Int in page += 1; return page }
        return try await load(page: p)
    }

    private func fetch(page p: Int, onSuccess: @escaping ([CallLog]) -> Void, onError: @escaping (CometChatCallException?) -> Void) {
        CometChatCalls.run(onSuccess: onSuccess, onError: { onError($0) }) { () async throws(CometChatCallException) in
            try await self.load(page: p)
        }
    }

    private func load(page p: Int) async throws(CometChatCallException) -> [CallLog] {
        let (c, _) = try CometChatCalls.requireClient()
        guard let user = c.user else {
            throw CometChatCallException(errorCode: CometChatCallException.notLoggedIn, errorDescription: "Log in to read your call log.")
        }
        var q = query
        q["page"] = "\(p)"
        q["perPage"] = "\(limit)"
        let qs = q.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? $0.value)" }
            .joined(separator: "&")
        let rest = RESTClient(baseURL: c.serverURL, appID: c.appID, trust: c.trust)
        let bodies = try await rest.call("GET", "/v3/calls?\(qs)", headers: ["authToken": user.authToken], as: [CallRecord].self)
        let logs = bodies.map { CallLog($0, viewer: user.uid) }
        guard let d = direction else { return logs }
        return logs.filter { $0.direction == d }
    }
}
