import CallsCore
import CallsTUI
import CometChatCallsSDK
import Foundation

/// `callroom share`: shares a terminal into a session as text — an existing tmux pane, or a
/// command run in a private tmux server of its own (tmux is the terminal emulator; its
/// `capture-pane -e` gives the grid with colours). It joins as one more device of the user,
/// presents (`onParticipantStartedScreenShare` everywhere), and sends what changed ten times a
/// second, a full grid every 5 s. Ends when the command ends, the pane goes, or on a signal.
package enum ShareCommand {
    package static let usage = """
        USAGE: callroom share SESSION_ID --server URL --uid UID (--auth-key KEY | --auth-token TOKEN)
                              [--name NAME] [--ca-file FILE | --insecure]
                              (--tmux-pane PANE | [--size COLSxROWS] -- COMMAND [ARG...])

        Shares a terminal into the session as exact text (viewers' call screens show it as a panel
        they can select and copy from). --tmux-pane shares a pane of your tmux (%3, session:0.1);
        otherwise COMMAND runs in a private tmux of --size (default 80x24), ended with it.
        Exit status: 0 when the share ends, 1 on failure, 2 on bad usage.

        """

    package static func run(_ arguments: [String]) -> Never {
        let split = arguments.firstIndex(of: "--")
        let own = split.map { Array(arguments[..<$0]) } ?? arguments
        let command = split.map { Array(arguments[arguments.index(after: $0)...]) } ?? []
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(own, valued: ["server", "uid", "name", "auth-key", "auth-token", "app-id", "tmux-pane", "size", "ca-file"],
                                       boolean: ["help", "insecure"])
        } catch { Console.fail("\(error.message)\nRun 'callroom share --help' for usage.") }
        if args.has("help") { Console.out(usage); exit(ExitCode.ok) }
        guard args.positionals.count == 1, let given = args.positionals.first else { Console.fail("share needs exactly one SESSION_ID") }
        let session = SDKSetup.requireSessionID(given)
        guard let server = args["server"] else { Console.fail("--server is required") }
        guard let uid = args["uid"] else { Console.fail("--uid is required") }
        guard (args["auth-key"] == nil) != (args["auth-token"] == nil) else { Console.fail("give exactly one of --auth-key and --auth-token") }
        guard (args["tmux-pane"] == nil) != command.isEmpty else { Console.fail("give exactly one of --tmux-pane PANE and -- COMMAND") }
        var cols = 80, rows = 24
        if let size = args["size"] {
            let p = size.split(separator: "x").compactMap { Int($0) }
            guard p.count == 2, (10...TerminalGrid.maxColumns).contains(p[0]), (3...TerminalGrid.maxRows).contains(p[1]) else {
                Console.fail("--size is COLSxROWS, 10x3 to \(TerminalGrid.maxColumns)x\(TerminalGrid.maxRows)")
            }
            (cols, rows) = (p[0], p[1])
        }
        guard TmuxPane.available else { Console.fail("callroom share needs tmux (apt-get install tmux)", code: ExitCode.failure) }
        let tmux: TmuxPane
        if let pane = args["tmux-pane"] {
            tmux = TmuxPane(socket: nil, target: pane)
            guard tmux.geometry() != nil else { Console.fail("no tmux pane \(pane) (is tmux running, and is it yours?)", code: ExitCode.failure) }
        } else {
            tmux = TmuxPane(socket: "callroom-share-\(getpid())", target: "share:0.0")
            guard tmux.start(command, columns: cols, rows: rows) else { Console.fail("tmux could not run \(command.joined(separator: " "))", code: ExitCode.failure) }
        }
        var options = SDKSetup.Options(server: server, settingsFile: nil, appID: args["app-id"], uid: uid, name: args["name"],
                                       authKey: args["auth-key"], authToken: args["auth-token"])
        options.readConnection(args)
        signal(SIGPIPE, SIG_IGN)
        Task { @MainActor in
            let sharer = Sharer(tmux: tmux, session: session, options: options)
            Sharer.current = sharer  // lives until the process exits
            await sharer.run()
        }
        dispatchMain()
    }
}

/// Joins, presents, and sends the pane's changes until it ends. Main thread.
@MainActor
package final class Sharer {
    package let tmux: TmuxPane
    package let session: String
    package let options: SDKSetup.Options
    private var bridge: ListenerBridge?
    package static var current: Sharer?
    private var loop: ShareLoop?
    private var stopping = false

    package init(tmux: TmuxPane, session: String, options: SDKSetup.Options) {
        self.tmux = tmux
        self.session = session
        self.options = options
    }

    package func run() async {
        do {
            _ = try await SDKSetup.initAndLogin(options)
            let settings = CometChatCalls.sessionSettingsBuilder.setSessionType(.voice).setAudioInput("null").setAudioOutput("none")
                .startAudioMuted(true).setDisplayName((options.name ?? options.uid) + "'s terminal").build()
            try await CometChatCalls.joinSession(sessionID: session, callSetting: settings)
        } catch {
            tmux.stop()
            Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
        }
        let bridge = ListenerBridge { [weak self] e in
            MainActor.assumeIsolated {
                switch e {
                case .sessionLeft, .sessionTimedOut: self?.stop(0)
                case .connectionClosed: self?.stop(1)
                default: break
                }
            }
        }
        bridge.register()
        self.bridge = bridge
        CallSession.shared.setPresenting(true)
        TerminationSignals.onSignal = { [weak self] _ in self?.stop(0) }
        TerminationSignals.beforeForcedExit = { [weak self] in self?.tmux.stop() }
        Console.out("callroom share: sharing \(tmux.socket == nil ? "pane \(tmux.target)" : "the command") into \(session); Ctrl-C stops")
        tick()
    }

    /// Captures the pane and sends what changed, every 100 ms, on its own queue: Foundation's
    /// `Process` needs the main queue free to see a child exit (a capture on main never returns).
    private func tick() {
        let loop = ShareLoop(tmux: tmux, send: { CallSession.shared.sendScreenShare($0) }) { [weak self] in
            DispatchQueue.main.async { MainActor.assumeIsolated { self?.stop(0) } }  // the command ended, the pane went
        }
        self.loop = loop
        loop.start()
    }

    private func stop(_ code: Int32) {
        guard !stopping else { return }
        stopping = true
        loop?.cancel()
        tmux.stop()
        CallSession.shared.setPresenting(false)
        CallSession.shared.leaveSession()
        Console.out("callroom share: stopped")
        // The leave is confirmed within a round trip; exit then at the latest.
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) { ProcessExit.now(code) }
    }
}
