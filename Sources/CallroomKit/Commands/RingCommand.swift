import CallsCore
import CallsTUI
import CometChatCallsSDK
import CometChatSDK
import Foundation

/// `callroom call RECEIVER …` and `callroom listen …`: ringing calls from the terminal.
/// Headless, every `CometChatCallDelegate` callback and every request's result is one JSON
/// line on stdout; once a call is accepted the session runs as `callroom join --headless`
/// does (its listener callbacks too), and ending either side ends the call.
package enum RingCommand {
    package static let callUsage = """
        USAGE: callroom call RECEIVER (--server URL | --settings FILE) --uid UID [--name NAME]
                             (--auth-key KEY | --auth-token TOKEN) [--app-id ID] [--group] [--video]
                             [--timeout SECONDS] [--input SPEC] [--output SPEC] [--headless] [--ca-file FILE | --insecure]

        Rings RECEIVER (a uid, or a guid with --group) and, once someone answers, joins the call:
        the screen shows who you are calling and for how long ([c] or Esc cancels), then the call
        screen; if nobody answers it says why (declined, busy, no answer).

        OPTIONS:
          --group              RECEIVER is a group: every online member rings
          --name NAME          your display name in the call (default: your user's name)
        \(SDKSetup.tlsUsage)
          --video              a video call (default audio)
          --timeout SECONDS    how long it rings before it is unanswered (5…300, default 45)
          --input/--output     audio endpoints, as for 'callroom join'
          --headless           no screen: every callback as one JSON line on stdout; SIGINT/SIGTERM
                               while ringing cancels; during the call, end of input leaves and ends it

        Exit status: 0 after a call that connected and ended (either side hung up, or a signal
        left it), 3 connection lost, 5 removed, 6 the server shut down, 4 when it did not connect
        (rejected, busy, unanswered, cancelled), 1 on failure, 2 on bad usage.

        """

    package static let listenUsage = """
        USAGE: callroom listen (--server URL | --settings FILE) --uid UID [--name NAME] (--auth-key KEY | --auth-token TOKEN)
                               [--app-id ID] [--input SPEC] [--output SPEC] [--headless [--auto-accept | --auto-reject | --busy]]
                               [--ca-file FILE | --insecure]

        Stays online as UID: calls ring here. The screen shows you online; an incoming call takes
        over with the caller, the type and [a] Accept / [r] Reject / [b] Busy (and rings the bell,
        a tmux message inside tmux, a desktop notification where notify-send works); accepting
        opens the call screen, and leaving it returns here. [h] shows your call history, [q] quits.
        Headless, every callback is one JSON line on stdout.

        OPTIONS:
          --auto-accept        answer the first call, join it, exit 0 when it ends (either side
                               hangs up, SIGINT/SIGTERM, or a 'leave' line: the call's headless
                               commands are read from stdin, whose end leaves nothing)
          --auto-reject        reject every call
          --busy               answer every call busy
          (none)               print incoming calls until SIGINT/SIGTERM
          --name NAME          your display name in the calls you answer (default: your user's name)
        \(SDKSetup.tlsUsage)

        """

    /// Exit status when a call did not connect.
    package static let notConnected = ExitCode.notConnected

    package static func run(_ command: String, _ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["ca-file", "server", "settings", "uid", "name", "auth-key", "auth-token", "app-id", "timeout", "input", "output"],
                                       boolean: ["insecure", "headless", "help", "group", "video", "auto-accept", "auto-reject", "busy"])
        } catch { Console.fail("\(error.message)\nRun 'callroom \(command) --help' for usage.") }
        let calling = command == "call"
        if args.has("help") { Console.out(calling ? callUsage : listenUsage); exit(ExitCode.ok) }
        if calling {
            guard args.positionals.count == 1 else { Console.fail("call needs exactly one RECEIVER\nRun 'callroom call --help' for usage.") }
        } else {
            guard args.positionals.isEmpty else { Console.fail("listen takes no arguments\nRun 'callroom listen --help' for usage.") }
            guard [args.has("auto-accept"), args.has("auto-reject"), args.has("busy")].filter({ $0 }).count <= 1 else {
                Console.fail("give at most one of --auto-accept, --auto-reject and --busy")
            }
        }
        guard (args["server"] == nil) != (args["settings"] == nil) else { Console.fail("give exactly one of --server and --settings") }
        guard let uid = args["uid"] ?? (args["auth-token"] != nil ? "" : nil) else { Console.fail("--uid is required") }
        guard (args["auth-key"] == nil) != (args["auth-token"] == nil) else { Console.fail("give exactly one of --auth-key and --auth-token") }
        let timeout = Int(args["timeout"] ?? "45") ?? 0
        guard (5...300).contains(timeout) else { Console.fail("--timeout must be 5…300 seconds") }
        let input = args["input"] ?? "alsa:default", output = args["output"] ?? "alsa:default"
        if let bad = SurfaceFlags.validateEndpoints(input: input, output: output) { Console.fail(bad) }
        var options = SDKSetup.Options(server: args["server"], settingsFile: args["settings"], appID: args["app-id"], uid: uid,
                                       name: args["name"], authKey: args["auth-key"], authToken: args["auth-token"])
        options.readConnection(args)
        let settings = CometChatCalls.sessionSettingsBuilder.setAudioInput(input).setAudioOutput(output)
        if let name = SDKSetup.displayName(args) { settings.setDisplayName(name) }
        let answer: RingAgent.Answer = args.has("auto-accept") ? .accept : args.has("auto-reject") ? .reject : args.has("busy") ? .busy : .none
        signal(SIGPIPE, SIG_IGN)
        let headless = args.has("headless")
        if !headless && answer != .none { Console.fail("--auto-accept, --auto-reject and --busy are for --headless (on the screen, keys answer)") }
        Task { @MainActor in
            let agent: RingAgent
            do throws(TerminalError) {
                agent = try RingAgent(options: options, settings: settings, answer: answer, screen: !headless, listening: !calling)
            } catch {
                Console.fail(error.message, code: ExitCode.usage)
            }
            if calling {
                let call = Call(receiverId: args.positionals[0], callType: args.has("video") ? .video : .audio,
                                receiverType: args.has("group") ? .group : .user)
                await agent.call(call, timeout: timeout)
            } else {
                await agent.listen()
            }
        }
        dispatchMain()
    }
}
