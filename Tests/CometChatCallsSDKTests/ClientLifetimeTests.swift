import CallRoomTestSupport
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// A client that joined and left is freed with everything it started (its media engine, its
/// connection): a process that joins and leaves many times (the demo's bots, an app over a
/// day of calls) does not grow with each call.
final class ClientLifetimeTests: XCTestCase {
    func testAClientThatLeftIsFreed() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let keeper = try await t.joinedClient("keeper", session: "lifetime", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("none").build())
        weak var gone: CallsClient?
        weak var engine: MediaEngine?
        do {
            let c = try await t.joinedClient("cycler", session: "lifetime", settings: SessionSettingsBuilder()
                .setSessionType(.video).setAudioInput("tone:440").setAudioOutput("none").setVideoSource("avatar").build())
            gone = c
            engine = c.engine
            XCTAssertNotNil(engine, "joined: it has a media engine")
            await c.leave()
        }
        let freed = await eventually(5) { gone == nil && engine == nil }
        XCTAssertTrue(freed, "client freed: \(gone == nil), engine freed: \(engine == nil)")
        await keeper.leave()
    }

    /// Someone who stays while video senders come and go decodes only those in the room: a
    /// departed sender's decoder goes (each was kept for the rest of the call — a megabyte a
    /// departure: the demo's own client grew 3.5 MB a minute as its bots dropped and rejoined).
    func testADepartedVideoSendersDecoderGoes() async throws {
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let keeper = try await t.joinedClient("keeper", session: "decoders", settings: SessionSettingsBuilder()
            .setSessionType(.video).setAudioInput("null").setAudioOutput("none").setVideoSource("none").build())
        let engine = try XCTUnwrap(keeper.engine)
        for round in 1...3 {
            let c = try await t.joinedClient("cycler", session: "decoders", settings: SessionSettingsBuilder()
                .setSessionType(.video).setAudioInput("null").setAudioOutput("none").setVideoSource("avatar")
                .setVideoFormat(width: 160, height: 90, fps: 10, bitrateKbps: 120).build())
            let decoding = await eventually(10) { engine.videoReceiverCount == 1 }
            XCTAssertTrue(decoding, "round \(round): the keeper decodes the cycler's video (\(engine.videoReceiverCount) receivers)")
            await c.leave()
            let dropped = await eventually(5) { engine.videoReceiverCount == 0 }
            XCTAssertTrue(dropped, "round \(round): \(engine.videoReceiverCount) receivers after the sender left")
        }
        await keeper.leave()
    }
}
