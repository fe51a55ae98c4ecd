import CallsAudio
import CallsVideo
import Foundation

/// `callroom devices`: the ALSA capture and playback devices, with the names `alsa:NAME` takes,
/// and the cameras (`--video v4l2:PATH`).
package enum DevicesCommand {
    package static let usage = """
        USAGE: callroom devices [--json]

        Lists ALSA PCM devices for --input alsa:NAME (capture) and --output alsa:NAME (playback),
        and V4L2 cameras for --video v4l2:PATH (auto: the first for FRONT, the second for REAR).
        Besides ALSA: file:PATH.wav, tone:HZ[:ON_MS:OFF_MS] and null are always available; besides
        cameras: pattern, avatar, file:PATH.y4m and none.

        """

    package static func run(_ arguments: [String]) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") { Console.out(usage); exit(ExitCode.ok) }
        if let bad = arguments.first(where: { $0 != "--json" }) { Console.fail("unexpected argument '\(bad)'") }
        let devices = ALSADeviceList.devices()
        let cameras = V4L2Camera.devices()
        if arguments.contains("--json") {
            let list: [[String: Any]] = devices.map {
                ["name": $0.name, "description": $0.description, "capture": $0.canCapture, "playback": $0.canPlay]
            }
            let cams: [[String: Any]] = cameras.map { ["path": $0.path, "card": $0.card, "driver": $0.driver] }
            HeadlessCommands.printJSON(["devices": list, "cameras": cams])
            exit(ExitCode.ok)
        }
        for (title, keep) in [("Capture devices (--input alsa:NAME)", \ALSADeviceInfo.canCapture),
                              ("Playback devices (--output alsa:NAME)", \ALSADeviceInfo.canPlay)] {
            Console.out(title)
            let list = devices.filter { $0[keyPath: keep] }
            if list.isEmpty { Console.out("  (none)") }
            for d in list { Console.out("  \(d.name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(d.description)") }
        }
        Console.out("Always available: file:PATH.wav, tone:HZ[:ON_MS:OFF_MS], null")
        Console.out("Cameras (--video v4l2:PATH)")
        if cameras.isEmpty { Console.out("  (none)") }
        for c in cameras { Console.out("  \(c.path.padding(toLength: 28, withPad: " ", startingAt: 0)) \(c.card) (\(c.driver))") }
        Console.out("Always available: pattern, avatar, file:PATH.y4m, none")
        exit(ExitCode.ok)
    }
}
