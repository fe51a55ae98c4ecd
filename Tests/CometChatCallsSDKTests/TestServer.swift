import CallRoomTestSupport
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// The SDK tests' server: the one harness, its data removed on stop.
typealias TestServer = ServerHarness

extension ServerHarness {
    /// A server for an SDK test (its data directory removed on `stop()`).
    static func forSDK(configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> ServerHarness {
        try ServerHarness(removesDataOnStop: true, configure: configure)
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

    /// Whether a file of a recording running here, ending in `suffix`, grows past `bytes`
    /// within `seconds` (the recorder writes what it receives).
    func recordingFileGrows(_ suffix: String, beyond bytes: Int, within seconds: Double = 20) async -> Bool {
        let root = dir + "/recordings"
        return await eventually(seconds) {
            ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).contains { rid in
                ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + rid)) ?? []).contains { name in
                    name.hasSuffix(suffix) && ((try? FileManager.default.attributesOfItem(atPath: "\(root)/\(rid)/\(name)")[.size] as? NSNumber)?.intValue ?? 0) > bytes
                }
            }
        }
    }
}

extension XCTestCase {
    /// Waits (every 50 ms, up to `seconds`) until `events` holds one that matches; fails with
    /// `what` and every callback seen when none came.
    func waitFor(_ what: String, _ events: EventRecorder<CallEvent>, seconds: Double = 5, file: StaticString = #filePath, line: UInt = #line,
                 _ match: @escaping (CallEvent) -> Bool) async throws {
        let seen = await eventually(seconds) { events.all.contains(where: match) }
        XCTAssertTrue(seen, "\(what): \(events.all.map(\.callback))", file: file, line: line)
    }
}

extension EventRecorder where Event == CallEvent {
    /// The first event matching `match` within `timeout`; a test failure naming `what` and every
    /// callback seen when none came.
    @discardableResult
    func wait(_ what: String, timeout: TimeInterval = 5, file: StaticString = #filePath, line: UInt = #line,
              _ match: (CallEvent) -> Bool) -> CallEvent? {
        if let e = wait(timeout, match) { return e }
        XCTFail("no event \(what) within \(timeout) s; saw \(all.map(\.callback))", file: file, line: line)
        return nil
    }

    func has(_ e: CallEvent, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        wait("\(e.callback)", file: file, line: line) { $0 == e } != nil
    }

    func error(_ code: String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        wait(code, file: file, line: line) { if case .error(code, _) = $0 { return true }; return false } != nil
    }
}
