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

    /// Joins and shows the call until the user leaves. `cleanup` runs before the process exits.
    static func run(options: SDKSetup.Options, sessionID: String, settings: SessionSettingsBuilder.SessionSettings,
                    title: String, eventLog: String? = nil, cleanup: (@MainActor () -> Void)? = nil) async {
        // --event-log FILE: every callback also as a JSON line (opened before the screen takes over).
        if let path = eventLog {
            guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
                Console.fail("cannot write the event log \(path)")
            }
            let bridge = ListenerBridge { e in file.write(Data((e.jsonLine() + "\n").utf8)) }
            bridge.register()
            eventLogBridge = bridge
        }
        let terminal = NcursesTerminal()
        let c = CallScreenController(driver: terminal, title: title)
        controller = c
        c.onFinished = { code in
            c.stop()
            cleanup?()
            exit(code)
        }
        installSignalHandlers { c.quit() }
        c.start()
        do throws(CometChatCallException) {
            _ = try await SDKSetup.initAndLogin(options)
            c.setStatus("joining…")
            try await CometChatCalls.joinSession(sessionID: sessionID, callSetting: settings, container: c)
            let notices = CallSession.shared.audioNotices
            if !notices.isEmpty { c.show(notice: notices.joined(separator: "; ")) }
        } catch {
            c.stop()
            cleanup?()
            Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
        }
    }

    /// SIGINT/SIGTERM leave the call cleanly; a second signal (or 3 s) exits at once. The
    /// terminal is restored on either path (`NcursesTerminal` also registers `atexit`).
    static func installSignalHandlers(_ leave: @escaping @MainActor () -> Void) {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .main)
            var count = 0
            src.setEventHandler {
                MainActor.assumeIsolated {
                    count += 1
                    if count > 1 { controller?.stop(); exit(130) }
                    leave()
                    DispatchQueue.main.asyncAfter(deadline: .now() + 3) { controller?.stop(); exit(130) }
                }
            }
            src.resume()
            signalSources.append(src)
        }
    }
}
