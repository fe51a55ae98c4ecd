import CallsCore
import CallsTUI
import CometChatCallsSDK
import Foundation

/// `callroom replay EVENTS.jsonl`: the call screen re-driven from a recorded event log
/// (`--event-log`, the screen's export, `join --headless` output) at its recorded timing — no
/// server, no media — for layout QA of a real call at any terminal size.
package enum ReplayCommand {
    package static let usage = """
        USAGE: callroom replay EVENTS.jsonl [--speed X] [--paused]

        Shows a recorded call on the call screen: every listener callback in the file (JSON lines
        as --event-log, the event log's export or 'join --headless' write them) arrives at its
        recorded time. No server or media is needed; the panels, overlays, layouts and sizes all
        work as in a live call.

        OPTIONS:
          --speed X      play X times as fast (0.1…100, default 1)
          --paused       start paused

        KEYS (besides the call screen's own): space pauses and resumes, . steps one event while
        paused, + and - double and halve the speed, q quits.

        """

    package static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do { args = try ArgumentScanner(arguments, valued: ["speed"], boolean: ["help", "paused"]) } catch {
            Console.fail("\(error.message)\nRun 'callroom replay --help' for usage.")
        }
        if args.has("help") { Console.out(usage); ProcessExit.now(ExitCode.ok) }
        guard args.positionals.count == 1, let path = args.positionals.first else { Console.fail("replay needs exactly one event log file") }
        guard let speed = Double(args["speed"] ?? "1"), (0.1...100).contains(speed) else { Console.fail("--speed must be 0.1…100") }
        let events: [(CallEvent, Date?)]
        do throws(ReplayLog.Failure) { events = try ReplayLog.read(path) } catch { Console.fail(error.message, code: ExitCode.failure) }
        Task { @MainActor in
            let terminal: NcursesTerminal
            do throws(TerminalError) { terminal = try NcursesTerminal() } catch { Console.fail(error.message, code: ExitCode.usage) }
            let player = ReplayPlayer(events: events, title: URL(fileURLWithPath: path).lastPathComponent, terminal: terminal,
                                      speed: speed, paused: args.has("paused"))
            ReplayPlayer.current = player
            player.start()
        }
        dispatchMain()
    }
}

/// A recorded event log read whole: every line that is a callback, with its time. Lines that
/// are not (a headless client's own lines, blank ones) are skipped; a file with none is an error.
package enum ReplayLog {
    package struct Failure: Error { package let message: String }
    /// At most this much is read (a day of a busy call is a few MB).
    package static let maxBytes = 64 << 20

    package static func read(_ path: String) throws(Failure) -> [(CallEvent, Date?)] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Failure(message: "cannot read \(path)") }
        defer { try? handle.close() }
        let data = handle.readData(ofLength: maxBytes + 1)
        guard data.count <= maxBytes else { throw Failure(message: "\(path) is larger than \(maxBytes >> 20) MB") }
        var out: [(CallEvent, Date?)] = []
        var skipped = 0
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            if let r = CallEvent.recorded(String(line)) { out.append(r) } else { skipped += 1 }
        }
        guard !out.isEmpty else { throw Failure(message: "no call events in \(path) (\(skipped) other line\(skipped == 1 ? "" : "s"))") }
        return out
    }
}

/// Plays recorded events into a call screen at their recorded pace. Main thread only.
@MainActor
package final class ReplayPlayer {
    /// The one playing (held for the life of the process).
    package static var current: ReplayPlayer?
    private let events: [(CallEvent, Date?)]
    private let controller: CallScreenController
    private let name: String
    private var index = 0
    private var speed: Double
    private var paused: Bool
    /// Bumped whenever the schedule changes (pause, speed, step): a stale timer does nothing.
    private var generation = 0

    package init(events: [(CallEvent, Date?)], title: String, terminal: NcursesTerminal, speed: Double, paused: Bool) {
        self.events = events
        self.speed = speed
        self.paused = paused
        name = title
        controller = CallScreenController(driver: terminal, title: title)
    }

    package func start() {
        let c = controller
        c.summarySeconds = 3600  // the recorded call's summary stays until a key
        c.onFinished = { [weak self] _ in self?.quit() }
        c.inputInterceptor = { [weak self] input in self?.key(input) ?? false }
        TerminationSignals.onSignal = { [weak self] _ in self?.quit() }
        TerminationSignals.beforeForcedExit = { c.stop() }
        c.start()
        showStatus()
        schedule()
    }

    /// Transport keys; the rest go to the call screen.
    private func key(_ input: TerminalInput) -> Bool {
        switch input {
        case .char(" "): paused.toggle(); schedule()
        case .char("."): if paused, index < events.count { deliver() }
        case .char("+"): speed = min(100, speed * 2); schedule()
        case .char("-"): speed = max(0.1, speed / 2); schedule()
        case .char("q"), .char("Q"), .interrupt: quit()
        default: return false
        }
        showStatus()
        return true
    }

    /// The terminal restored, the process ends.
    private func quit() -> Never {
        controller.stop()
        ProcessExit.now(ExitCode.ok)
    }

    private func schedule() {
        generation += 1
        guard !paused, index < events.count else { return showStatus() }
        let gen = generation
        let delay = gap(before: index) / speed
        DispatchQueue.main.asyncAfter(deadline: .now() + delay) { [weak self] in
            MainActor.assumeIsolated {
                guard let self, gen == self.generation else { return }
                self.deliver()
                self.schedule()
            }
        }
    }

    /// Seconds between event `i - 1` and event `i` as recorded (0 for the first, or without
    /// times; at most 10 s: a long silence is not worth waiting through).
    private func gap(before i: Int) -> Double {
        guard i > 0, let a = events[i - 1].1, let b = events[i].1 else { return 0 }
        return min(10, max(0, b.timeIntervalSince(a)))
    }

    private func deliver() {
        controller.replay(events[index].0)
        index += 1
        showStatus()
    }

    private func showStatus() {
        let state = index >= events.count ? "over: q quits" : paused ? "paused: space plays, . steps" : "\(speed == speed.rounded() ? String(Int(speed)) : String(format: "%.2g", speed))x"
        controller.setTitle("REPLAY \(index)/\(events.count) \(state) \u{2014} \(name)")
    }
}
