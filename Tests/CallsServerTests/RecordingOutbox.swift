import CallRoomTestSupport
@testable import CallsServer
import CallsCore
import CallsSignalling
import Foundation

/// A `SignalOutbox` that records what it is asked to send and close (tests without sockets).
final class RecordingOutbox: SignalOutbox, @unchecked Sendable {
    private let lock = NSLock()
    private var sentList: [(ServerMessage, ConnectionID)] = []
    private var closedList: [ConnectionID] = []
    func send(_ message: ServerMessage, to connection: ConnectionID) { lock.withLock { sentList.append((message, connection)) } }
    func close(_ connection: ConnectionID) { lock.withLock { closedList.append(connection) } }
    var sent: [(ServerMessage, ConnectionID)] { lock.withLock { sentList } }
    var closed: [ConnectionID] { lock.withLock { closedList } }
    /// The messages sent to one connection, in order.
    func to(_ c: ConnectionID) -> [ServerMessage] { sent.filter { $0.1 == c }.map(\.0) }
}
