import CallRoomTestSupport
@testable import CallsServer
import CallsCore
import CallsSignalling
import Foundation
import XCTest

/// The signal router on its own: a fake outbox and fake handlers, no sockets, no sleeps.
final class SignalRouterTests: XCTestCase {
    final class Handler: SignalHandler, @unchecked Sendable {
        let lock = NSLock()
        var received: [(ClientMessage, ConnectionID)] = []
        var closed: [ConnectionID] = []
        func received(_ message: ClientMessage, from connection: ConnectionID) { lock.withLock { received.append((message, connection)) } }
        func connectionClosed(_ connection: ConnectionID) { lock.withLock { closed.append(connection) } }
    }

    let a = ConnectionID(node: "n1", local: 1)
    let b = ConnectionID(node: "n1", local: 2)

    func testRoomMessagesReachTheRoomHandlerAndPingsAreAnsweredByTheRouter() {
        let out = RecordingOutbox(), rooms = Handler()
        let r = LocalSignalRouter(outbox: out, signalBurst: RoomLimits().signalBurst, signalPerSecond: RoomLimits().signalPerSecond, handlers: [.room: rooms])
        r.received(.join(.init(callToken: "t")), from: a)
        r.received(.setAudioMuted(true), from: a)
        r.received(.ping(7), from: b)
        XCTAssertEqual(rooms.received.map(\.0), [.join(.init(callToken: "t")), .setAudioMuted(true)])
        XCTAssertEqual(rooms.received.map(\.1), [a, a])
        XCTAssertEqual(out.sent.map(\.0), [.pong(7)], "a keep-alive needs no room")
        XCTAssertEqual(out.sent.map(\.1), [b])
    }

    func testAFamilyWithoutAHandlerIsRefused() {
        let out = RecordingOutbox()
        let r = LocalSignalRouter(outbox: out, signalBurst: RoomLimits().signalBurst, signalPerSecond: RoomLimits().signalPerSecond, handlers: [:])
        r.received(.leave, from: a)
        guard case .error(.unknownType, _)? = out.sent.first?.0 else { return XCTFail("\(out.sent)") }
    }

    func testTheRateLimitCoversEveryFamilyPerConnection() {
        let out = RecordingOutbox(), rooms = Handler()
        var limits = RoomLimits()
        limits.signalBurst = 5
        limits.signalPerSecond = 0.001
        let r = LocalSignalRouter(outbox: out, signalBurst: limits.signalBurst, signalPerSecond: limits.signalPerSecond, handlers: [.room: rooms])
        for i in 0..<10 { r.received(.ping(i), from: a) }
        for _ in 0..<3 { r.received(.leave, from: a) }
        XCTAssertEqual(out.sent.filter { if case .pong = $0.0 { return true }; return false }.count, 5, "the burst, then refusals")
        XCTAssertEqual(out.sent.filter { if case .error(.rateLimited, _) = $0.0 { return true }; return false }.count, 8)
        XCTAssertTrue(rooms.received.isEmpty, "refused messages do not reach the rooms")
        r.received(.leave, from: b)
        XCTAssertEqual(rooms.received.count, 1, "another connection has its own budget")
        r.connectionClosed(a)
        r.received(.leave, from: a)
        XCTAssertEqual(rooms.received.count, 2, "a closed connection's budget is forgotten")
    }

    func testDecodeErrorsAndClosesGoToEveryHandlerOnce() {
        let out = RecordingOutbox(), h = Handler()
        let r = LocalSignalRouter(outbox: out, signalBurst: RoomLimits().signalBurst, signalPerSecond: RoomLimits().signalPerSecond, handlers: [.room: h, .presence: h])
        r.rejected(.unknownType("dance"), from: a)
        r.rejected(.notJSON, from: a)
        r.rejected(.badFields("ping: id must be a whole number."), from: a)
        XCTAssertEqual(out.sent.compactMap { m -> SignalErrorCode? in if case .error(let c, _) = m.0 { return c }; return nil }, [.unknownType, .badMessage, .badMessage])
        XCTAssertEqual(out.sent.last.flatMap { m -> String? in if case .error(_, let text) = m.0 { return text }; return nil },
                       "ping: id must be a whole number.", "the client is told which field and how")
        r.connectionClosed(a)
        XCTAssertEqual(h.closed, [a], "one handler for two families hears the close once")
    }

    func testEveryClientMessageHasAFamily() {
        XCTAssertEqual(ClientMessage.ping(1).family, .presence)
        XCTAssertEqual(ClientMessage.chat(text: "x").family, .room)
        XCTAssertEqual(ClientMessage.resume(token: "t").family, .room)
    }
}
