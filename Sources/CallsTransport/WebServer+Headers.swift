import CWebSockets
import Foundation

/// Reading a request's head from libwebsockets: the method, headers (standard and custom), the
/// query's arguments and the peer's address. Service thread only (they read the `wsi`).
extension WebServer {
    static func method(_ wsi: OpaquePointer) -> String {
        let table: [(lws_token_indexes, String)] = [
            (WSI_TOKEN_GET_URI, "GET"), (WSI_TOKEN_POST_URI, "POST"), (WSI_TOKEN_PUT_URI, "PUT"),
            (WSI_TOKEN_PATCH_URI, "PATCH"), (WSI_TOKEN_DELETE_URI, "DELETE"), (WSI_TOKEN_OPTIONS_URI, "OPTIONS"),
            (WSI_TOKEN_HEAD_URI, "HEAD"),
        ]
        for (token, name) in table where lws_hdr_total_length(wsi, token) > 0 { return name }
        return "UNKNOWN"
    }

    static func copyHeader(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let n = Int(lws_hdr_total_length(wsi, token))
        guard n > 0 else { return nil }
        var buf = [CChar](repeating: 0, count: n + 1)
        let copied = Int(lws_hdr_copy(wsi, &buf, Int32(n + 1), token))
        guard copied >= 0 else { return nil }
        return String(cBuffer: buf, count: copied)
    }

    static func customHeader(_ wsi: OpaquePointer, _ name: String) -> String? {
        let key = name + ":"
        let n = Int(lws_hdr_custom_length(wsi, key, Int32(key.utf8.count)))
        guard n > 0 else { return nil }
        var buf = [CChar](repeating: 0, count: n + 1)
        let copied = Int(lws_hdr_custom_copy(wsi, &buf, Int32(n + 1), key, Int32(key.utf8.count)))
        guard copied >= 0 else { return nil }
        return String(cBuffer: buf, count: copied).trimmingCharacters(in: .whitespaces)
    }

    static func queryArgs(_ wsi: OpaquePointer) -> [String: String] {
        var out: [String: String] = [:]
        var idx: Int32 = 0
        while true {
            let n = Int(lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, idx))
            guard n > 0 else { break }
            var buf = [CChar](repeating: 0, count: n + 1)
            let copied = Int(lws_hdr_copy_fragment(wsi, &buf, Int32(n + 1), WSI_TOKEN_HTTP_URI_ARGS, idx))
            guard copied >= 0 else { break }
            let s = String(cBuffer: buf, count: copied)
            if let eq = s.firstIndex(of: "=") {
                out[String(s[..<eq])] = String(s[s.index(after: eq)...])
            } else {
                out[s] = ""
            }
            idx += 1
        }
        return out
    }

    static func peer(_ wsi: OpaquePointer) -> String {
        var buf = [CChar](repeating: 0, count: 64)
        _ = lws_get_peer_simple(wsi, &buf, 64)
        return String(cBuffer: buf)
    }

    /// The client a request or WebSocket comes from: its peer, or from a trusted proxy the
    /// client its `X-Forwarded-For` names (`ClientAddresses`).
    func client(of wsi: OpaquePointer) -> String {
        addresses.client(peer: Self.peer(wsi), forwardedFor: Self.copyHeader(wsi, WSI_TOKEN_X_FORWARDED_FOR))
    }
}
