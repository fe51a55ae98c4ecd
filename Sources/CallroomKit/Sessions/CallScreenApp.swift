import CallsCore
import CallsTUI
import CometChatCallsSDK
import Foundation

/// The interactive call screen: ncurses UI over `CallSession.shared`, joined through the
/// documented API with the screen as the call container.
@MainActor
package enum CallScreenApp {
    private static var controller: CallScreenController?

    /// Joins and shows the call until the user leaves; then prints the call's summary on stdout
    /// (after the terminal is restored). `token` gives a call token instead of generating one
    /// (the demo joins you as the moderator). `cleanup` runs before the process exits;
    /// `sessionOver` as soon as the session is over, before the summary waits for a key;
    /// `beforeLeaving` when you leave (`CallScreenController.beforeLeaving`).
    package static func run(options: SDKSetup.Options, sessionID: String, settings: SessionSettingsBuilder.SessionSettings,
                    title: String, eventLog: String? = nil, token: (@Sendable () async throws(CometChatCallException) -> String)? = nil,
                    loggedIn: Bool = false, cleanup: (@MainActor () -> Void)? = nil,
                    beforeLeaving: ((@escaping @Sendable @MainActor () -> Void) -> Void)? = nil,
                    sessionOver: (@MainActor () -> Void)? = nil, finished: (@MainActor (Int32, CallSummary) -> Void)? = nil) async {
        // --event-log FILE: every callback also as a JSON line (opened before the screen takes over).
        EventLogFile.open(eventLog)
        let terminal: NcursesTerminal
        do throws(TerminalError) { terminal = try NcursesTerminal() } catch {
            cleanup?()
            Console.fail(error.message, code: ExitCode.usage)
        }
        let c = CallScreenController(driver: terminal, title: title)
        controller = c
        c.onSessionOver = { _ in sessionOver?() }
        c.beforeLeaving = beforeLeaving
        c.onFinished = { code in
            let summary = c.summary
            c.stop()
            cleanup?()
            // A caller that goes on (the ringing screen) gets the code and the summary; otherwise
            // the summary is printed, and the process exits.
            if let finished { return finished(code, summary) }
            Console.out(summary.lines.joined(separator: "\n"))
            ProcessExit.now(ScenarioRun.exitStatus(code))
        }
        // A signal leaves at once, without the summary screen (the summary is still printed).
        TerminationSignals.onSignal = { _ in finishNow() }
        TerminationSignals.beforeForcedExit = { c.stop(); cleanup?() }
        c.start()
        do throws(CometChatCallException) {
            if !loggedIn { _ = try await SDKSetup.initAndLogin(options) }
            c.setStatus("joining…")
            if let token {
                try await CometChatCalls.joinSession(callToken: try await token(), callSetting: settings, container: c)
            } else {
                try await CometChatCalls.joinSession(sessionID: sessionID, callSetting: settings, container: c)
            }
            for n in CallSession.shared.audioNotices { c.show(notice: n) }
        } catch {
            c.stop()
            cleanup?()
            Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
        }
    }

    /// Leaves now and exits without waiting on the summary (a scenario's duration is over).
    package static func finishNow() {
        guard let c = controller else { return CallSession.shared.leaveSession() }
        c.summarySeconds = 0
        c.quit()
    }

    /// Leaves the open call screen's session because of `ending` (the other person hung up).
    package static func leave(because ending: SessionEnding) {
        guard let c = controller else { return CallSession.shared.leaveSession() }
        c.leave(because: ending)
    }
}
