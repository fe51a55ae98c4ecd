import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// An in-process `CallServer` on loopback with a temporary data directory, for SDK tests.
final class TestServer {
    let server: CallServer
    let dir: String

    init(configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("crsdk-\(UUID().uuidString.prefix(8))").path
        var c = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dir)
        c.logLevel = .error
        configure(&c)
        server = CallServer(configuration: c)
        try server.start()
    }

    var url: URL { URL(string: server.url) ?? URL(fileURLWithPath: "/") }
    var appId: String { server.keys.appId }
    var authKey: String { server.keys.authKey }

    /// Initialises `CometChatCalls` against this server, callbacks on `queue`.
    func initializeSDK(queue: DispatchQueue) throws {
        try CometChatCalls.initialize(CallAppSettingsBuilder().set(appID: appId).set(region: "local")
            .set(host: server.url).set(callbackQueue: queue).build())
    }

    /// A second participant: logged in and joined to `session`.
    func joinedClient(_ uid: String, session: String, settings: SessionSettingsBuilder.SessionSettings,
                      name: String? = nil, probe: (any MediaProbe)? = nil, onEvent: @escaping @Sendable (CallEvent) -> Void = { _ in }) async throws -> CallsClient {
        let c = CallsClient(serverURL: url, appID: appId, eventQueue: DispatchQueue(label: uid), mediaProbe: probe, onEvent: onEvent)
        _ = try await c.login(uid: uid, authKey: authKey, name: name)
        try await c.join(callToken: try await c.generateToken(sessionID: session), sessionID: session, settings: settings)
        return c
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

extension XCTestCase {
    /// Waits (every 50 ms, up to `seconds`) until `events` holds one that matches; fails with
    /// `what` and every callback seen when none came.
    func waitFor(_ what: String, _ events: EventRecorder, seconds: Double = 5, file: StaticString = #filePath, line: UInt = #line,
                 _ match: @escaping (CallEvent) -> Bool) async throws {
        for _ in 0..<Int(seconds * 20) where !events.all.contains(where: match) { try await Task.sleep(nanoseconds: 50_000_000) }
        XCTAssertTrue(events.all.contains(where: match), "\(what): \(events.all.map(\.callback))", file: file, line: line)
    }
}
