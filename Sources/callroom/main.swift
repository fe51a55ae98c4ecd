import CallroomKit
import CallsCore
import Foundation

// SIGINT, SIGTERM and SIGHUP leave whatever screen is up cleanly, then exit.
TerminationSignals.install()

let topUsage = """
    callroom — a terminal call room (CallRoom \(CallRoomVersion.string))

    USAGE: callroom <command> [options]

    COMMANDS:
      demo      start a server in this process, join it with synthetic participants, show the call
      join      join a session on a CallRoom server
      call      ring someone (or a group) and join the call when they answer
      listen    stay online so calls ring here (answer, reject or busy)
      bots      fill a room on a server with synthetic participants
      share     share a terminal (a tmux pane, or a command) into a session as text
      replay    show a recorded event log on the call screen at its recorded timing (layout QA)
      devices   list audio devices (ALSA capture and playback) and cameras
      bench     measure latency, quality under loss, and CPU (runs callroom-bench; see 'callroom bench --help')
      --version print the version

    With credentials and no command ('callroom --server URL --uid UID --auth-key KEY') it runs
    'callroom listen'. Run 'callroom <command> --help' for a command's options.

    """

let argv = Array(CommandLine.arguments.dropFirst())
switch argv.first {
case "join": JoinCommand.run(Array(argv.dropFirst()))
case "call", "listen": RingCommand.run(argv[0], Array(argv.dropFirst()))
case let flag? where flag.hasPrefix("--") && flag != "--help" && flag != "--version":
    // Credentials and no command: stay online (`callroom listen`).
    RingCommand.run("listen", argv)
case "demo": DemoCommand.run(Array(argv.dropFirst()))
case "devices": DevicesCommand.run(Array(argv.dropFirst()))
case "share": ShareCommand.run(Array(argv.dropFirst()))
case "bots": BotsCommand.run(Array(argv.dropFirst()))
case "bench": BenchForward.exec(Array(argv.dropFirst()))  // benchmarks are callroom-bench's
case "replay": ReplayCommand.run(Array(argv.dropFirst()))
case "--version": Console.out("callroom \(CallRoomVersion.string)")
case nil, "--help", "-h", "help": Console.out(topUsage)
case let other?: Console.fail("unknown command '\(other)'\nRun 'callroom --help' for usage.")
}
