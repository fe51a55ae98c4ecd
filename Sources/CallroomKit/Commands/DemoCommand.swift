import CallsCore
import CallsServer
import CallsTUI
import CometChatCallsSDK
import CallsVideo
import Foundation

/// `callroom demo`: a whole room in one process — an in-process server on loopback with a
/// temporary data directory, synthetic participants that speak, and you, on the call screen.
package enum DemoCommand {
    package static let usage = """
        USAGE: callroom demo [--bots N] [--scenario NAME|FILE] [--seed N] [--input SPEC] [--output SPEC]
                             [--name NAME] [--layout L] [--show LIST] [--hide LIST] [--event-log FILE]
                             [--ring] [--headless] [--video SOURCE] [--duration SECONDS] [--report FILE]

        Starts a CallRoom server inside this process (loopback, temporary data directory), joins
        N synthetic participants that speak (bundled speech clips), runs a scenario through them,
        and joins you to the room as its moderator (so muting, pausing and removing others and
        pinning for everyone can be shown).

        OPTIONS:
          --bots N          synthetic participants, 0…20 (default 5)
          --scenario S      random (default: a minute of every state, from --seed), a bundled
                            scenario (standup, quiet) or a scenario file
          --seed N          seed of the random scenario (default 1): the same seed, the same demo
          --input SPEC      your microphone (default alsa:default; null without a sound card)
          --output SPEC     your speaker (default alsa:default; null without a sound card)
          --name NAME       your display name (default "You")
          --video SOURCE    your camera: auto (default: the camera, else the test pattern),
                            v4l2:/dev/videoN, pattern, avatar, file:PATH.y4m, none
          --layout L        TILE, SPOTLIGHT or SIDEBAR (default TILE)
          --show LIST       show these parts of the call screen (as 'callroom join --help' lists;
                            the demo shows chat, invite, record and captions; not
                            screen-share: no one in the demo would see it)
          --hide LIST       hide these
          --event-log FILE  also write every listener callback to FILE as JSON lines
          --duration S      leave after S seconds (a scenario's `duration` line, unless given)
          --report FILE     the scenario's `expect` results as JUnit XML (FILE ends in .xml) or TAP;
                            a run whose expectations fail exits 7 (docs/call-screen.md, "QA")
          --ring            a synthetic participant (Ada) calls you: the ringing screen, then the call
                            with the others once you accept ([a]); ending the call returns to idle
          --headless        no screen: print every listener callback as JSON lines, read commands
                            (mute, unmute, leave) from stdin, as 'callroom join --headless' (with
                            --ring: the call is answered at once); with a duration (the
                            scenario's or --duration) the end of stdin does not end the run

        """

    package static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["video", "bots", "input", "output", "name", "layout", "event-log", "scenario", "seed", "show", "hide",
                                                                  "duration", "report"], boolean: ["headless", "help", "ring"])
        } catch { Console.fail("\(error.message)\nRun 'callroom demo --help' for usage.") }
        if args.has("help") { Console.out(usage); exit(ExitCode.ok) }
        if let extra = args.positionals.first { Console.fail("unexpected argument '\(extra)'") }
        guard let bots = Int(args["bots"] ?? "5"), (0...20).contains(bots) else { Console.fail("--bots must be 0…20") }
        guard let seed = UInt64(args["seed"] ?? "1") else { Console.fail("--seed must be a whole number") }
        let scenario: Scenario
        do { scenario = try BotDirector.loadScenario(args["scenario"], bots: bots, seed: seed) } catch { Console.fail(error.message) }
        let duration = args.durationSeconds ?? scenario.duration
        if let bad = scenario.expectations.compactMap({ $0.kind.who.flatMap(BotDirector.bot(ofUID:)) }).first(where: { $0 > bots }) {
            Console.fail("the scenario expects bot \(bad), but there are \(bots) (--bots)")
        }
        let scenarioName = URL(fileURLWithPath: args["scenario"] ?? "random").deletingPathExtension().lastPathComponent

        let input = args["input"] ?? "alsa:default", output = args["output"] ?? "alsa:default"
        if let bad = SurfaceFlags.validateEndpoints(input: input, output: output) { Console.fail(bad) }
        guard let layout = LayoutType(rawValue: (args["layout"] ?? "tile").lowercased()) else { Console.fail("--layout must be TILE, SPOTLIGHT or SIDEBAR") }
        let builder = CometChatCalls.sessionSettingsBuilder
            .setTitle("CallRoom demo")
            .setSessionType(.video)
            .setLayout(layout)
            .hideChatButton(false)
            .hideShareInviteButton(false)
            .hideRecordingButton(false)
            .hideClosedCaptionButton(false)
            // Nobody in the demo could see a shared terminal (the bots watch nothing): the
            // button stays off unless asked for (--show screen-share).
            .hideScreenShareButton(true)
            .setDisplayName(args["name"] ?? "You")
            .setAudioInput(input)
            .setAudioOutput(output)
        let video = args["video"] ?? "auto"
        do { _ = try VideoSourceSpec(video) } catch { Console.fail("--video: \(error)") }
        builder.setVideoSource(video)
        do { try SurfaceFlags.apply(show: args["show"], hide: args["hide"], to: builder) } catch { Console.fail(error.message) }
        let settings = builder.build()

        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-demo-\(getpid())").path
        var config = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dataDir)
        config.logLevel = .error
        let server = CallServer(configuration: config)
        do { try server.start() } catch { Console.fail("cannot start the demo server: \(error)", code: ExitCode.failure) }
        let sessionID = "demo-room"
        let options = SDKSetup.Options(server: server.url, settingsFile: nil, appID: server.keys.appId, uid: "you",
                                       name: args["name"] ?? "You", authKey: server.keys.authKey, authToken: nil)
        let headless = args.has("headless")
        // You are the room's moderator: the operator (the demo's own server) grants the role.
        let serverURL = server.url, apiKey = server.keys.apiKey, appID = server.keys.appId
        let token: @Sendable () async throws(CometChatCallException) -> String = {
            try await SDKSetup.moderatorToken(server: serverURL, apiKey: apiKey, appID: appID, uid: "you", sessionID: sessionID)
        }
        signal(SIGPIPE, SIG_IGN)
        if args.has("ring") {
            Task { @MainActor in await ring(server: server, dataDir: dataDir, options: options, settings: builder, bots: bots, scenario: scenario,
                                            headless: headless) }
            dispatchMain()
        }
        Task { @MainActor in
            let runtime = DemoRuntime(server: server, dataDir: dataDir)
            await runtime.startBots(count: bots, sessionID: sessionID, scenario: scenario)
            ScenarioRun.start(scenario: scenario, name: scenarioName, duration: duration, report: args["report"], zero: { runtime.director?.startedAt },
                              leave: { headless ? HeadlessSession.finishNow() : CallScreenApp.finishNow() })
            if headless {
                // (With a duration, the run lasts it whatever stdin is: `< /dev/null` in CI.)
                await HeadlessSession.run(options: options, sessionID: sessionID, settings: settings, token: token, eventLog: args["event-log"],
                                          inputEndLeaves: duration == nil, cleanup: { runtime.shutdown() })
            } else {
                await CallScreenApp.run(options: options, sessionID: sessionID, settings: settings, title: "CallRoom demo",
                                        eventLog: args["event-log"], token: token, cleanup: { runtime.shutdown() })
            }
        }
        dispatchMain()
    }
}

extension DemoCommand {
    /// `--ring`: you, online on the ringing screen; Ada (bot 1) calls you; once you accept, the
    /// bots join the call's room and run the scenario there.
    @MainActor
    package static func ring(server: CallServer, dataDir: String, options: SDKSetup.Options, settings: SessionSettingsBuilder, bots: Int,
                     scenario: Scenario, headless: Bool) async {
        let runtime = DemoRuntime(server: server, dataDir: dataDir)
        guard let url = URL(string: server.url) else { return }
        let director = BotDirector(serverURL: url, appID: server.keys.appId, authKey: server.keys.authKey, sessionID: "demo-room",
                                   count: max(1, bots), scenario: scenario)
        let agent: RingAgent
        do throws(TerminalError) {
            agent = try RingAgent(options: options, settings: settings, answer: headless ? .accept : .none, screen: !headless, listening: true)
        } catch {
            runtime.shutdown()
            Console.fail(error.message, code: ExitCode.usage)
        }
        runtime.director = director
        agent.onExit = { runtime.shutdown() }
        await agent.listen(ready: {
            Task { @MainActor in
                guard let ada = await director.device(1) else { return }
                // Ada calls until you answer: declined, busy or missed, she calls again a few
                // seconds later (the idle screen says so), so the demo is never a dead end.
                for attempt in 1... {
                    ada.send(.initiateCall(receiverId: "you", receiverType: .user, type: .video, timeoutSeconds: 60))
                    // Wait (off the main queue) for how it went, then bring everyone into the call.
                    let outcome = await Task.detached { () -> (CallEventKind, String)? in
                        guard case (.call(let kind, let c, _), _)? = ada.wait(timeout: 65, { m in
                            if case .call(let k, _, _) = m { return [.accepted, .rejected, .busy, .unanswered].contains(k) }
                            return false
                        }) else { return nil }
                        return (kind, c.sessionId)
                    }.value
                    guard let (kind, sid) = outcome else { return }
                    if kind == .accepted { return await director.start(in: sid) }
                    ada.forget()
                    try? await Task.sleep(for: .seconds(attempt == 1 ? 4 : 8))
                }
            }
        })
    }
}

/// The demo's server and synthetic participants, shut down together.
@MainActor
package final class DemoRuntime {
    package let server: CallServer
    package let dataDir: String
    private var down = false

    package init(server: CallServer, dataDir: String) {
        self.server = server
        self.dataDir = dataDir
    }

    /// The synthetic participants (held here: their timeline refers to them weakly).
    package var director: BotDirector?

    /// Joins `count` synthetic participants and starts the scenario.
    package func startBots(count: Int, sessionID: String, scenario: Scenario) async {
        guard count > 0, let url = URL(string: server.url) else { return }
        let d = BotDirector(serverURL: url, appID: server.keys.appId, authKey: server.keys.authKey, sessionID: sessionID,
                            count: count, scenario: scenario)
        director = d
        await d.start()
    }

    /// Stops bots and server and removes the temporary data directory. Idempotent.
    package func shutdown() {
        guard !down else { return }
        down = true
        server.stop()
        try? FileManager.default.removeItem(atPath: dataDir)
    }
}
