import CallsTUI
import CometChatCallsSDK
import Foundation

/// The interactive call screen: ncurses UI over `CallSession.shared`, joined through the
/// documented API with the screen as the call container.
@MainActor
enum CallScreenApp {
    private static var controller: CallScreenController?
    private static var eventLogBridge: ListenerBridge?
    private static var signalSources: [DispatchSourceSignal] = []

    /// Joins and shows the call until the user leaves; then prints the call's summary on stdout
    /// (after the terminal is restored). `token` gives a call token instead of generating one
    /// (the demo joins you as the moderator). `cleanup` runs before the process exits;
    /// `sessionOver` as soon as the session is over, before the summary waits for a key.
    static func run(options: SDKSetup.Options, sessionID: String, settings: SessionSettingsBuilder.SessionSettings,
                    title: String, eventLog: String? = nil, token: (@Sendable () async throws(CometChatCallException) -> String)? = nil,
                    loggedIn: Bool = false, cleanup: (@MainActor () -> Void)? = nil,
                    sessionOver: (@MainActor () -> Void)? = nil, finished: (@MainActor (Int32) -> Void)? = nil) async {
        // --event-log FILE: every callback also as a JSON line (opened before the screen takes over).
        if let path = eventLog {
            guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
                Console.fail("cannot write the event log \(path)")
            }
            let bridge = ListenerBridge { e in file.write(Data((e.jsonLine() + "\n").utf8)) }
            bridge.register()
            eventLogBridge = bridge
        }
        let terminal: NcursesTerminal
        do throws(TerminalError) { terminal = try NcursesTerminal() } catch {
            cleanup?()
            Console.fail(error.message, code: ExitCode.usage)
        }
        let c = CallScreenController(driver: terminal, title: title)
        controller = c
        c.onSessionOver = { _ in sessionOver?() }
        c.onFinished = { code in
            let summary = c.summary
            c.stop()
            cleanup?()
            // A caller that goes on (the ringing screen) gets the code; otherwise the summary, and exit.
            if let finished { return finished(code) }
            Console.out(summary.lines.joined(separator: "\n"))
            exit(code)
        }
        installSignalHandlers { c.summarySeconds = 0; c.quit() }
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

    /// SIGINT/SIGTERM/SIGHUP leave the call cleanly; a second signal (or 3 s) exits at once. The
    /// terminal is restored on either path (`NcursesTerminal` also registers `atexit`).
    static func installSignalHandlers(_ leave: @escaping @MainActor () -> Void) {
        signalSources = SignalLeave.install(leave) { controller?.stop() }
    }
}

/// SIGINT, SIGTERM and SIGHUP as "leave": the first runs `leave`, a second one (or 3 s later)
/// runs `giveUp` and exits 130. Main thread.
@MainActor
enum SignalLeave {
    static func install(_ leave: @escaping @MainActor () -> Void, giveUp: @escaping @MainActor () -> Void) -> [DispatchSourceSignal] {
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .main)
            var count = 0
            src.setEventHandler {
                MainActor.assumeIsolated {
                    count += 1
                    if count > 1 { giveUp(); exit(130) }
                    leave()
                    DispatchQueue.main.asyncAfter(deadline: .now() + 3) { MainActor.assumeIsolated { giveUp(); exit(130) } }
                }
            }
            src.resume()
            sources.append(src)
        }
        return sources
    }
}
