import CallsCore
import Foundation

/// One admin or moderator action: who did what to whom, and what came of it.
struct AuditEntry: Sendable, Equatable {
    /// `operator` (the API key) or `uid:…` (a moderator), with the peer address for REST.
    var actor: String
    /// `DELETE /v3/users/{uid}` (the path with tokens redacted) or a moderation (`mute`, `remove`, …).
    var action: String
    /// The session, user or participant acted on (empty when the action names it).
    var target: String
    /// The HTTP status, `ok`, or the refusal's code.
    var result: String
}

/// The audit log (#34): every admin and moderator action as a JSON line in its own file
/// (`DATA/audit.jsonl`, 0600, never a token or key), beside the server's log. At 64 MiB the
/// file moves to `audit.jsonl.1` (one generation kept), so it is bounded on disk.
///
/// Thread rules: any thread (appends are serialised by a lock).
final class AuditLog: Sendable {
    let path: String
    let maxBytes: Int
    private let state: Locked<(handle: FileHandle?, bytes: Int)>

    init?(path: String, maxBytes: Int = 64 << 20) {
        guard PrivateFiles.create(path), let handle = FileHandle(forWritingAtPath: path) else { return nil }
        self.path = path
        self.maxBytes = maxBytes
        let size = Int((try? handle.seekToEnd()) ?? 0)
        state = Locked((handle, size))
    }

    /// Appends `e`; false when the line could not be written (it is lost, the server goes on).
    @discardableResult
    func record(_ e: AuditEntry, at now: Int64 = epochMilliseconds()) -> Bool {
        let line = "{\"at\":\(now),\"actor\":\(JSONText.quote(e.actor)),\"action\":\(JSONText.quote(e.action)),"
            + "\"target\":\(JSONText.quote(e.target)),\"result\":\(JSONText.quote(e.result))}\n"
        let bytes = Data(line.utf8)
        return state.withLock { s in
            if s.bytes + bytes.count > maxBytes { rotate(&s) }
            // A full disk (or any failed write) loses the line, never the server:
            // `FileHandle.write(_: Data)` traps there.
            guard let handle = s.handle, (try? handle.write(contentsOf: bytes)) != nil else { return false }
            s.bytes += bytes.count
            return true
        }
    }

    private func rotate(_ s: inout (handle: FileHandle?, bytes: Int)) {
        try? s.handle?.close()
        _ = rename(path, path + ".1")
        s = (PrivateFiles.create(path) ? FileHandle(forWritingAtPath: path) : nil, 0)
    }

    deinit { state.withLock { try? $0.handle?.close() } }

    /// A REST path fit for a log: the tokens some paths carry (`auth_tokens/{token}`,
    /// `push_tokens/{token}`) and any query string replaced by `…`.
    static func redacted(path: String) -> String {
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        var parts = bare.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for i in parts.indices.dropFirst() where parts[i - 1] == "auth_tokens" || parts[i - 1] == "push_tokens" { parts[i] = "…" }
        return parts.joined(separator: "/") + (bare.count < path.count ? "?…" : "")
    }
}
