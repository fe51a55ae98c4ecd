import CometChatCallsSDK
import Foundation

/// Draws the call screen: header, participant tiles, control bar and the event log.
///
/// ```
/// ┌ header: title · timer · participants · status ───────────────────────────┐
/// │ tiles (grid adapting to count and size)            │ event log (newest   │
/// │                                                    │ at the bottom)      │
/// └ control bar: [m] Mute  [l] Leave ─────────────────────────────────────────┘
/// ```
/// The event log sits on the right when the terminal is at least 100 columns wide, else below
/// the tiles. Pure: the same model and size always give the same screen (golden-testable).
public enum CallScreenRenderer {
    /// A clickable region of the control bar.
    public struct Button: Equatable, Sendable {
        public var id: String
        public var key: Unicode.Scalar
        public var label: String
        public var rect: Rect
    }

    public struct Layout: Equatable, Sendable {
        public var header: Rect?
        public var tiles: Rect
        public var log: Rect
        public var controls: Rect?
        public var buttons: [Button]
    }

    public static let meterWidth = 10

    /// How many meter cells a level fills (-60 dBFS → 0, 0 dBFS → `meterWidth`).
    public static func meterCells(_ dbfs: Float?) -> Int {
        guard let d = dbfs else { return 0 }
        return max(0, min(meterWidth, Int(((d + 60) / 60 * Float(meterWidth)).rounded())))
    }

    public static func layout(for model: CallViewModel, width: Int, height: Int) -> Layout {
        var top = 0
        var bottom = height
        var header: Rect?
        if !model.hideHeaderPanel { header = Rect(x: 0, y: 0, width: width, height: 1); top = 1 }
        var controls: Rect?
        var buttons: [Button] = []
        if !model.hideControlPanel {
            controls = Rect(x: 0, y: height - 1, width: width, height: 1)
            bottom = height - 1
            var x = 1
            for (button, key, label) in model.buttons {
                let text = "[\(key)] \(label)"
                // Buttons that do not fit are left out (narrow terminals); keys still work.
                guard x + text.count <= width - 1 else { break }
                buttons.append(Button(id: button.rawValue, key: key, label: label, rect: Rect(x: x, y: height - 1, width: text.count, height: 1)))
                x += text.count + 2
            }
        }
        let body = Rect(x: 0, y: top, width: width, height: bottom - top)
        if width >= 100 {
            let logWidth = max(36, width * 2 / 5)
            return Layout(header: header, tiles: Rect(x: 0, y: body.y, width: width - logWidth, height: body.height),
                          log: Rect(x: width - logWidth, y: body.y, width: logWidth, height: body.height),
                          controls: controls, buttons: buttons)
        }
        let logHeight = max(4, body.height / 3)
        return Layout(header: header, tiles: Rect(x: 0, y: body.y, width: width, height: body.height - logHeight),
                      log: Rect(x: 0, y: body.maxY - logHeight, width: width, height: logHeight),
                      controls: controls, buttons: buttons)
    }

    public static func render(_ model: CallViewModel, width: Int, height: Int, unicode: Bool = true) -> ScreenBuffer {
        var b = ScreenBuffer(width: width, height: height, unicode: unicode)
        if model.pictureInPicture { drawPictureInPicture(model, into: &b); return b }
        let l = layout(for: model, width: width, height: height)
        if let h = l.header { drawHeader(model, into: &b, rect: h) }
        switch model.layout {
        case .tile: drawTiles(model, into: &b, rect: l.tiles)
        case .spotlight: drawSpotlight(model, into: &b, rect: l.tiles)
        case .sidebar: drawSidebar(model, into: &b, rect: l.tiles)
        }
        if model.participantListVisible {
            drawParticipantList(model, into: &b, rect: l.log)
        } else {
            switch model.panel {
            case .chat: drawChat(model, into: &b, rect: l.log)
            case .help: drawHelp(model, into: &b, rect: l.log)
            case .settings: drawSettings(model, into: &b, rect: l.log)
            case .log: if !model.logHidden { drawLog(model, into: &b, rect: l.log) }
            }
        }
        if let c = l.controls { drawControls(model, l.buttons, into: &b, rect: c) }
        return b
    }

    static func timer(_ model: CallViewModel) -> String {
        guard let start = model.joinedAt else { return "--:--" }
        let s = max(0, Int(model.now.timeIntervalSince(start)))
        return String(format: "%02d:%02d", s / 60, s % 60)
    }

    private static func drawHeader(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        b.fill(rect, style: CellStyle(reverse: true))
        var text = " \(m.title)"
        if !m.settings.hideSessionTimer { text += "  ·  \(timer(m))" }
        text += "  ·  \(m.tiles.count) participant\(m.tiles.count == 1 ? "" : "s")  ·  \(m.status)"
        if m.isMuted { text += "  ·  YOU ARE MUTED" }
        if m.tiles.contains(where: \.isRecording) && !m.settings.hideRecordingStatusIndicator { text += "  ·  ● REC" }
        b.put(text, x: rect.x, y: rect.y, style: CellStyle(bold: true, reverse: true), maxWidth: rect.width)
    }

    private static func drawTiles(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard let area = tileArea(m, &b, rect) else { return }
        let n = m.tiles.count
        var cols = Int(Double(n).squareRoot().rounded(.up))
        while cols > 1 && area.width / cols < 18 { cols -= 1 }
        let rows = Int((Double(n) / Double(cols)).rounded(.up))
        let tileW = area.width / cols
        let tileH = max(3, area.height / rows)
        for (i, t) in m.tiles.enumerated() {
            let r = Rect(x: area.x + (i % cols) * tileW, y: area.y + (i / cols) * tileH, width: tileW, height: tileH)
            guard r.maxY <= area.maxY else { break }
            drawTile(t, m, into: &b, rect: r)
        }
    }

    /// Short state badges for a tile: hand order, pinned, sharing, camera off, dominant.
    static func badges(_ t: CallViewModel.Tile, _ m: CallViewModel) -> String {
        var out: [String] = []
        if let n = m.handOrder(of: t) { out.append("hand #\(n)") }
        if t.isPinned { out.append("pinned") }
        if t.isPresenting { out.append("sharing") }
        if t.isVideoPaused && m.settings.sessionType == .video { out.append("cam off") }
        if m.dominantPID == t.pid { out.append("dominant") }
        if let q = t.quality, q != .good { out.append("net \(q.rawValue)") }
        return out.joined(separator: " · ")
    }

    private static func drawTile(_ t: CallViewModel.Tile, _ m: CallViewModel, into b: inout ScreenBuffer, rect r: Rect) {
        let border = t.isSpeaking ? CellStyle(fg: .green, bold: true) : CellStyle(dim: !t.isYou)
        b.box(r, title: t.initials, style: border)
        let inner = r.width - 2
        var y = r.y + 1
        guard y < r.maxY - 1 else { return }
        b.put(t.name + (t.isYou ? " (you)" : ""), x: r.x + 1, y: y, style: CellStyle(bold: true), maxWidth: inner)
        y += 1
        guard y < r.maxY - 1 else { return }
        let mic = t.isMuted ? "MUTED" : (t.isSpeaking ? "speaking" : "mic on")
        b.put(mic, x: r.x + 1, y: y, style: CellStyle(fg: t.isMuted ? .red : (t.isSpeaking ? .green : .normal)), maxWidth: inner)
        y += 1
        guard y < r.maxY - 1 else { return }
        let filled = meterCells(t.isMuted ? nil : t.level)
        let full: String = b.unicode ? "█" : "#"
        let empty: String = b.unicode ? "·" : "."
        let meter = String(repeating: full, count: filled) + String(repeating: empty, count: meterWidth - filled)
        b.put(meter, x: r.x + 1, y: y, style: CellStyle(fg: .green), maxWidth: inner)
        y += 1
        let badge = badges(t, m)
        guard y < r.maxY - 1, !badge.isEmpty else { return }
        b.put(badge, x: r.x + 1, y: y, style: CellStyle(fg: .yellow), maxWidth: inner)
    }

    private static func tileArea(_ m: CallViewModel, _ b: inout ScreenBuffer, _ rect: Rect) -> Rect? {
        guard rect.width >= 4, rect.height >= 3 else { return nil }
        var area = rect
        if let n = m.notice {
            b.put("! \(n)", x: rect.x + 1, y: rect.y, style: CellStyle(fg: .yellow), maxWidth: rect.width - 2)
            area = Rect(x: rect.x, y: rect.y + 1, width: rect.width, height: rect.height - 1)
        }
        if m.tiles.isEmpty {
            b.put("Waiting for the server…", x: area.x + 2, y: area.y + 1, style: CellStyle(dim: true), maxWidth: area.width - 4)
            return nil
        }
        return area
    }

    /// Spotlight: the main participant large, the others in a strip below.
    private static func drawSpotlight(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard let area = tileArea(m, &b, rect), let main = m.mainTile else { return }
        let others = m.tiles.filter { $0.pid != main.pid }
        let stripH = others.isEmpty || area.height < 12 ? 0 : 6
        drawTile(main, m, into: &b, rect: Rect(x: area.x, y: area.y, width: area.width, height: area.height - stripH))
        guard stripH > 0 else { return }
        let w = max(18, area.width / max(1, others.count))
        let fit = min(others.count, area.width / w)
        for (i, t) in others.prefix(fit).enumerated() {
            drawTile(t, m, into: &b, rect: Rect(x: area.x + i * w, y: area.maxY - stripH, width: w, height: stripH))
        }
        if fit < others.count { b.put(" +\(others.count - fit) more ", x: area.maxX - 10, y: area.maxY - stripH, style: CellStyle(bold: true)) }
    }

    /// Sidebar: the main participant on the left, the others stacked in a column on the right.
    private static func drawSidebar(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard let area = tileArea(m, &b, rect), let main = m.mainTile else { return }
        let others = m.tiles.filter { $0.pid != main.pid }
        let sideW = others.isEmpty || area.width < 40 ? 0 : max(20, area.width / 3)
        drawTile(main, m, into: &b, rect: Rect(x: area.x, y: area.y, width: area.width - sideW, height: area.height))
        guard sideW > 0 else { return }
        let h = max(4, min(7, area.height / max(1, others.count)))
        let fit = min(others.count, area.height / h)
        for (i, t) in others.prefix(fit).enumerated() {
            drawTile(t, m, into: &b, rect: Rect(x: area.maxX - sideW, y: area.y + i * h, width: sideW, height: h))
        }
        if fit < others.count { b.put("+\(others.count - fit) more", x: area.maxX - sideW + 1, y: area.maxY - 1, style: CellStyle(bold: true)) }
    }

    /// Picture-in-picture: a compact box in the bottom-right corner.
    private static func drawPictureInPicture(_ m: CallViewModel, into b: inout ScreenBuffer) {
        let w = min(b.width, 44), h = min(b.height, 5)
        guard w >= 10, h >= 3 else { return }
        let r = Rect(x: b.width - w, y: b.height - h, width: w, height: h)
        b.box(r, title: "PiP · \(m.title)", style: CellStyle(fg: .cyan))
        let speaker = m.tiles.first { $0.pid == m.dominantPID }?.name ?? m.mainTile?.name ?? "—"
        b.put("\(m.tiles.count) in call · \(timer(m)) · \(m.isMuted ? "MUTED" : "mic on")", x: r.x + 1, y: r.y + 1, maxWidth: w - 2)
        if h >= 4 { b.put("speaking: \(speaker)", x: r.x + 1, y: r.y + 2, maxWidth: w - 2) }
        if h >= 5 { b.put("[m] mute  [w] full view  [l] leave", x: r.x + 1, y: r.y + 3, style: CellStyle(dim: true), maxWidth: w - 2) }
    }

    /// The chat panel: recent messages, newest at the bottom, and the input line.
    private static func drawChat(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 4 else { return }
        b.box(rect, title: "Chat · Enter sends · Esc closes", style: CellStyle(fg: .blue))
        let width = rect.width - 2
        var lines: [String] = []
        for msg in m.chat.suffix(rect.height) { lines += wrap("\(msg.name): \(msg.text)", width: width, indent: 2) }
        for (i, line) in lines.suffix(rect.height - 3).enumerated() { b.put(line, x: rect.x + 1, y: rect.y + 1 + i, maxWidth: width) }
        let prompt = "> " + m.chatDraft
        b.put(String(prompt.suffix(width - 1)) + "_", x: rect.x + 1, y: rect.maxY - 2, style: CellStyle(bold: true), maxWidth: width)
    }

    /// The key list.
    static let helpLines = [
        "m  mute / unmute            v  stop / start video", "c  switch camera            h  raise / lower hand",
        "y  next layout              w  picture-in-picture", "p  participant list         t  chat (type, Enter, Esc)",
        "s  share invite link        r  record", "o  audio settings           e  hide / show event log",
        "f  filter event log         ↑/↓ scroll event log", "?  this help                l, q, Ctrl-C  leave",
        "In the participant list: / search, ↑↓ select, P pin, M mute, V pause video, X remove.",
        "Mouse: click a button in the control bar.",
    ]

    private static func drawHelp(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        b.box(rect, title: "Keys · Esc closes", style: CellStyle(fg: .yellow))
        for (i, line) in helpLines.prefix(rect.height - 2).enumerated() { b.put(line, x: rect.x + 1, y: rect.y + 1 + i, maxWidth: rect.width - 2) }
    }

    /// Audio settings: the modes this machine can route to; a digit picks one.
    private static func drawSettings(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        b.box(rect, title: "Audio · digit selects · Esc closes", style: CellStyle(fg: .green))
        var y = rect.y + 1
        for (i, mode) in m.audioModes.enumerated() where y < rect.maxY - 1 {
            let mark = mode == m.audioMode ? "●" : "○"
            b.put("\(i + 1) \(b.unicode ? mark : (mode == m.audioMode ? "*" : " ")) \(mode.value)", x: rect.x + 1, y: y, maxWidth: rect.width - 2)
            y += 1
        }
        if y < rect.maxY - 1 { b.put("Playback devices:", x: rect.x + 1, y: y + 1, style: CellStyle(dim: true)); y += 2 }
        for d in (m.playbackDevices.isEmpty ? ["(none: audio plays to null)"] : m.playbackDevices) where y < rect.maxY - 1 {
            b.put("  " + d, x: rect.x + 1, y: y, maxWidth: rect.width - 2)
            y += 1
        }
    }

    /// The participant list panel (in place of the event log): search, mic and level, badges,
    /// a selected row for moderation (P pin, M mute, V pause video, X remove).
    private static func drawParticipantList(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 4 else { return }
        let search = m.searchingParticipants || !m.participantSearch.isEmpty ? " · /\(m.participantSearch)\(m.searchingParticipants ? "_" : "")" : ""
        b.box(rect, title: "Participants (\(m.tiles.count))\(search)", style: CellStyle(fg: .magenta))
        let listed = m.listedTiles
        let selected = m.selectedTile?.pid
        for (i, t) in listed.prefix(rect.height - 3).enumerated() {
            let mic = t.isMuted ? "muted" : (t.isSpeaking ? "speaking" : "mic on")
            let meter = String(repeating: b.unicode ? "▮" : "#", count: meterCells(t.isMuted ? nil : t.level) / 2)
            var line = "\(t.name)\(t.isYou ? " (you)" : "") — \(mic)"
            if !meter.isEmpty { line += " " + meter }
            let badge = badges(t, m)
            if !badge.isEmpty { line += " · " + badge }
            b.put(line, x: rect.x + 1, y: rect.y + 1 + i, style: CellStyle(reverse: t.pid == selected), maxWidth: rect.width - 2)
        }
        if listed.isEmpty { b.put("no match", x: rect.x + 1, y: rect.y + 1, style: CellStyle(dim: true)) }
        b.put("/ search  ↑↓ select  P pin  M mute  V video  X remove", x: rect.x + 1, y: rect.maxY - 2,
              style: CellStyle(dim: true), maxWidth: rect.width - 2)
    }

    private static let timeFormat: DateFormatter = {
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss"
        return f
    }()

    private static func drawLog(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        let filterName = m.logFilter.map { " · " + $0.replacingOccurrences(of: "Listener", with: "") } ?? ""
        let scrollName = m.logScroll > 0 ? " · ↑\(m.logScroll)" : ""
        b.box(rect, title: "Event log\(filterName)\(scrollName)", style: CellStyle(fg: .cyan))
        let capacity = rect.height - 2
        let width = rect.width - 2
        // Newest at the bottom; long entries wrap onto indented continuation lines.
        var lines: [(String, Bool)] = []
        let entries = m.visibleLog.dropLast(min(m.logScroll, m.visibleLog.count))
        for e in entries.suffix(capacity).reversed() {
            let listener = e.listener.replacingOccurrences(of: "Listener", with: "")
            let text = "\(timeFormat.string(from: e.time)) \(listener).\(e.event)\(e.summary.isEmpty ? "" : " " + e.summary)"
            lines.insert(contentsOf: wrap(text, width: width, indent: 9).enumerated().map { ($0.element, $0.offset > 0) }, at: 0)
            if lines.count >= capacity { break }
        }
        for (i, (line, continuation)) in lines.suffix(capacity).enumerated() {
            b.put(line, x: rect.x + 1, y: rect.y + 1 + i, style: CellStyle(dim: continuation), maxWidth: width)
        }
    }

    /// Splits `text` into lines of at most `width` cells; continuation lines start with `indent` spaces.
    static func wrap(_ text: String, width: Int, indent: Int) -> [String] {
        guard width > indent + 4 else { return [text] }
        var out: [String] = []
        var rest = Substring(text)
        var first = true
        while !rest.isEmpty {
            let room = first ? width : width - indent
            var cut = rest.index(rest.startIndex, offsetBy: room, limitedBy: rest.endIndex) ?? rest.endIndex
            if cut != rest.endIndex, let space = rest[..<cut].lastIndex(of: " "), rest.distance(from: rest.startIndex, to: space) > room / 2 {
                cut = space
            }
            out.append((first ? "" : String(repeating: " ", count: indent)) + rest[..<cut])
            rest = rest[cut...].drop { $0 == " " }
            first = false
        }
        return out
    }

    private static func drawControls(_ m: CallViewModel, _ buttons: [Button], into b: inout ScreenBuffer, rect: Rect) {
        b.fill(rect, style: CellStyle(reverse: true))
        for btn in buttons {
            let style = btn.id == BuiltInButton.leaveSession.rawValue ? CellStyle(fg: .red, bold: true, reverse: true) : CellStyle(bold: true, reverse: true)
            b.put("[\(btn.key)] \(btn.label)", x: btn.rect.x, y: btn.rect.y, style: style)
        }
        let hint = "? keys · q quits"
        let used = buttons.last.map { $0.rect.maxX + 2 } ?? 1
        if rect.maxX - hint.count - 1 >= used { b.put(hint, x: rect.maxX - hint.count - 1, y: rect.y, style: CellStyle(reverse: true, dim: true)) }
    }
}
