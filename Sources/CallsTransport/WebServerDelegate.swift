import CallsCore
import Foundation

/// Receives what a `WebServer` hears. Every method is called on the server's service thread and
/// must return quickly: hand slow work to another queue and answer later through `respond` or
/// `WebServer.send(_:to:)`, both of which are safe from any thread.
public protocol WebServerDelegate: AnyObject, Sendable {
    /// An HTTP request arrived (body complete). Call `respond` exactly once, from any thread.
    func webServer(_ server: WebServer, request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void)
    /// A WebSocket upgrade on `path` completed.
    func webServer(_ server: WebServer, didOpen connection: UInt64, path: String, peer: String)
    /// A whole WebSocket message (fragments reassembled) arrived.
    func webServer(_ server: WebServer, connection: UInt64, didReceive message: [UInt8], binary: Bool)
    /// The WebSocket closed, for any reason. No more calls for `connection` follow.
    func webServer(_ server: WebServer, didClose connection: UInt64)
    /// The peer did not read: more than `maxQueuedBytes` waited for it. Its queue was dropped
    /// and it is being closed with `WebServer.slowConsumerCloseCode` (`didClose` follows).
    func webServer(_ server: WebServer, droppedSlowConnection connection: UInt64, peer: String, queuedBytes: Int)
    /// A WebSocket message passed `maxMessageBytes` (whole or in fragments): what came of it was
    /// dropped and the connection is being closed with 1009 (`didClose` follows).
    func webServer(_ server: WebServer, refusedOversizedMessage connection: UInt64, peer: String)
    /// A request's body did not arrive within `bodyTimeoutSeconds` of its head: the connection
    /// was closed without an answer.
    func webServer(_ server: WebServer, refusedSlowBodyFrom peer: String, received: Int, of length: Int)
    /// A request was refused from its head alone (a chunked body, a `Content-Length` that is not
    /// one number or is past `maxBodyBytes`, a NUL in the head): answered `code` and closed,
    /// nothing behind the head read. `reason` is the answer's message (no client data in it).
    func webServer(_ server: WebServer, refusedRequestHeadFrom peer: String, code: RESTErrorCode, reason: String)
    /// A TCP connection was hung up as it was accepted: the server holds `maxOpenDescriptors`
    /// descriptors already.
    func webServer(_ server: WebServer, refusedConnectionOverDescriptorBudget descriptor: Int32)
    /// A TCP connection was hung up as it was accepted: its address holds `maxConnectionsPerAddress` already.
    func webServer(_ server: WebServer, refusedConnectionFrom address: String, holding: Int)
}

extension WebServerDelegate {
    public func webServer(_ server: WebServer, droppedSlowConnection connection: UInt64, peer: String, queuedBytes: Int) {}
    public func webServer(_ server: WebServer, refusedOversizedMessage connection: UInt64, peer: String) {}
    public func webServer(_ server: WebServer, refusedSlowBodyFrom peer: String, received: Int, of length: Int) {}
    public func webServer(_ server: WebServer, refusedRequestHeadFrom peer: String, code: RESTErrorCode, reason: String) {}
    public func webServer(_ server: WebServer, refusedConnectionOverDescriptorBudget descriptor: Int32) {}
    public func webServer(_ server: WebServer, refusedConnectionFrom address: String, holding: Int) {}
}
