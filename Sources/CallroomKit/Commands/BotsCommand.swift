import CallsCore
import CometChatCallsSDK
import Foundation

/// `callroom bots`: fills a room on any running server with synthetic participants.
package enum BotsCommand {
    package static let usage = """
        USAGE: callroom bots --server URL --session ID --auth-key KEY [--app-id ID] [--count N]
                             [--scenario NAME|FILE] [--seed N] [--duration SECONDS]
               callroom bots --server URL[,URL…] --auth-key KEY --rooms R --per-room N --duration S
                             [--app-id ID] [--server-pid PID[,PID…]] [--join-concurrency N] [--srtp] [--record]

        Joins N synthetic participants (default 3) to SESSION on the server, speaking bundled
        speech clips and running the scenario (default: random from --seed). Runs until
        --duration elapses or SIGINT/SIGTERM, then leaves cleanly.

        With --rooms: a load generator. R rooms of N bots each join (16 at a time, or
        --join-concurrency), send real Opus/RTP at 50 packets a second each and receive
        everything the relay forwards; it reports delivered packets, loss, arrival jitter and
        relay delay; with --server-pid also the server's CPU time per forwarded packet and
        memory per participant, and the generator's and the whole machine's CPU time (both
        share this machine's cores with the server). With --srtp every packet is protected
        with the bot's SRTP key (AES-128-GCM, as real clients send; 17 bytes larger), to
        compare the relay's cost with and without. --record (implies --srtp) has each room's
        moderator bot ask the server to record the room before the run. A cluster: give every
        node's URL (bot i signals through node i mod n, as a load balancer would spread them;
        each bot's media goes to its room's node, as `joined` names it) and every node's pid —
        the server figures are the nodes' sums. Last line:
          delivered=N loss_pct=X jitter_ms_p50=Y relay_delay_ms_p99=Z

        """

    package static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["server", "session", "auth-key", "app-id", "count", "scenario", "seed", "duration",
                                                           "rooms", "per-room", "server-pid", "join-concurrency"],
                                       boolean: ["help", "srtp", "record"])
        } catch { Console.fail("\(error.message)\nRun 'callroom bots --help' for usage.") }
        if args.has("help") { Console.out(usage); exit(ExitCode.ok) }
        // The load generator lives in `callroom-bench` (not in the shipped command): forwarded.
        if args["rooms"] != nil { BenchForward.exec(["load"] + arguments) }
        guard let server = args["server"], let session = args["session"], let key = args["auth-key"] else {
            Console.fail("--server, --session and --auth-key are required\nRun 'callroom bots --help' for usage.")
        }
        guard let count = Int(args["count"] ?? "3"), (1...20).contains(count) else { Console.fail("--count must be 1…20") }
        guard let seed = UInt64(args["seed"] ?? "1") else { Console.fail("--seed must be a whole number") }
        let duration = args["duration"].flatMap(Double.init)
        if args["duration"] != nil && (duration ?? 0) <= 0 { Console.fail("--duration must be a positive number of seconds") }
        let scenario: Scenario
        do { scenario = try BotDirector.loadScenario(args["scenario"], bots: count, seed: seed) } catch { Console.fail(error.message) }
        guard let url = SDKSetup.serverURL(server) else { Console.fail("'\(server)' is not a server URL") }
        signal(SIGPIPE, SIG_IGN)
        Task { @MainActor in
            var appID = args["app-id"] ?? ""
            if appID.isEmpty {
                do throws(CometChatCallException) { appID = try await SDKSetup.fetchAppID(server: url) } catch {
                    Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
                }
            }
            let d = BotDirector(serverURL: url, appID: appID, authKey: key, sessionID: session, count: count, scenario: scenario)
            await d.start()
            Console.out("callroom bots: \(d.bots.count) synthetic participants in \(session)")
            guard !d.bots.isEmpty else { ProcessExit.now(ExitCode.failure) }
            let finish: @MainActor () -> Void = { Task { await d.stop(); ProcessExit.now(ExitCode.ok) } }
            TerminationSignals.onSignal = { _ in finish() }
            if let duration { DispatchQueue.main.asyncAfter(deadline: .now() + duration) { MainActor.assumeIsolated { finish() } } }
        }
        dispatchMain()
    }
}

