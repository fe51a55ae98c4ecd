import CallsCore

/// Where the room registry sends signalling messages: a transport-independent sink, so the
/// rooms never see libwebsockets (and tests or another transport can stand in).
package protocol SignalOutbox: AnyObject, Sendable {
    func send(_ message: ServerMessage, to connection: ConnectionID)
    func close(_ connection: ConnectionID)
}
