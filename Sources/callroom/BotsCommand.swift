import CallsCore
import CometChatCallsSDK
import Foundation

/// `callroom bots`: fills a room on any running server with synthetic participants.
enum BotsCommand {
    static let usage = """
        USAGE: callroom bots --server URL --session ID --auth-key KEY [--app-id ID] [--count N]
                             [--scenario NAME|FILE] [--seed N] [--duration SECONDS]

        Joins N synthetic participants (default 3) to SESSION on the server, speaking bundled
        speech clips and running the scenario (default: random from --seed). Runs until
        --duration elapses or SIGINT/SIGTERM, then leaves cleanly.

        """

    static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["server", "session", "auth-key", "app-id", "count", "scenario", "seed", "duration"],
                                       boolean: ["help"])
        } catch { Console.fail("\(error.message)\nRun 'callroom bots --help' for usage.") }
        if args.has("help") { Console.out(usage); exit(ExitCode.ok) }
        guard let server = args["server"], let session = args["session"], let key = args["auth-key"] else {
            Console.fail("--server, --session and --auth-key are required\nRun 'callroom bots --help' for usage.")
        }
        guard let count = Int(args["count"] ?? "3"), (1...20).contains(count) else { Console.fail("--count must be 1…20") }
        guard let seed = UInt64(args["seed"] ?? "1") else { Console.fail("--seed must be a whole number") }
        let duration = args["duration"].flatMap(Double.init)
        if args["duration"] != nil && (duration ?? 0) <= 0 { Console.fail("--duration must be a positive number of seconds") }
        let scenario: Scenario
        do { scenario = try BotDirector.loadScenario(args["scenario"], bots: count, seed: seed) } catch { Console.fail(error.message) }
        var s = server
        if !s.contains("://") { s = "http://" + s }
        guard let url = URL(string: s), url.host != nil else { Console.fail("'\(server)' is not a server URL") }
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
            guard !d.bots.isEmpty else { exit(ExitCode.failure) }
            let finish: @MainActor () -> Void = { Task { await d.stop(); exit(ExitCode.ok) } }
            BotsSignals.install(finish)
            if let duration { DispatchQueue.main.asyncAfter(deadline: .now() + duration) { MainActor.assumeIsolated { finish() } } }
        }
        dispatchMain()
    }
}

@MainActor
enum BotsSignals {
    static var sources: [DispatchSourceSignal] = []
    static func install(_ handler: @escaping @MainActor () -> Void) {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .main)
            s.setEventHandler { MainActor.assumeIsolated { handler() } }
            s.resume()
            sources.append(s)
        }
    }
}
