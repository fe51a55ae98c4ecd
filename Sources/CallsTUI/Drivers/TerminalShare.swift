import CallsCore
import Foundation

/// A terminal the call screen's share action can share.
public struct ShareChoice: Equatable, Sendable {
    public enum Target: Equatable, Sendable {
        /// A new shell: a new window of your tmux when the call screen runs in one, else a
        /// private tmux server you attach to from another terminal.
        case newShell
        /// An existing pane of your tmux session (`%3`).
        case pane(String)
    }
    public var target: Target
    public var label: String
}

/// Why a terminal share could not start.
public enum TerminalShareError: Error, Equatable, Sendable, CustomStringConvertible {
    case noTmux
    case cannotStart(String)

    public var description: String {
        switch self {
        case .noTmux: return "sharing a terminal needs tmux (apt-get install tmux)"
        case .cannotStart(let what): return "could not start \(what)"
        }
    }
}

/// The call screen's own terminal share: the tmux pane it reads, the capture loop, and whether it
/// started a private tmux server (stopped with the share) or a window of yours (left open).
///
/// Thread rules: a value made and stopped on the main thread; its loop runs on its own queue.
public struct TerminalShare: Sendable {
    public let tmux: TmuxPane
    public let loop: ShareLoop
    /// What is shared, for the screen ("a new shell in tmux window 3", "pane %2 (htop)").
    public let what: String
    /// The private server to attach to, when the share runs one (`tmux -L NAME attach`).
    public let privateServer: String?

    /// The choices for this process's environment: a new shell, then (inside tmux) every pane of
    /// the current session but the call screen's own.
    public static func choices(environment env: [String: String] = ProcessInfo.processInfo.environment) -> [ShareChoice] {
        let inTmux = env["TMUX"] != nil
        var out = [ShareChoice(target: .newShell, label: inTmux ? "a new shell (new tmux window)"
                                                                : "a new shell (private tmux: attach from another terminal)")]
        guard inTmux, let own = env["TMUX_PANE"],
              let r = try? TmuxPane.run(["list-panes", "-s", "-t", own, "-F",
                                         "#{pane_id}\t#{window_index}:#{window_name}\t#{pane_current_command}\t#{pane_width}x#{pane_height}"]),
              r.status == 0 else { return out }
        for line in r.output.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 4, f[0] != own else { continue }
            out.append(ShareChoice(target: .pane(f[0]), label: "pane \(f[0])  window \(f[1])  \(f[2])  \(f[3])"))
        }
        return out
    }

    /// Opens `choice` and starts the capture loop, which hands each frame to `send` and calls
    /// `ended` (on its queue) when the pane goes. The caller presents (`setPresenting(true)`).
    public static func start(_ choice: ShareChoice, environment env: [String: String] = ProcessInfo.processInfo.environment,
                             send: @escaping @Sendable (ScreenShareFrame) -> Void,
                             ended: @escaping @Sendable () -> Void) throws(TerminalShareError) -> TerminalShare {
        guard TmuxPane.available else { throw .noTmux }
        let tmux: TmuxPane, what: String, server: String?
        switch choice.target {
        case .newShell where env["TMUX"] != nil:
            // A window of the user's own tmux (its default shell): theirs to type in and to close.
            guard let r = try? TmuxPane.run(["new-window", "-d", "-P", "-F", "#{pane_id} #{window_index}", "-n", "shared"]), r.status == 0,
                  let id = r.output.split(separator: " ").first.map(String.init), id.hasPrefix("%") else {
                throw .cannotStart("a tmux window")
            }
            let window = r.output.split(separator: " ").dropFirst().first.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? "?"
            tmux = TmuxPane(socket: nil, target: id)
            what = "a new shell in tmux window \(window) (\"shared\"; switch to it to type)"
            server = nil
        case .newShell:
            let name = "callroom-share-\(getpid())"
            let shell = env["SHELL"].flatMap { $0.isEmpty ? nil : $0 } ?? "/bin/sh"
            let pane = TmuxPane(socket: name, target: "share:0.0")
            guard pane.start([shell], columns: 80, rows: 24) else { throw .cannotStart("a private tmux running \(shell)") }
            tmux = pane
            what = "a new shell: attach with  tmux -L \(name) attach"
            server = name
        case .pane(let id):
            tmux = TmuxPane(socket: nil, target: id)
            guard tmux.geometry() != nil else { throw .cannotStart("pane \(id) (it is gone)") }
            what = "tmux pane \(id)"
            server = nil
        }
        let loop = ShareLoop(tmux: tmux, send: send, ended: ended)
        loop.start()
        return TerminalShare(tmux: tmux, loop: loop, what: what, privateServer: server)
    }

    /// Stops capturing; a private server goes with it (a window of yours stays).
    public func stop() {
        loop.cancel()
        if privateServer != nil { tmux.stop() }
    }
}
