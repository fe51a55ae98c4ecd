import CallsTUI
import CallsTransport
import CometChatCallsSDK
import Foundation

/// `callroom join --headless`: prints every listener callback as one JSON line on stdout and
/// reads commands from stdin, one per line. Runs on the main queue.
@MainActor
package final class HeadlessSession {
    private static var current: HeadlessSession?

    /// Registers listeners (before joining, as documented, so the join callbacks are seen),
    /// logs in, joins, and keeps the session running until it ends. `cleanup` runs before exit.
    /// `inputEndLeaves`: the end of stdin leaves (false: it only ends the commands — a run
    /// with a duration lasts it under `< /dev/null`, as CI runs it). `beforeLeaving` runs when
    /// this side leaves of its own accord, with the leave to run once it is done (see
    /// `CallScreenController.beforeLeaving`).
    package static func run(options: SDKSetup.Options, sessionID: String, settings: SessionSettingsBuilder.SessionSettings,
                    token: (@Sendable () async throws(CometChatCallException) -> String)? = nil,
                    loggedIn: Bool = false, eventLog: String? = nil, inputEndLeaves: Bool = true,
                    beforeLeaving: (@MainActor (@escaping @Sendable @MainActor () -> Void) -> Void)? = nil,
                    cleanup: (@MainActor () -> Void)? = nil) async {
        EventLogFile.open(eventLog)
        let runner = HeadlessSession()
        runner.inputEndLeaves = inputEndLeaves
        runner.beforeLeaving = beforeLeaving
        runner.onExit = cleanup
        runner.start()
        current = runner
        do throws(CometChatCallException) {
            if !loggedIn { _ = try await SDKSetup.initAndLogin(options) }
            if let token {
                try await CometChatCalls.joinSession(callToken: try await token(), callSetting: settings)
            } else {
                try await CometChatCalls.joinSession(sessionID: sessionID, callSetting: settings)
            }
            runner.reportAudioNotices()
            // Input ended, a signal came or stdout closed while joining: leave now that we can.
            if runner.leaving { return CallSession.shared.leaveSession() }
            runner.joined()
        } catch {
            cleanup?()
            Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
        }
    }

    private var bridge: ListenerBridge?
    private var leaving = false
    private var inputEndLeaves = true
    /// Runs once, when this side leaves of its own accord (not when the other side ended it).
    private var beforeLeaving: (@MainActor (@escaping @Sendable @MainActor () -> Void) -> Void)?
    /// Commands read before the session was joined, run in order once it is (nil: joined) —
    /// `printf 'mute\n' | callroom join … --headless` mutes, as a script means it to.
    private var early: [String]? = []
    /// At most this many wait (more: each answered with an error).
    static let maxEarlyCommands = 256
    /// Runs before the process exits (the demo stops its server here).
    package var onExit: (@MainActor () -> Void)?

    package func start() {
        let bridge = ListenerBridge { [weak self] event in
            MainActor.assumeIsolated { self?.handle(event) }
        }
        bridge.register()
        self.bridge = bridge
        DescriptorReader.startLines(STDIN_FILENO, name: "callroom.stdin") { event in
            DispatchQueue.main.async { MainActor.assumeIsolated { HeadlessSession.current?.received(event) } }
        }
        // SIGINT, SIGTERM and SIGHUP leave cleanly (others see onParticipantLeft at once, not a ghost).
        TerminationSignals.onSignal = { [weak self] _ in self?.leave() }
        TerminationSignals.beforeForcedExit = { [weak self] in self?.onExit?() }
        // Whoever reads stdout went away (`| head -1`): leave cleanly, then exit 0.
        Console.onOutputClosed = { [weak self] in self?.leave() }
    }

    /// Reports audio fallbacks (no sound card) on stderr, after the join opened the devices.
    private func reportAudioNotices() {
        for n in CallSession.shared.audioNotices { Console.err("callroom: \(n)") }
    }

    /// Prints one listener callback as a JSON line; after the session ends, one more line says
    /// how (`{"event":"sessionEnding","ending":"removed","message":"You were removed by Grace"}`)
    /// and the process exits with that ending's status.
    package func handle(_ event: CallEvent) {
        Console.out(event.jsonLine())
        let fallback: SessionEnding
        switch event {
        case .sessionLeft: fallback = .left
        case .sessionTimedOut: fallback = .timedOut
        case .connectionClosed: fallback = .connectionLost
        default: return
        }
        let ending = endingOverride ?? CallSession.shared.sessionEnding ?? fallback
        Console.outJSON(["event": "sessionEnding", "ending": ending.code, "message": ending.sentence])
        finish(ending.exitStatus)
    }

    /// How the app says the session ended (the other person hung up), over the SDK's `left`.
    private var endingOverride: SessionEnding?

    /// Leaves the current headless session now (a scenario's duration is over).
    package static func finishNow() { current?.leave() }

    /// Leaves the current headless session because of `ending` (see `CallScreenController.leave(because:)`).
    package static func leave(because ending: SessionEnding) {
        guard let s = current else { return CallSession.shared.leaveSession() }
        guard !s.leaving else { return }  // we left first: the call's end is its echo
        s.endingOverride = ending
        s.leave()
    }

    /// The session is over (its media threads joined, every line written straight to the
    /// descriptors): the cleanup runs, then the process ends (`ProcessExit`: no atexit teardown
    /// under a library thread still winding down).
    private func finish(_ code: Int32) -> Never {
        onExit?()
        ProcessExit.now(ScenarioRun.exitStatus(code))
    }

    /// A line of standard input, or its end (which leaves cleanly, once, unless the run has a
    /// duration; an unfinished last line is not a command).
    private func received(_ event: DescriptorReader.LineEvent) {
        switch event {
        case .line(let line): run(line.trimmingCharacters(in: .whitespaces))
        case .end:
            guard inputEndLeaves else { return }
            // (While joining, after the commands before it: `printf 'mute\n' | callroom join …`.)
            if early != nil { early?.append("leave") } else { leave() }
        }
    }

    private func run(_ line: String) {
        if early != nil {
            guard early?.count ?? 0 < Self.maxEarlyCommands else {
                return HeadlessCommands.printJSON(["error": ["code": "NOT_JOINED", "message": "still joining; \(Self.maxEarlyCommands) commands wait already"]])
            }
            early?.append(line)
            return
        }
        let words = line.split(separator: " ")
        if let first = words.first, ["leave", "leave-session"].contains(first), words.count == 1 { return leave() }
        HeadlessCommands.run(line)
    }

    /// The session is joined: the commands that came meanwhile run now, in order (a `leave`
    /// among them after those before it).
    private func joined() {
        let waiting = early ?? []
        early = nil
        for line in waiting where !leaving { run(line) }
    }

    private func leave() {
        guard !leaving else { return }
        leaving = true
        // The other side ended it (an ending override): nothing to tell them first.
        guard endingOverride == nil, let first = beforeLeaving else { return CallSession.shared.leaveSession() }
        beforeLeaving = nil
        first { CallSession.shared.leaveSession() }
    }
}
