import CWebSockets
import CallsCore
import Foundation
import Synchronization

/// What the service thread keeps of each connection, and what other threads hand it to write.
/// Thread rules: the service thread's only (`WebServer`'s ownership).
extension WebServer {
    enum Outgoing {
        case response(HTTPResponse)
        case message([UInt8], binary: Bool)
        case close(code: UInt16, reason: String)
        /// More of a streamed body has come (or it failed): write when the socket allows.
        case bodyReady
    }

    final class Connection {
        let wsi: OpaquePointer
        var isWebSocket = false
        // HTTP request in progress
        var method = ""
        var path = ""
        var query: [String: String] = [:]
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        var peer = ""
        /// The request's `Content-Length`, its bytes so far, and when they must all be in (monotonic ns).
        var bodyLength = 0
        var bodyReceived = 0
        var bodyDeadline: UInt64 = 0
        /// The answer goes, then the connection (what follows on it is not a request to read).
        var closeAfterResponse = false
        /// Such an answer was written and the server stopped writing (its FIN sent): what the
        /// client still sends is read and dropped until it closes or `lingerDeadline` passes
        /// (monotonic ns), so its connection is not reset under the answer (`WebServer.linger`).
        var lingering = false
        var lingerDeadline: UInt64 = 0
        var response: HTTPResponse?
        var headerWritten = false
        /// Bytes of the response's body written so far, and its file while it is read.
        var bodySent = 0
        var bodyFile: FileChunkReader?
        var awaitingResponse = false
        /// Set once the request went to the delegate: libwebsockets may still report body
        /// completion for a body-less POST, which must not run the handler twice.
        var dispatched = false
        /// The path, a query argument or a header read holds a NUL (refused: see `LWS_CALLBACK_HTTP`).
        var hasNULInHead: Bool {
            path.utf8.contains(0) || query.contains { $0.key.utf8.contains(0) || $0.value.utf8.contains(0) }
                || headers.values.contains { $0.utf8.contains(0) }
        }
        // WebSocket
        var rx: [UInt8] = []
        var rxOverflow = false
        var tx: [(bytes: [UInt8], binary: Bool)] = []
        /// Bytes in `tx`.
        var txBytes = 0
        var closeRequest: (UInt16, String)?
        init(wsi: OpaquePointer) { self.wsi = wsi }
        // (However the connection ends — sent, closed by the peer, the server stopped, before
        // or after the answer's head — a body's producer stops with it.)
        deinit { response?.stream?.cancel() }
    }
}
