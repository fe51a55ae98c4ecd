import CWebSockets
import CallsCore
import Foundation
import Synchronization

/// The HTTP half of the service thread: a request read from its head, handed to the delegate
/// once its body is in, and its answer written — head, then the body a chunk per writable
/// callback (a file or a stream is never copied whole). Thread rules: the service thread only.
extension WebServer {
    func beginRequest(_ conn: Connection, uri: String) {
        let wsi = conn.wsi
        conn.method = Self.method(wsi)
        conn.path = uri
        conn.body = []
        conn.bodyLength = 0
        conn.bodyReceived = 0
        conn.closeAfterResponse = false
        conn.response = nil
        conn.headerWritten = false
        conn.bodySent = 0
        conn.bodyFile = nil
        conn.awaitingResponse = false
        conn.dispatched = false
        conn.peer = client(of: wsi)
        var headers: [String: String] = [:]
        if let ct = Self.copyHeader(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE) { headers["content-type"] = ct }
        if let range = Self.copyHeader(wsi, WSI_TOKEN_HTTP_RANGE) { headers["range"] = range }
        for name in Self.capturedHeaders where name != "content-type" {
            if let v = Self.customHeader(wsi, name) { headers[name] = v }
        }
        conn.headers = headers
        conn.query = Self.queryArgs(wsi)
    }

    /// Answers `code` with `message` instead of reading the request, then closes. Service thread.
    func answerAndClose(_ conn: Connection, _ code: RESTErrorCode, _ message: String) -> Int32 {
        conn.dispatched = true
        conn.awaitingResponse = true
        conn.closeAfterResponse = true
        conn.response = HTTPResponse(status: code.status, json: code.json(message))
        lws_callback_on_writable(conn.wsi)
        delegate?.webServer(self, refusedRequestHeadFrom: conn.peer, code: code, reason: message)
        return 0
    }

    /// A request's `Content-Length` (0 when there is none), or nil when it is not one whole
    /// number (RFC 9112 §6.3: a sign, letters, a list — two lengths that differ, as
    /// libwebsockets joins repeated headers — or more digits than any body could have).
    static func contentLength(_ header: String?) -> Int? {
        guard let header else { return 0 }
        let digits = header.trimmingCharacters(in: .whitespaces)
        guard (1...15).contains(digits.utf8.count), digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(digits)
    }

    func dispatchRequest(_ conn: Connection, id: UInt64) -> Int32 {
        guard !conn.dispatched else { return 0 }
        conn.dispatched = true
        // HEAD is answered as GET is, without the body (`writeHTTP`): the delegate sees a GET.
        let request = HTTPRequest(method: conn.method == "HEAD" ? "GET" : conn.method, path: conn.path, query: conn.query,
                                  headers: conn.headers, body: conn.body, peer: conn.peer, isHead: conn.method == "HEAD")
        conn.awaitingResponse = true
        guard let delegate else {
            conn.response = HTTPResponse(status: RESTErrorCode.unavailable.status, json: RESTErrorCode.unavailable.json("Shutting down."))
            lws_callback_on_writable(conn.wsi)
            return 0
        }
        delegate.webServer(self, request: request) { [weak self] response in
            self?.enqueue(id, .response(response))
        }
        return 0
    }

    /// A response's body goes out at most this much per writable callback (a large body, or a
    /// file, is never copied whole into one write).
    static let bodyChunkBytes = 64 << 10

    func writeHTTP(_ conn: Connection, id: UInt64) -> Int32 {
        guard var response = conn.response else { return 0 }
        let wsi = conn.wsi
        if !conn.headerWritten {
            if case .file(let file) = response.content {
                // (Opened before the head goes, so a file gone since it was found is a 404, not a cut.)
                if let reader = FileChunkReader(path: file.path) {
                    conn.bodyFile = reader
                } else {
                    response = HTTPResponse(status: RESTErrorCode.notFound.status,
                                            json: RESTErrorCode.notFound.json("The file is gone."))
                    conn.response = response
                }
            }
            let capacity = Int(callroom_lws_pre) + 1024
            var buffer = [UInt8](repeating: 0, count: capacity)
            let ok = buffer.withUnsafeMutableBufferPointer { buf -> Bool in
                guard let base = buf.baseAddress else { return false }
                let start = base + Int(callroom_lws_pre)
                var p: UnsafeMutablePointer<UInt8>? = start
                let end = base + capacity - 1
                if lws_add_http_common_headers(wsi, UInt32(response.status), response.contentType,
                                               lws_filepos_t(response.contentLength), &p, end) != 0 { return false }
                // Not stored anywhere unless the response says otherwise (once: a second
                // cache-control beside the response's own would contradict it).
                if !response.headers.contains(where: { $0.name.lowercased() == "cache-control" }),
                   lws_add_http_header_by_name(wsi, "cache-control:", "no-store", 8, &p, end) != 0 { return false }
                for h in response.headers {
                    let v = Array(h.value.utf8)
                    if lws_add_http_header_by_name(wsi, h.name + ":", v, Int32(v.count), &p, end) != 0 { return false }
                }
                return lws_finalize_write_http_header(wsi, start, &p, end) == 0
            }
            guard ok else { return -1 }
            conn.headerWritten = true
            // (A HEAD's answer is the head alone: its length says what a GET would get, and a
            // streamed body is never started.)
            guard conn.method != "HEAD" else { return finishResponse(conn, response) }
            response.stream?.start { [weak self] in self?.enqueue(id, .bodyReady) }
            if response.contentLength > 0 {
                lws_callback_on_writable(wsi)
                return 0
            }
        } else {
            let total = response.contentLength
            let want = min(Self.bodyChunkBytes, total - conn.bodySent)
            var buffer = [UInt8](repeating: 0, count: Int(callroom_lws_pre) + want)
            var count = 0
            let n = buffer.withUnsafeMutableBufferPointer { buf -> Int32 in
                guard let base = buf.baseAddress else { return -1 }
                let payload = base + Int(callroom_lws_pre)
                switch response.content {
                case .bytes(let body):
                    body.withUnsafeBufferPointer { b in if let from = b.baseAddress { payload.update(from: from + conn.bodySent, count: want) } }
                    count = want
                case .file(let file):
                    // (A file shorter than its head said: the connection ends, the client sees it cut.)
                    guard let reader = conn.bodyFile,
                          reader.read(into: payload, count: want, at: file.offset + conn.bodySent) == want else { return -1 }
                    count = want
                case .stream(let stream):
                    // (Nothing yet: the producer's wake brings the next chance to write.)
                    guard let got = stream.read(into: payload, max: want) else { return -1 }
                    count = got
                }
                if count == 0 { return 0 }
                return lws_write(wsi, payload, count, conn.bodySent + count == total ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
            }
            if n < 0 { return -1 }
            conn.bodySent += count
            if conn.bodySent < total {
                // (After nothing from a stream, its wake asks for the next chance instead.)
                if count > 0 { lws_callback_on_writable(wsi) }
                return 0
            }
        }
        return finishResponse(conn, response)
    }

    /// The answer is all written: the next request may come (or the connection ends).
    private func finishResponse(_ conn: Connection, _ response: HTTPResponse) -> Int32 {
        response.stream?.cancel()
        conn.response = nil
        conn.bodyFile = nil
        conn.bodySent = 0
        conn.awaitingResponse = false
        if conn.closeAfterResponse { return linger(conn) }
        return lws_http_transaction_completed(conn.wsi) != 0 ? -1 : 0
    }

    /// After an answer that closes the connection (a refusal from the head: 413, 411, 400): the
    /// server's side is shut for writing — the client reads the answer, then the end — and what
    /// the client is still sending (the body it began before the answer came) is read and
    /// dropped, never parsed, for at most `lingerSeconds`. Closing at once, on bytes unread or
    /// still coming, made the kernel reset the connection, and a client mid-upload (curl) saw
    /// the reset instead of the answer. (nginx's `lingering_close` does the same.)
    func linger(_ conn: Connection) -> Int32 {
        // (Part of the answer still in libwebsockets' buffer — a client that does not read — is
        // not cut off by the shutdown: such a connection closes as before.)
        let fd = lws_get_socket_fd(conn.wsi)
        guard fd >= 0, lws_partial_buffered(conn.wsi) == 0, shutdown(fd, Int32(SHUT_WR)) == 0 else { return -1 }
        conn.lingering = true
        conn.lingerDeadline = monotonicNanoseconds() + UInt64(Self.lingerSeconds) * 1_000_000_000
        lws_set_timeout(conn.wsi, PENDING_TIMEOUT_HTTP_CONTENT, Int32(Self.lingerSeconds))
        return 0
    }

    /// How long a refused client's bytes are read and dropped after the answer.
    static let lingerSeconds = 2
}
