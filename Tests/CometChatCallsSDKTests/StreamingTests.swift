import CallRoomTestSupport
import CallsCore
import CallsMembers
import CallsServer
import CallsRecording
import CallsTransport
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// The live stream end to end against a real Icecast (Debian `icecast2`, started here): a
/// moderator starts it from the SDK, a player on the mount gets Ogg Opus that opusinfo accepts
/// and that holds the room's sound; Icecast crashing and coming back is said to the room and
/// the stream resumes with fresh headers; bad credentials and unconfigured servers are clear
/// errors.
final class StreamingTests: XCTestCase {
    /// The stream a player hears for `seconds`, checked by opusinfo and decoded by opusdec.
    func heard(_ ice: IcecastServer, _ mount: String, seconds: Double, dir: TemporaryDirectory, name: String) throws -> [Int16] {
        let (status, body) = ice.listen(mount: mount, seconds: seconds)
        XCTAssertTrue(status.contains("200"), "the mount answers a player: \(status)")
        XCTAssertGreaterThan(body.count, 4000, "\(seconds) s of stream")
        let path = dir.file(name + ".opus")
        try body.write(to: URL(fileURLWithPath: path))
        let info = try ManagedProcess("/usr/bin/opusinfo", [path])
        _ = info.wait(timeout: 20)
        // A player joins mid-stream: opusinfo warns of the pages before it (and exits 1 for
        // that), "normal for live streams"; anything else is a fault.
        let report = info.output
        XCTAssertTrue(report.contains { $0.contains("type opus") } && report.contains { $0.contains("Playback length") }, report.joined(separator: "\n"))
        let faults = report.filter { $0.contains("WARNING") && !$0.contains("normal for live streams") && !$0.contains("discontinuity in stream") }
        XCTAssertEqual(faults, [], report.joined(separator: "\n"))
        let dec = try ManagedProcess("/usr/bin/opusdec", ["--quiet", "--rate", "48000", path, path + ".wav"])
        XCTAssertEqual(dec.wait(timeout: 20), 0, dec.errorOutput)
        return try XCTUnwrap(SignalAnalysis.readWAV(path + ".wav")).samples
    }

    func testAModeratorStreamsTheRoomToIcecastAndItSurvivesIcecastRestarting() async throws {
        try XCTSkipUnless(IcecastServer.isInstalled && FileManager.default.isExecutableFile(atPath: "/usr/bin/opusinfo"),
                          "needs icecast2 and opus-tools (scripts/install-deps.sh)")
        let ice = try IcecastServer()
        try ice.start()
        let t = try TestServer.forSDK {
            $0.streamingURL = "http://source:\(ice.password)@127.0.0.1:\(ice.port)/{sessionId}.opus"
            $0.streamingReconnectSeconds = 30
        }
        defer { t.stop() }
        let dir = TemporaryDirectory("callroom-stream")
        defer { dir.remove() }
        let modEvents = EventRecorder<CallEvent>(), guestEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "onair", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { modEvents.add($0) })
        let guest = try await t.joinedClient("guest", session: "onair", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), onEvent: { guestEvents.add($0) })
        guest.setSessionFeature(.streaming, enabled: true)
        try await waitFor("a participant may not stream", guestEvents) { if case .error("ERR_NOT_MODERATOR", _) = $0 { return true }; return false }
        mod.setSessionFeature(.streaming, enabled: true)
        try await waitFor("onStreamingStarted (guest)", guestEvents) { $0 == .streamingStarted }
        XCTAssertEqual(guest.streamState, .live)
        await eventually(3) { !ice.mounts().isEmpty }
        XCTAssertEqual(ice.mounts(), ["/onair.opus"])
        XCTAssertEqual(guest.participants.count, 2, "the streamer is no participant")
        mod.setSessionFeature(.streaming, enabled: true)
        try await waitFor("one stream at a time", modEvents) { if case .error("ERR_ALREADY_STREAMING", _) = $0 { return true }; return false }

        // A player hears the room: the moderator's 440 Hz tone.
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let first = try heard(ice, "/onair.opus", seconds: 4, dir: dir, name: "first")
        let windows = SignalAnalysis.windows(first, size: 4800)
        let toned = windows.filter { SignalAnalysis.toneDominanceDB($0, frequency: 440, others: [660, 1000]) > 20 }.count
        XCTAssertGreaterThan(toned, windows.count / 2, "the stream is the room's sound: \(toned) of \(windows.count) windows are the tone")

        // Icecast crashes: the room hears the stream is reconnecting, then back on air.
        ice.kill()
        try await waitFor("onStreamingReconnecting", guestEvents, seconds: 10) { if case .streamingReconnecting = $0 { return true }; return false }
        XCTAssertEqual(guest.streamState, .reconnecting)
        try ice.start()
        try await waitFor("onStreamingReconnected", guestEvents, seconds: 15) { $0 == .streamingReconnected }
        XCTAssertEqual(guest.streamState, .live)
        try await Task.sleep(nanoseconds: 500_000_000)
        // A new Ogg stream with its own headers: a player that joins now can decode it.
        let second = try heard(ice, "/onair.opus", seconds: 3, dir: dir, name: "second")
        XCTAssertGreaterThan(second.count, 48_000, "more than a second of audio after the reconnect")

        mod.setSessionFeature(.streaming, enabled: false)
        try await waitFor("onStreamingStopped", guestEvents) { $0 == .streamingStopped }
        XCTAssertNil(guest.streamState)
        await eventually(2) { ice.mounts().isEmpty }
        XCTAssertEqual(ice.mounts(), [], "the mount ends with the stream")
        await guest.leave()
        await mod.leave()
    }

    func testRefusedCredentialsAndUnconfiguredServersAreClearErrors() async throws {
        try XCTSkipUnless(IcecastServer.isInstalled, "needs icecast2 (scripts/install-deps.sh)")
        let ice = try IcecastServer()
        try ice.start()
        // A wrong source password: the moderator is told at once; nobody hears "started".
        let wrong = try TestServer.forSDK { $0.streamingURL = "http://source:not-it@127.0.0.1:\(ice.port)/x.opus" }
        defer { wrong.stop() }
        let events = EventRecorder<CallEvent>()
        let mod = try await wrong.joinedClient("mod", session: "nope", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").setStreamingURL("http://source:x@127.0.0.1:9/y.opus").build(), onEvent: { events.add($0) })
        // A session's own URL is refused unless the server allows it.
        mod.setSessionFeature(.streaming, enabled: true)
        try await waitFor("a session URL needs streamingAllowSessionURLs", events) {
            if case .error("ERR_STREAMING_FAILED", let m) = $0 { return m.contains("configured Icecast") }; return false
        }
        await mod.leave()
        let plain = try await wrong.joinedClient("mod", session: "nope2", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { events.add($0) })
        events.clear()
        plain.setSessionFeature(.streaming, enabled: true)
        try await waitFor("refused credentials", events) {
            if case .error("ERR_STREAMING_FAILED", let m) = $0 { return m.contains("refused") }; return false
        }
        XCTAssertFalse(events.all.contains(.streamingStarted))
        XCTAssertNil(plain.streamState)
        XCTAssertEqual(ice.mounts(), [])
        await plain.leave()

        // No streamingURL at all.
        let none = try TestServer.forSDK()
        defer { none.stop() }
        let e2 = EventRecorder<CallEvent>()
        let c = try await none.joinedClient("mod", session: "quiet", settings: SessionSettingsBuilder()
            .setAudioInput("null").setAudioOutput("null").build(), onEvent: { e2.add($0) })
        c.setSessionFeature(.streaming, enabled: true)
        try await waitFor("no Icecast configured", e2) {
            if case .error("ERR_FEATURE_UNAVAILABLE", let m) = $0 { return m.contains("streamingURL") }; return false
        }
        await c.leave()
    }
}

/// A stream goes where a moderator says only with `streamingAllowSessionURLs`, and even then
/// never to a link-local or metadata address — written so, or a name that resolves there —
/// and what is dialled is the address checked, not a second lookup's answer.
final class StreamingDestinationTests: XCTestCase {
    func testASessionsStreamNeverGoesToALinkLocalOrMetadataAddress() async throws {
        let server = try TestServer.forSDK { $0.streamingAllowSessionURLs = true }
        defer { server.stop() }
        // (The third is 169.254.169.254 as one number: no address literal, but the resolver's answer is checked.)
        for (session, url) in [("meta", "http://source:x@169.254.169.254/latest.opus"), ("meta6", "http://source:x@[fd00:ec2::254]:8000/x.opus"),
                               ("metan", "http://source:x@2852039166/x.opus")] {
            let events = EventRecorder<CallEvent>()
            let mod = try await server.joinedClient("mod", session: session, settings: SessionSettingsBuilder()
                .setAudioInput("null").setAudioOutput("null").setStreamingURL(url).build(), onEvent: { events.add($0) })
            mod.setSessionFeature(.streaming, enabled: true)
            // At once, not after a connection attempt timed out ("no answer … within 5 s").
            try await waitFor("\(url) refused", events, seconds: 4) {
                if case .error("ERR_STREAMING_FAILED", let m) = $0 { return m.contains("not sent") && m.contains("metadata") }; return false
            }
            XCTAssertFalse(events.all.contains(.streamingStarted))
            await mod.leave()
        }
    }

    func testANameIsCheckedWhereItResolvesAndTheCheckedAddressIsDialled() throws {
        try XCTSkipUnless(IcecastServer.isInstalled, "needs icecast2 (scripts/install-deps.sh)")
        let ice = try IcecastServer()
        try ice.start()
        let log = ServerLog(level: .error, sink: { _ in })
        func streamer(_ url: String, refused: [IPNetwork]) throws -> RoomStreamer {
            try RoomStreamer(config: .init(sessionId: "s", id: "st", target: IcecastTarget(url: url), reconnectSeconds: 1,
                                           refusedDestinations: refused), log: log)
        }
        // Here the refused block is loopback: `localhost` stands for a name that resolves to a
        // metadata address. Nothing reaches Icecast.
        let refused = try streamer("http://source:\(ice.password)@localhost:\(ice.port)/refused.opus", refused: [try XCTUnwrap(IPNetwork("127.0.0.0/8"))])
        XCTAssertThrowsError(try refused.connect()) { e in
            guard case StreamError.refusedDestination(let m) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(m.hasPrefix("127.0.0.1 (localhost) is"), m)
        }
        let allowed = try streamer("http://source:\(ice.password)@localhost:\(ice.port)/named.opus", refused: IPNetwork.neverDialled)
        try allowed.connect()
        _ = eventually(5) { ice.sourceLogins().contains("/named.opus") }
        XCTAssertEqual(Set(ice.sourceLogins()), ["/named.opus"], "the refused one never reached Icecast")
        allowed.finished(failure: nil)
        XCTAssertThrowsError(try streamer("http://source:x@no-such-icecast.invalid:\(ice.port)/x.opus", refused: []).connect()) { e in
            XCTAssertTrue("\(e)".contains("cannot resolve no-such-icecast.invalid"), "\(e)")
        }
        // libshout dials the address it is given, not the target's name (which resolves nowhere).
        let source = try IcecastSource(target: IcecastTarget(url: "http://source:\(ice.password)@icecast.invalid:\(ice.port)/pinned.opus"), name: "pinned")
        try source.connect(timeout: 5, address: "127.0.0.1")
        XCTAssertTrue(source.isConnected)
        _ = eventually(5) { ice.sourceLogins().contains("/pinned.opus") }
        XCTAssertEqual(Set(ice.sourceLogins()), ["/named.opus", "/pinned.opus"])
        source.close()
    }
}

/// libshout waits for its connect with select(2), which aborts the process for a descriptor
/// past FD_SETSIZE: a busy server must still stream (its socket gets a low descriptor held for it).
final class StreamingDescriptorTests: XCTestCase {
    func testAServerWithMoreThanFDSetSizeDescriptorsOpenStillStreams() throws {
        try XCTSkipUnless(IcecastServer.isInstalled, "needs icecast2 (scripts/install-deps.sh)")
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try XCTSkipUnless(limit.rlim_cur > 1300, "the descriptor limit here is \(limit.rlim_cur)")
        let ice = try IcecastServer()
        try ice.start()
        LowDescriptors.reserve()  // (a server does this when it starts)
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        while fds.last.map({ $0 < 1200 }) ?? true {
            let fd = open("/dev/null", O_RDONLY)
            guard fd >= 0 else { break }
            fds.append(fd)
        }
        XCTAssertGreaterThan(fds.last ?? 0, Int32(FD_SETSIZE), "descriptors past FD_SETSIZE are in use")
        let source = try IcecastSource(target: IcecastTarget(url: "http://source:\(ice.password)@127.0.0.1:\(ice.port)/busy.opus"), name: "busy")
        try source.connect(timeout: 5)  // aborted the process before the low descriptors
        XCTAssertTrue(source.isConnected)
        source.close()
        // And again (a reconnect takes one the same way).
        try source.connect(timeout: 5)
        XCTAssertTrue(source.isConnected)
        source.close()
    }
}
