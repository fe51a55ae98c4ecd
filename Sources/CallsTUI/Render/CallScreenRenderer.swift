import CometChatCallsSDK
import CallsCore
import Foundation

/// Draws the call screen: header, participant tiles, a side panel (event log, participants,
/// chat, audio, counts), the control bar, toasts and overlays (help, payload, stats, summary).
///
/// ```
/// ┌ header: title · timer · participants · layout · hands · you · REC · status ──┐
/// │ notices                                              │ side panel: event   │
/// │ tiles (grid / spotlight / sidebar, paged)            │ log, people, chat…  │
/// │ toasts (over everything)                             │                     │
/// └ control bar: [m] Mute … [l] Leave                                  [?] Help ┘
/// ```
/// The side panel sits on the right when the terminal is at least 100 columns wide, else below
/// the tiles; hiding the log gives its room to the tiles. Below `minimumSize` the screen says
/// so. Pure: the same model and size always give the same screen (golden-testable).
public enum CallScreenRenderer {
    /// A clickable region of the control bar.
    public struct Button: Equatable, Sendable {
        public var id: String
        public var key: Unicode.Scalar
        /// The text drawn (`[m] Mute`, `m Mute` or `m✖`).
        public var label: String
        public var rect: Rect
    }

    public struct Layout: Equatable, Sendable {
        public var header: Rect?
        public var tiles: Rect
        /// The side panel, nil when hidden.
        public var panel: Rect?
        public var controls: Rect?
        public var buttons: [Button]
        /// True below `minimumSize`: nothing but the message is drawn.
        public var tooSmall = false
    }

    /// The smallest terminal the call screen draws on.
    public static let minimumSize = (width: 32, height: 10)

    /// How many of `width` meter cells a level fills (-60 dBFS → 0, 0 dBFS → `width`).
    public static func meterCells(_ dbfs: Float?, width: Int = 10) -> Int {
        guard let d = dbfs else { return 0 }
        return max(0, min(width, Int(((d + 60) / 60 * Float(width)).rounded())))
    }

    /// Whether the side panel is showing.
    static func panelVisible(_ m: CallViewModel) -> Bool { m.participantListVisible || m.panel != .log || !m.logHidden }

    public static func layout(for model: CallViewModel, width: Int, height: Int, unicode: Bool = true) -> Layout {
        if width < minimumSize.width || height < minimumSize.height {
            return Layout(header: nil, tiles: Rect(x: 0, y: 0, width: width, height: height), panel: nil, controls: nil, buttons: [], tooSmall: true)
        }
        var top = 0
        var bottom = height
        var header: Rect?
        if !model.hideHeaderPanel { header = Rect(x: 0, y: 0, width: width, height: 1); top = 1 }
        var controls: Rect?
        var buttons: [Button] = []
        if !model.hideControlPanel {
            controls = Rect(x: 0, y: height - 1, width: width, height: 1)
            bottom = height - 1
            buttons = ControlBar.layout(model, width: width, y: height - 1, glyphs: .for(unicode: unicode))
        }
        let body = Rect(x: 0, y: top, width: width, height: bottom - top)
        guard panelVisible(model) else { return Layout(header: header, tiles: body, panel: nil, controls: controls, buttons: buttons) }
        if width >= 100 {
            let panelWidth = max(36, width * 2 / 5)
            return Layout(header: header, tiles: Rect(x: 0, y: body.y, width: width - panelWidth, height: body.height),
                          panel: Rect(x: width - panelWidth, y: body.y, width: panelWidth, height: body.height),
                          controls: controls, buttons: buttons)
        }
        let panelHeight = body.height >= 16 ? max(5, body.height / 3) : 4
        return Layout(header: header, tiles: Rect(x: 0, y: body.y, width: width, height: body.height - panelHeight),
                      panel: Rect(x: 0, y: body.maxY - panelHeight, width: width, height: panelHeight),
                      controls: controls, buttons: buttons)
    }

    public static func render(_ model: CallViewModel, width: Int, height: Int, unicode: Bool = true) -> ScreenBuffer {
        var b = ScreenBuffer(width: width, height: height, unicode: unicode)
        let l = layout(for: model, width: width, height: height, unicode: unicode)
        if l.tooSmall { drawTooSmall(into: &b); return b }
        if model.overlay == .summary { OverlayRenderer.drawSummary(model, into: &b); return b }
        if model.pictureInPicture {
            TileRenderer.drawPictureInPicture(model, into: &b)
            drawToasts(model, into: &b, above: height)
            return b
        }
        if let h = l.header { drawHeader(model, into: &b, rect: h) }
        drawTileArea(model, into: &b, rect: l.tiles)
        if let p = l.panel {
            if model.participantListVisible {
                PanelRenderer.drawParticipantList(model, into: &b, rect: p)
            } else {
                switch model.panel {
                case .chat: PanelRenderer.drawChat(model, into: &b, rect: p)
                case .settings: PanelRenderer.drawSettings(model, into: &b, rect: p)
                case .counts: EventLogRenderer.drawCounts(model, into: &b, rect: p)
                case .log: EventLogRenderer.draw(model, into: &b, rect: p)
                }
            }
        }
        drawCaptions(model, into: &b, rect: l.tiles)
        if model.connectionLostAt != nil { drawConnectionLost(model, into: &b, tiles: l.tiles) }
        if let c = l.controls { drawControls(model, l.buttons, into: &b, rect: c) }
        switch model.overlay {
        case .help: OverlayRenderer.drawHelp(model, into: &b, area: l.tiles.union(l.panel))
        case .payload(let seq): OverlayRenderer.drawPayload(model, seq: seq, into: &b, area: l.tiles.union(l.panel))
        case .stats: OverlayRenderer.drawStats(model, into: &b, area: l.tiles.union(l.panel))
        case .sharePicker: OverlayRenderer.drawSharePicker(model, into: &b, area: l.tiles.union(l.panel))
        case .summary, nil: break
        }
        drawToasts(model, into: &b, above: l.controls?.y ?? height)
        return b
    }

    /// The connection to the server is lost: the tiles are stale (dimmed: nothing on them is
    /// current), and a full-width banner over their top row counts the grace period down.
    private static func drawConnectionLost(_ m: CallViewModel, into b: inout ScreenBuffer, tiles: Rect) {
        guard let since = m.connectionLostAt else { return }
        b.dim(tiles)
        let elapsed = max(0, Int(m.now.timeIntervalSince(since)))
        let dash = b.unicode ? "—" : "-"
        let text = " Connection lost \(dash) retrying, \(min(elapsed, m.reconnectGraceSeconds)) s of \(m.reconnectGraceSeconds) "
        let style = CellStyle(fg: .red, bold: true, reverse: true)
        let row = Rect(x: 0, y: tiles.y, width: b.width, height: 1)
        b.fill(row, style: style)
        b.put(text, x: max(0, (b.width - DisplayWidth.of(text)) / 2), y: row.y, style: style, maxWidth: b.width)
    }

    /// The message shown below the minimum size, wrapped to whatever width there is.
    private static func drawTooSmall(into b: inout ScreenBuffer) {
        let text = "window too small (need \(minimumSize.width)×\(minimumSize.height), have \(b.width)×\(b.height)); q leaves"
        let shown = b.unicode ? text : text.replacingOccurrences(of: "×", with: "x")
        let lines = TextWrap.wrap(shown, width: max(1, b.width))
        let y0 = max(0, (b.height - lines.count) / 2)
        for (i, line) in lines.enumerated() {
            let x = max(0, (b.width - DisplayWidth.of(line)) / 2)
            b.put(line, x: x, y: y0 + i, style: CellStyle(bold: true))
        }
    }

    static func timer(_ model: CallViewModel) -> String {
        guard let start = model.joinedAt else { return "--:--" }
        let s = max(0, Int((model.leftAt ?? model.now).timeIntervalSince(start)))
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%02d:%02d", s / 60, s % 60)
    }

    /// Header items, most important first; those that do not fit are left out.
    private static func drawHeader(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        b.fill(rect, style: CellStyle(reverse: true))
        let g = b.glyphs
        let base = CellStyle(bold: true, reverse: true)
        var items: [(String, CellStyle)] = [(m.title, base)]
        if let first = m.lobby.first {
            let more = m.lobby.count > 1 ? " +\(m.lobby.count - 1)" : ""
            // Someone at the door comes first (a moderator must answer); narrow screens get the short form.
            let text = rect.width >= 70 ? "\(first.name)\(more) waiting: y admit, n deny" : "\(first.name)\(more) waits: y/n"
            items.append((text, CellStyle(fg: .yellow, bold: true, reverse: true)))
        }
        if !m.settings.hideSessionTimer { items.append((timer(m), base)) }
        // Being recorded is what everyone must see first, then whether you are heard.
        if m.isRecording && !m.settings.hideRecordingStatusIndicator {
            items.append(("\(g.recording) REC", CellStyle(fg: .red, bold: true, reverse: true)))
        }
        if let s = m.streamState, !m.settings.hideStreamingStatusIndicator {
            items.append((s == .live ? "\(g.recording) LIVE" : "LIVE reconnecting…", CellStyle(fg: s == .live ? .red : .yellow, bold: true, reverse: true)))
        }
        if m.isMuted { items.append(("YOU ARE MUTED", CellStyle(fg: .red, bold: true, reverse: true))) }
        if m.roomLocked { items.append(("LOCKED", CellStyle(fg: .yellow, bold: true, reverse: true))) }
        items.append(("\(m.tiles.count) participant\(m.tiles.count == 1 ? "" : "s")", base))
        let hands = m.handQueue
        if !hands.isEmpty {
            items.append(("\(g.hand) " + hands.map { $0.isYou ? "you" : $0.name }.joined(separator: ", "), CellStyle(fg: .magenta, bold: true, reverse: true)))
        }
        items.append((m.layout.value.capitalized, CellStyle(reverse: true)))
        if let q = m.you?.quality {
            let bars = q == .good ? g.net.good : (q == .fair ? g.net.fair : g.net.poor)
            // While the connection is lost the last measurement is stale: greyed out, no colour.
            let style = m.connectionLostAt != nil ? CellStyle(reverse: true, dim: true)
                : CellStyle(fg: q == .good ? .normal : (q == .fair ? .yellow : .red), reverse: true)
            items.append(("you \(bars) \(m.connectionLostAt != nil ? "stale" : q.rawValue)", style))
        }
        items.append((m.status, CellStyle(reverse: true)))
        var x = rect.x + 1
        let sep = "  \(g.separator)  "
        for (i, (text, style)) in items.enumerated() {
            let need = (i > 0 ? DisplayWidth.of(sep) : 0) + DisplayWidth.of(text)
            // Always the title (cut if it must be); the rest only whole.
            if i > 0 && x + need > rect.maxX - 1 { continue }
            if i > 0 { x += b.put(sep, x: x, y: rect.y, style: CellStyle(reverse: true)) }
            x += b.put(text, x: x, y: rect.y, style: style, maxWidth: rect.maxX - 1 - x)
        }
    }

    private static func drawTileArea(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 4, rect.height >= 1 else { return }
        var area = rect
        // Standing notices, wrapped; at most a third of the area (the log keeps every one).
        if !m.notices.isEmpty {
            let maxLines = max(1, rect.height / 3)
            var lines: [String] = []
            for n in m.notices.reversed() { lines = TextWrap.wrap("! " + n, width: rect.width - 2, indent: 2) + lines }
            if lines.count > maxLines {
                // The newest notice, as much as fits (ending in an ellipsis), and how many more.
                let hidden = m.notices.count - 1
                let more = hidden > 0 ? " (+\(hidden) in the log)" : ""
                var newest = TextWrap.wrap("! " + (m.notices.last ?? ""), width: rect.width - 2, indent: 2)
                if newest.count > maxLines || !more.isEmpty {
                    newest = Array(newest.prefix(maxLines))
                    let last = newest[newest.count - 1]
                    newest[newest.count - 1] = DisplayWidth.truncate(last + " " + b.glyphs.ellipsis + more, to: rect.width - 2, ellipsis: b.glyphs.ellipsis)
                    if DisplayWidth.of(last + " " + b.glyphs.ellipsis + more) > rect.width - 2 {
                        newest[newest.count - 1] = DisplayWidth.prefix(last, cells: max(0, rect.width - 3 - DisplayWidth.of(more))) + b.glyphs.ellipsis + more
                    }
                }
                lines = newest
            }
            for (i, line) in lines.enumerated() { b.put(line, x: rect.x + 1, y: rect.y + i, style: CellStyle(fg: .yellow), maxWidth: rect.width - 2) }
            area = Rect(x: rect.x, y: rect.y + lines.count, width: rect.width, height: rect.height - lines.count)
        }
        if m.tiles.isEmpty {
            let waiting = m.status.hasPrefix("waiting for the host") ? "Waiting for the host to let you in" : "Waiting for the server"
            b.put("\(waiting)\(b.glyphs.ellipsis)", x: area.x + 2, y: area.y + min(1, area.height - 1), style: CellStyle(dim: true), maxWidth: area.width - 4)
            return
        }
        // A shared terminal takes the tile area (the text must not be scaled); the tiles move aside.
        if let (pid, grid) = m.screens.sorted(by: { $0.key < $1.key }).first, let presenter = m.tiles.first(where: { $0.pid == pid }) {
            return ScreenShareRenderer.draw(grid, presenter: presenter.name, m, into: &b, area: area)
        }
        switch m.layout {
        case .tile: TileRenderer.drawGrid(m, into: &b, area: area)
        case .spotlight: TileRenderer.drawSpotlight(m, into: &b, area: area)
        case .sidebar: TileRenderer.drawSidebar(m, into: &b, area: area)
        }
    }

    /// Captions over the bottom of the tile area (above its border): `Name: text`, the newest speaker lowest, a
    /// long caption showing its end (what is being said now); partial ones dim. Not on a tile
    /// area under 40×10 (the event log has them).
    private static func drawCaptions(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        let shown = m.visibleCaptions(at: m.now)
        // Too small a tile area and captions would hide the people: they stay in the event log.
        guard !shown.isEmpty, rect.height >= 10, rect.width >= 40 else { return }
        for (i, c) in shown.reversed().enumerated() {
            let y = rect.maxY - 2 - i  // above the tiles' bottom border
            guard y > rect.y else { break }
            let name = DisplayText.name(c.name) ?? c.uid
            let room = rect.width - 4 - DisplayWidth.of(name) - 2
            guard room > 4 else { continue }
            var text = DisplayText.name(c.text, limit: 2000) ?? ""
            while DisplayWidth.of(text) > room, !text.isEmpty { text.removeFirst() }
            let line = name + ": " + text
            let style = CellStyle(bold: c.final, reverse: true)
            b.fill(Rect(x: rect.x + 1, y: y, width: min(rect.width - 2, DisplayWidth.of(line) + 2), height: 1), style: style)
            b.put(line, x: rect.x + 2, y: y, style: style, maxWidth: rect.width - 4)
        }
    }

    /// Toasts just above the control bar, newest lowest, over anything (panels included).
    private static func drawToasts(_ m: CallViewModel, into b: inout ScreenBuffer, above y: Int) {
        var bottom = y
        for t in m.toasts.reversed() {
            let lines = TextWrap.wrap(t.text, width: max(1, b.width - 4), indent: 2).prefix(3)
            let style = t.kind == .error ? CellStyle(fg: .red, bold: true, reverse: true) : CellStyle(fg: .cyan, bold: true, reverse: true)
            for (i, line) in lines.reversed().enumerated() {
                let row = bottom - 1 - i
                guard row >= 0 else { break }
                b.fill(Rect(x: 1, y: row, width: b.width - 2, height: 1), style: style)
                b.put(line, x: 2, y: row, style: style, maxWidth: b.width - 4)
            }
            bottom -= lines.count
            if bottom <= 1 { break }
        }
    }

    private static func drawControls(_ m: CallViewModel, _ buttons: [Button], into b: inout ScreenBuffer, rect: Rect) {
        b.fill(rect, style: CellStyle(reverse: true))
        for btn in buttons {
            let leave = btn.id == BuiltInButton.leaveSession.rawValue
            let style = leave ? CellStyle(fg: .red, bold: true, reverse: m.pending != .leave) : CellStyle(bold: true, reverse: true)
            b.put(btn.label, x: btn.rect.x, y: btn.rect.y, style: style)
        }
    }
}

extension Rect {
    /// The smallest rectangle holding both (self when `other` is nil).
    func union(_ other: Rect?) -> Rect {
        guard let o = other else { return self }
        let x0 = min(x, o.x), y0 = min(y, o.y)
        return Rect(x: x0, y: y0, width: max(maxX, o.maxX) - x0, height: max(maxY, o.maxY) - y0)
    }
}
