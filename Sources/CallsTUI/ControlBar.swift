import CometChatCallsSDK

/// The control bar: the buttons the session settings leave visible, in the documented order,
/// each with its key, plus Help. Labels degrade with the width, in three steps:
/// full (`[m] Mute`), short (`m Mute`), then key + symbol (`m✖`); past that, buttons are
/// left out by priority (lowest first: camera, record, invite, layout, chat, people, hand,
/// video, mute). Leave and Help are never left out; keys of buttons left out still work.
/// Pure; any thread.
public enum ControlBar {
    /// A button's id: a built-in button, or Help.
    public enum Item: Equatable, Sendable {
        case builtIn(BuiltInButton)
        case help
        public var id: String {
            switch self {
            case .builtIn(let b): return b.rawValue
            case .help: return "help"
            }
        }
    }

    /// One button: key and its three labels.
    public struct Spec: Equatable, Sendable {
        public var item: Item
        public var key: Unicode.Scalar
        public var full: String
        public var short: String
        public var symbol: String
        /// Lower is dropped later.
        public var priority: Int
    }

    /// Label steps, widest first.
    public enum Style: Int, Sendable, CaseIterable { case full, short, symbol }

    /// The visible buttons for the model, in display order.
    public static func specs(_ m: CallViewModel, glyphs g: GlyphSet) -> [Spec] {
        let s = m.settings
        let unicode = g.isUnicode
        func sym(_ u: String, _ a: String) -> String { unicode ? u : a }
        var out: [Spec] = []
        if !s.hideToggleAudioButton {
            out.append(Spec(item: .builtIn(.toggleAudio), key: "m", full: m.isMuted ? "Unmute" : "Mute", short: m.isMuted ? "Unmute" : "Mute",
                            symbol: m.isMuted ? sym("✖", "x") : sym("♪", "~"), priority: 2))
        }
        // A voice session has no video controls.
        if !s.hideToggleVideoButton && s.sessionType == .video {
            out.append(Spec(item: .builtIn(.toggleVideo), key: "v", full: m.isVideoPaused ? "Start video" : "Stop video", short: "Video",
                            symbol: m.isVideoPaused ? sym("▨", "%") : sym("▣", "#"), priority: 3))
        }
        if !s.hideSwitchCameraButton && s.sessionType == .video {
            out.append(Spec(item: .builtIn(.switchCamera), key: "c", full: "Camera", short: "Cam", symbol: sym("⟲", "@"), priority: 11))
        }
        if !s.hideRaiseHandButton {
            out.append(Spec(item: .builtIn(.raiseHand), key: "h", full: m.isHandRaised ? "Lower hand" : "Raise hand", short: "Hand",
                            symbol: sym("▲", "^"), priority: 4))
        }
        if !s.hideChangeLayoutButton {
            out.append(Spec(item: .builtIn(.changeLayout), key: "y", full: "Layout", short: "Lay", symbol: sym("▦", "%"), priority: 8))
        }
        if !s.hideParticipantListButton {
            out.append(Spec(item: .builtIn(.participantList), key: "p", full: "People", short: "Ppl", symbol: sym("☰", "="), priority: 5))
        }
        if !s.hideChatButton {
            let n = m.chatUnread
            out.append(Spec(item: .builtIn(.chat), key: "t", full: n > 0 ? "Chat (\(n))" : "Chat", short: n > 0 ? "Chat(\(n))" : "Chat",
                            symbol: sym("✉", "+") + (n > 0 ? "\(n)" : ""), priority: 6))
        }
        if !s.hideShareInviteButton {
            out.append(Spec(item: .builtIn(.shareInvite), key: "s", full: "Invite", short: "Inv", symbol: sym("⇪", ">"), priority: 9))
        }
        if !s.hideRecordingButton {
            let recording = m.tiles.contains(where: \.isRecording)
            out.append(Spec(item: .builtIn(.recordingToggle), key: "r", full: recording ? "Stop rec" : "Record", short: "Rec",
                            symbol: sym("●", "*"), priority: 10))
        }
        if !s.hideLeaveSessionButton {
            let confirm = m.pending == .leave
            out.append(Spec(item: .builtIn(.leaveSession), key: "l", full: confirm ? "Leave?" : "Leave",
                            short: confirm ? "Leave?" : "Leave", symbol: confirm ? "?" : sym("✕", "X"), priority: 0))
        }
        out.append(Spec(item: .help, key: "?", full: "Help", short: "Help", symbol: "", priority: 1))
        return out
    }

    static func label(_ s: Spec, _ style: Style) -> String {
        switch style {
        case .full: return "[\(s.key)] \(s.full)"
        case .short: return "\(s.key) \(s.short)"
        case .symbol: return "\(s.key)\(s.symbol)"
        }
    }

    static func gap(_ style: Style) -> Int { style == .full ? 2 : 1 }

    /// The buttons laid out on a bar `width` cells wide at row `y`: the widest labels that fit,
    /// then fewer buttons by priority. Help sits at the right end.
    public static func layout(_ m: CallViewModel, width: Int, y: Int, glyphs: GlyphSet) -> [CallScreenRenderer.Button] {
        var specs = specs(m, glyphs: glyphs)
        func total(_ list: [Spec], _ style: Style) -> Int {
            list.reduce(0) { $0 + DisplayWidth.of(label($1, style)) } + gap(style) * max(0, list.count - 1) + 2
        }
        var style: Style = .full
        while true {
            if let fit = Style.allCases.first(where: { total(specs, $0) <= width }) { style = fit; break }
            // Leave out the lowest-priority button that may go.
            guard let drop = specs.enumerated().filter({ $0.element.priority > 1 }).max(by: { $0.element.priority < $1.element.priority }) else {
                style = .symbol
                break
            }
            specs.remove(at: drop.offset)
        }
        var out: [CallScreenRenderer.Button] = []
        var x = 1
        let help = specs.last?.item == .help ? specs.removeLast() : nil
        for s in specs {
            let text = label(s, style)
            let w = DisplayWidth.of(text)
            guard x + w <= width else { break }
            out.append(CallScreenRenderer.Button(id: s.item.id, key: s.key, label: text, rect: Rect(x: x, y: y, width: w, height: 1)))
            x += w + gap(style)
        }
        if let h = help {
            let text = label(h, style == .symbol ? .symbol : style)
            let w = DisplayWidth.of(text)
            let hx = max(x, width - 1 - w)
            if hx + w <= width {
                out.append(CallScreenRenderer.Button(id: h.item.id, key: h.key, label: text, rect: Rect(x: hx, y: y, width: w, height: 1)))
            }
        }
        return out
    }
}
