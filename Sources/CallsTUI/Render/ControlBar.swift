import CallsCore
import CometChatCallsSDK

/// The control bar: the buttons the session settings leave visible, in the documented order,
/// each with its key, plus Help. Labels degrade with the width one button at a time, lowest
/// priority first (terminal share, live stream, transcription, captions, camera, record, invite,
/// layout, chat, people, hand, video, mute, help, leave): to the short word (`[c] Cam`); then the whole bar drops its brackets (`c Cam`) and
/// labels go, in the same order, to key + symbol (`c⟲`); past that, buttons are left out in the
/// same order. Leave and Help are never left out; keys of buttons left out still work. A button
/// whose label changes (Mute/Unmute, Chat/Chat (3)) is as wide as its widest label, so no button
/// moves when one changes (the mouse finds them where they were). Pure; any thread.
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
        /// The other labels this button can show (its other state): its width is the widest.
        public var otherFull: [String] = []
        public var otherShort: [String] = []
    }

    /// Label steps, widest first: `[m] Mute`, `[m] Mute` with the short word, `m Mute`, `m✖`.
    public enum Style: Int, Sendable, CaseIterable { case full, bracketShort, short, symbol }

    /// The visible buttons for the model, in display order.
    public static func specs(_ m: CallViewModel, glyphs g: GlyphSet) -> [Spec] {
        let s = m.settings
        let unicode = g.isUnicode
        func sym(_ u: String, _ a: String) -> String { unicode ? u : a }
        var out: [Spec] = []
        if !s.hideToggleAudioButton {
            out.append(Spec(item: .builtIn(.toggleAudio), key: "m", full: m.isMuted ? "Unmute" : "Mute", short: m.isMuted ? "Unmute" : "Mute",
                            symbol: m.isMuted ? sym("✖", "x") : sym("♪", "~"), priority: 2, otherFull: ["Unmute"], otherShort: ["Unmute"]))
        }
        // A voice session has no video controls.
        if !s.hideToggleVideoButton && s.sessionType == .video {
            out.append(Spec(item: .builtIn(.toggleVideo), key: "v", full: m.isVideoPaused ? "Start video" : "Stop video", short: "Video",
                            symbol: m.isVideoPaused ? sym("▨", "%") : sym("▣", "#"), priority: 3, otherFull: ["Start video"]))
        }
        if !s.hideSwitchCameraButton && s.sessionType == .video {
            out.append(Spec(item: .builtIn(.switchCamera), key: "c", full: "Camera", short: "Cam", symbol: sym("⟲", "@"), priority: 11))
        }
        if !s.hideRaiseHandButton {
            out.append(Spec(item: .builtIn(.raiseHand), key: "h", full: m.isHandRaised ? "Lower hand" : "Raise hand", short: "Hand",
                            symbol: sym("▲", "^"), priority: 4, otherFull: ["Lower hand"]))
        }
        if !s.hideChangeLayoutButton {
            out.append(Spec(item: .builtIn(.changeLayout), key: "y", full: "Layout", short: "Lay", symbol: sym("▦", "%"), priority: 8))
        }
        if !s.hideParticipantListButton {
            out.append(Spec(item: .builtIn(.participantList), key: "p", full: "People", short: "Ppl", symbol: sym("☰", "="), priority: 5))
        }
        if !s.hideChatButton {
            // Up to 99 shown; more is "99+" (the slot is as wide as that).
            let n = m.chatUnread, count = n > 99 ? "99+" : "\(n)"
            out.append(Spec(item: .builtIn(.chat), key: "t", full: n > 0 ? "Chat (\(count))" : "Chat", short: n > 0 ? "Chat(\(count))" : "Chat",
                            symbol: sym("✉", "+") + (n > 0 ? count : ""), priority: 6,
                            otherFull: ["Chat (99+)"], otherShort: ["Chat(99+)"]))
        }
        if !s.hideShareInviteButton {
            out.append(Spec(item: .builtIn(.shareInvite), key: "s", full: "Invite", short: "Inv", symbol: sym("⇪", ">"), priority: 9))
        }
        if !s.hideRecordingButton {
            let recording = m.isRecording
            out.append(Spec(item: .builtIn(.recordingToggle), key: "r", full: recording ? "Stop rec" : "Record", short: "Rec",
                            symbol: sym("●", "*"), priority: 10, otherFull: ["Stop rec"]))
        }
        if !s.hideStreamingButton && m.serverFeatures.contains(.streaming) {
            out.append(Spec(item: .builtIn(.streamingToggle), key: "b", full: m.streamState == nil ? "Go live" : "End live", short: "Live",
                            symbol: sym("◉", "O"), priority: 14, otherFull: ["End live"]))
        }
        if !s.hideClosedCaptionButton && m.serverFeatures.contains(.transcription) {
            out.append(Spec(item: .builtIn(.closedCaptions), key: "a", full: m.captionsShown ? "Captions off" : "Captions", short: "CC",
                            symbol: sym("㏄", "C"), priority: 12, otherFull: ["Captions off"]))
        }
        if !s.hideTranscriptionButton && m.serverFeatures.contains(.transcription) {
            let on = m.transcriptionLanguage != nil
            out.append(Spec(item: .builtIn(.transcriptionToggle), key: "g", full: on ? "Stop transcript" : "Transcribe", short: "Tx",
                            symbol: sym("✎", "T"), priority: 13, otherFull: ["Stop transcript"]))
        }
        if !s.hideScreenShareButton && m.canShareTerminal {
            out.append(Spec(item: .builtIn(.screenShareToggle), key: "d", full: m.sharing == nil ? "Share term" : "Stop share",
                            short: m.sharing == nil ? "Share" : "Unshare", symbol: sym("▤", "T"), priority: 15, otherFull: ["Stop share"], otherShort: ["Unshare"]))
        }
        if !s.hideLeaveSessionButton {
            let confirm = m.pending == .leave
            out.append(Spec(item: .builtIn(.leaveSession), key: "l", full: confirm ? "Leave?" : "Leave",
                            short: confirm ? "Leave?" : "Leave", symbol: confirm ? "?" : sym("✕", "X"), priority: 0))  // (last before Help: moves nothing)
        }
        out.append(Spec(item: .help, key: "?", full: "Help", short: "Help", symbol: "", priority: 1))
        return out
    }

    /// The label in `style`; `padded`: with spaces to the widest label the button can show.
    static func label(_ s: Spec, _ style: Style, padded: Bool = false) -> String {
        func pad(_ text: String, _ others: [String]) -> String {
            guard padded else { return text }
            let slot = ([text] + others).map(DisplayWidth.of).max() ?? 0
            return text + String(repeating: " ", count: max(0, slot - DisplayWidth.of(text)))
        }
        switch style {
        case .full: return "[\(s.key)] " + pad(s.full, s.otherFull)
        case .bracketShort: return "[\(s.key)] " + pad(s.short, s.otherShort)
        case .short: return "\(s.key) " + pad(s.short, s.otherShort)
        case .symbol: return "\(s.key)\(s.symbol)"  // (a bar this tight keeps no slots: gaps would read as missing buttons)
        }
    }

    /// The buttons laid out on a bar `width` cells wide at row `y`: the widest labels that fit,
    /// then fewer buttons by priority. Help sits at the right end.
    public static func layout(_ m: CallViewModel, width: Int, y: Int, glyphs: GlyphSet) -> [CallScreenRenderer.Button] {
        // Stable slots (each button as wide as its widest label) when they cost nothing: the
        // same buttons in the same styles as without them; else the plain labels.
        let all = specs(m, glyphs: glyphs)
        let stable = plan(all, width: width, padded: true), plain = plan(all, width: width, padded: false)
        let padded = stable.specs.count == plain.specs.count && stable.styles == plain.styles
        let (specs, styles) = padded ? stable : plain
        return place(specs, styles, width: width, y: y, padded: padded)
    }

    /// The widest labels that fit, then fewer buttons by priority.
    private static func plan(_ all: [Spec], width: Int, padded: Bool) -> (specs: [Spec], styles: [Style]) {
        var specs = all
        var styles = Array(repeating: Style.full, count: specs.count)
        func total() -> Int {
            zip(specs, styles).reduce(0) { $0 + DisplayWidth.of(label($1.0, $1.1, padded: padded)) } + barGap(styles) * max(0, specs.count - 1) + 2
        }
        // One button at a time, lowest priority first, to its short word; then the whole bar
        // without brackets (one look per bar), and again one at a time to key + symbol; only
        // then are buttons left out (never Leave or Help).
        let byPriority = specs.indices.sorted { specs[$0].priority > specs[$1].priority }
        for i in byPriority where total() > width { styles[i] = .bracketShort }
        if total() > width { styles = styles.map { _ in .short } }
        for i in byPriority where total() > width { styles[i] = .symbol }
        while total() > width, let drop = specs.indices.filter({ specs[$0].priority > 1 }).max(by: { specs[$0].priority < specs[$1].priority }) {
            specs.remove(at: drop)
            styles.remove(at: drop)
        }
        return (specs, styles)
    }

    private static func place(_ specs: [Spec], _ styles: [Style], width: Int, y: Int, padded: Bool) -> [CallScreenRenderer.Button] {
        let gap = barGap(styles)
        var out: [CallScreenRenderer.Button] = []
        var x = 1
        for (s, style) in zip(specs, styles) where s.item != .help {
            let text = label(s, style, padded: padded)
            let w = DisplayWidth.of(text)
            guard x + w <= width else { break }
            out.append(CallScreenRenderer.Button(id: s.item.id, key: s.key, label: text, rect: Rect(x: x, y: y, width: w, height: 1)))
            x += w + gap
        }
        if let i = specs.firstIndex(where: { $0.item == .help }) {
            let text = label(specs[i], styles[i])
            let w = DisplayWidth.of(text)
            let hx = max(x, width - 1 - w)
            if hx + w <= width {
                out.append(CallScreenRenderer.Button(id: specs[i].item.id, key: specs[i].key, label: text, rect: Rect(x: hx, y: y, width: w, height: 1)))
            }
        }
        return out
    }

    /// Two spaces between bracketed labels, one between bare ones.
    static func barGap(_ styles: [Style]) -> Int { styles.allSatisfy { $0.rawValue <= Style.bracketShort.rawValue } ? 2 : 1 }

}
