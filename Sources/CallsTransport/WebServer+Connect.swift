import CWebSockets
import CallsCore
import Foundation

/// `CONNECT`, refused. libwebsockets turns a `CONNECT` request into a raw connection before any
/// HTTP callback sees it — the tunnel a proxy would open — and nothing here serves one, so such
/// a connection was held, unanswered, for as long as the client kept it (no idle timeout applies
/// to a raw connection). It is answered 405 now, its bytes read and dropped, and closed at most
/// `lingerSeconds` after the answer. Thread rules: the service thread only.
extension WebServer {
    /// A `CONNECT` request has become a raw connection: its answer is written once it may be.
    /// (The request's headers are still there: the client is read as for any request.)
    func refuseConnect(_ wsi: OpaquePointer) -> Int32 {
        let peer = client(of: wsi)
        let code = RESTErrorCode.methodNotAllowed
        let reason = "CONNECT is not served: callroomd is no proxy."
        let body = Array(code.json(reason).utf8)
        var head = "HTTP/1.1 \(code.status) Method Not Allowed\r\n"
        head += "allow: \(Self.allowedMethods)\r\ncontent-type: application/json\r\n"
        head += "content-length: \(body.count)\r\ncache-control: no-store\r\nconnection: close\r\n\r\n"
        connectRefusals[wsi] = Array(head.utf8) + body
        lws_callback_on_writable(wsi)
        // (A client that never reads its answer is closed by this as well.)
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, Int32(Self.lingerSeconds))
        delegate?.webServer(self, refusedRequestHeadFrom: peer, code: code, reason: reason)
        return 0
    }

    /// Writes a refused `CONNECT`'s answer, then shuts the server's side for writing; what the
    /// client still sends is dropped until it closes or the linger ends.
    func writeConnectRefusal(_ wsi: OpaquePointer) -> Int32 {
        guard let answer = connectRefusals.removeValue(forKey: wsi) else { return 0 }
        var buffer = [UInt8](repeating: 0, count: Int(callroom_lws_pre) + answer.count)
        buffer.replaceSubrange(Int(callroom_lws_pre)..., with: answer)
        let written = buffer.withUnsafeMutableBufferPointer { p -> Int32 in
            guard let base = p.baseAddress else { return -1 }
            return lws_write(wsi, base + Int(callroom_lws_pre), answer.count, LWS_WRITE_HTTP)  // LWS_WRITE_RAW is this, a macro
        }
        guard written >= 0 else { return -1 }
        let fd = lws_get_socket_fd(wsi)
        if fd >= 0, lws_partial_buffered(wsi) == 0 { shutdown(fd, Int32(SHUT_WR)) }
        return 0
    }

    /// The methods some endpoint answers (the `Allow` of a 405 for CONNECT).
    static let allowedMethods = "GET, HEAD, POST, PUT, DELETE"
}
