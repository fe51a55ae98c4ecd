import CallsCore
import CallsServer
import CometChatCallsSDK
import Foundation

/// `callroom demo`: a whole room in one process — an in-process server on loopback with a
/// temporary data directory, synthetic participants that speak, and you, on the call screen.
enum DemoCommand {
    static let usage = """
        USAGE: callroom demo [--bots N] [--input SPEC] [--output SPEC] [--name NAME] [--layout L] [--event-log FILE] [--headless]

        Starts a CallRoom server inside this process (loopback, temporary data directory), joins
        N synthetic participants that speak in bursts of tone, and joins you to the room.

        OPTIONS:
          --bots N          synthetic participants, 0…20 (default 2)
          --input SPEC      your microphone (default alsa:default; null without a sound card)
          --output SPEC     your speaker (default alsa:default; null without a sound card)
          --name NAME       your display name (default "You")
          --layout L        TILE, SPOTLIGHT or SIDEBAR (default TILE)
          --event-log FILE  also write every listener callback to FILE as JSON lines
          --headless        no screen: print every listener callback as JSON lines, read commands
                            (mute, unmute, leave) from stdin, as 'callroom join --headless'

        """

    static let botNames = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Claude Shannon",
                           "Hedy Lamarr", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth", "Margaret Hamilton"]

    static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["bots", "input", "output", "name", "layout", "event-log"], boolean: ["headless", "help"])
        } catch { Console.fail("\(error.message)\nRun 'callroom demo --help' for usage.") }
        if args.has("help") { Console.out(usage); exit(ExitCode.ok) }
        if let extra = args.positionals.first { Console.fail("unexpected argument '\(extra)'") }
        guard let bots = Int(args["bots"] ?? "2"), (0...20).contains(bots) else { Console.fail("--bots must be 0…20") }

        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("callroom-demo-\(getpid())").path
        var config = ServerConfiguration(host: "127.0.0.1", port: 0, mediaPort: 0, dataDir: dataDir)
        config.logLevel = .error
        let server = CallServer(configuration: config)
        do { try server.start() } catch { Console.fail("cannot start the demo server: \(error)", code: ExitCode.failure) }
        let sessionID = "demo-room"
        guard let layout = LayoutType(rawValue: (args["layout"] ?? "tile").lowercased()) else { Console.fail("--layout must be TILE, SPOTLIGHT or SIDEBAR") }
        let settings = CometChatCalls.sessionSettingsBuilder
            .setTitle("CallRoom demo")
            .setSessionType(.voice)
            .setLayout(layout)
            .hideChatButton(false)
            .hideShareInviteButton(false)
            .setDisplayName(args["name"] ?? "You")
            .setAudioInput(args["input"] ?? "alsa:default")
            .setAudioOutput(args["output"] ?? "alsa:default")
            .build()
        let options = SDKSetup.Options(server: server.url, settingsFile: nil, appID: server.keys.appId, uid: "you",
                                       name: args["name"] ?? "You", authKey: server.keys.authKey, authToken: nil)
        let headless = args.has("headless")
        signal(SIGPIPE, SIG_IGN)
        Task { @MainActor in
            let runtime = DemoRuntime(server: server, dataDir: dataDir)
            await runtime.startBots(count: bots, sessionID: sessionID)
            if headless {
                await HeadlessSession.run(options: options, sessionID: sessionID, settings: settings, cleanup: { runtime.shutdown() })
            } else {
                await CallScreenApp.run(options: options, sessionID: sessionID, settings: settings, title: "CallRoom demo",
                                        eventLog: args["event-log"], cleanup: { runtime.shutdown() })
            }
        }
        dispatchMain()
    }
}

/// The demo's server and synthetic participants, shut down together.
@MainActor
final class DemoRuntime {
    let server: CallServer
    let dataDir: String
    private(set) var bots: [CallsClient] = []
    private var down = false

    init(server: CallServer, dataDir: String) {
        self.server = server
        self.dataDir = dataDir
    }

    /// Joins `count` bots; each speaks a distinct tone in bursts. A bot that fails is reported
    /// on stderr and skipped (the demo goes on).
    func startBots(count: Int, sessionID: String) async {
        guard let url = URL(string: server.url) else { return }
        for i in 0..<count {
            let name = DemoCommand.botNames[i % DemoCommand.botNames.count]
            let bot = CallsClient(serverURL: url, appID: server.keys.appId, eventQueue: DispatchQueue(label: "callroom.bot\(i)")) { _ in }
            let hz = 220 + 110 * (i % 6)
            let settings = SessionSettingsBuilder()
                .setSessionType(.voice)
                .setAudioInput("tone:\(hz):\(700 + 150 * (i % 4)):\(500 + 300 * (i % 3))")
                .setAudioOutput("none")
                .build()
            do {
                _ = try await bot.login(uid: "bot-\(i + 1)", authKey: server.keys.authKey, name: name)
                let token = try await bot.generateToken(sessionID: sessionID)
                try await bot.join(callToken: token, settings: settings)
                bots.append(bot)
            } catch {
                Console.err("callroom: synthetic participant \(name) could not join: \(error.errorDescription)")
            }
        }
    }

    /// Stops bots and server and removes the temporary data directory. Idempotent.
    func shutdown() {
        guard !down else { return }
        down = true
        server.stop()
        try? FileManager.default.removeItem(atPath: dataDir)
    }
}
