import CallsCore
import Foundation

/// Where a copy to the clipboard went; the call screen says exactly this, never more.
public enum ClipboardOutcome: Equatable, Sendable {
    /// A clipboard program took it and said so (exit 0): `wl-copy`, `xclip`, `xsel`.
    case tool(String)
    /// tmux's paste buffer took it (verified); `clipboard`: tmux forwards it to the outer
    /// terminal's clipboard too (its `set-clipboard` is on).
    case tmuxBuffer(clipboard: Bool)
    /// Sent as OSC 52 to a terminal that declares it accepts it (terminfo `Ms`, or a terminal
    /// known to): the terminal gives no receipt.
    case terminal
    /// Nothing here reaches a clipboard (no tmux, no display, a terminal without OSC 52).
    case unavailable

    /// The toast for an invite link copied this way.
    public func inviteToast(_ link: String) -> String {
        switch self {
        case .tool(let name): return "Invite link copied to the clipboard (\(name)): \(link)"
        case .tmuxBuffer(true): return "Invite link copied (tmux buffer and clipboard): \(link)"
        case .tmuxBuffer(false): return "Invite link in tmux's paste buffer (prefix ]); tmux's set-clipboard is off: \(link)"
        case .terminal: return "Invite link sent to the terminal's clipboard (OSC 52): \(link)"
        case .unavailable: return "No clipboard reachable from here; the invite link: \(link)"
        }
    }
}

/// Copies text to the best clipboard this process can reach, and reports which: tmux's buffer
/// inside tmux; a desktop's clipboard program when a display is there; OSC 52 to a terminal that
/// declares support. Each step is tried only where it can work, and only a verified step
/// (an exit status) is reported as copied.
///
/// Thread rules: the caller's thread (it runs a short child process).
struct Clipboard {
    var environment: [String: String] = ProcessInfo.processInfo.environment
    /// Whether the terminal declares OSC 52 (terminfo `Ms`).
    var terminalDeclaresOSC52: Bool
    /// Writes bytes to the terminal (OSC 52).
    var writeToTerminal: (String) -> Void

    /// Terminals that accept OSC 52 copies by default though their terminfo has no `Ms`.
    static let knownOSC52Terminals = ["xterm-kitty", "alacritty", "foot", "wezterm", "contour"]

    func copy(_ text: String) -> ClipboardOutcome {
        if environment["TMUX"] != nil {
            let forwards = (run("tmux", ["show-options", "-gv", "set-clipboard"]).output ?? "off")
                .trimmingCharacters(in: .whitespacesAndNewlines) != "off"
            // -w: tmux also sets the outer terminal's clipboard (OSC 52) when set-clipboard allows.
            if run("tmux", ["set-buffer"] + (forwards ? ["-w"] : []) + ["--", text]).status == 0 { return .tmuxBuffer(clipboard: forwards) }
        }
        if environment["WAYLAND_DISPLAY"] != nil, run("wl-copy", ["--", text]).status == 0 { return .tool("wl-copy") }
        if environment["DISPLAY"] != nil {
            if run("xclip", ["-selection", "clipboard"], input: text).status == 0 { return .tool("xclip") }
            if run("xsel", ["--clipboard", "--input"], input: text).status == 0 { return .tool("xsel") }
        }
        let term = environment["TERM"] ?? ""
        if terminalDeclaresOSC52 || Self.knownOSC52Terminals.contains(where: { term.hasPrefix($0) }) || environment["TERM_PROGRAM"] == "WezTerm" {
            writeToTerminal("\u{1b}]52;c;\(Data(text.utf8).base64EncodedString())\u{07}")
            return .terminal
        }
        return .unavailable
    }

    /// Runs a program found on PATH (nil status when it is not there), waiting at most 2 s.
    private func run(_ name: String, _ args: [String], input: String? = nil) -> (status: Int32?, output: String?) {
        guard let path = ChildProcess.find(name, path: environment["PATH"]) else { return (nil, nil) }
        let r = ChildProcess.run(path, args, input: input, timeout: 2)
        return (r.status, r.status == nil ? nil : r.output)
    }
}
