import CometChatCallsSDK

/// The side panels other than the event log: the participant list (scrolled to its selection,
/// "+N more" above and below), chat and audio settings. Pure; any thread.
enum PanelRenderer {
    /// The participant list: search, mic and level, state, a selected row the list keys act on.
    static func drawParticipantList(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        let g = b.glyphs
        let search = m.searchingParticipants || !m.participantSearch.isEmpty ? " \(g.separator) /\(m.participantSearch)\(m.searchingParticipants ? "_" : "")" : ""
        b.box(rect, title: "Participants (\(m.tiles.count))\(search)", style: CellStyle(fg: .magenta))
        let listed = m.listedTiles
        let inner = rect.inset(1)
        let footer = inner.height >= 3 ? 1 : 0
        let rows = max(1, inner.height - footer)
        let sel = min(max(0, m.participantSelection), max(0, listed.count - 1))
        // Scroll so the selection is visible; the first and last rows say what is off screen.
        var start = 0
        if listed.count > rows { start = min(max(0, sel - rows / 2), listed.count - rows) }
        for (i, t) in listed[start..<min(listed.count, start + rows)].enumerated() {
            let y = inner.y + i
            let index = start + i
            if i == 0 && start > 0 {
                b.put("\(g.up) \(start) more", x: inner.x, y: y, style: CellStyle(dim: true), maxWidth: inner.width)
                continue
            }
            if i == rows - 1 && start + rows < listed.count {
                b.put("\(g.down) \(listed.count - start - rows + 1) more", x: inner.x, y: y, style: CellStyle(dim: true), maxWidth: inner.width)
                continue
            }
            let selected = index == sel
            let rowStyle = CellStyle(bold: selected, reverse: selected)
            if selected { b.fill(Rect(x: inner.x, y: y, width: inner.width, height: 1), style: rowStyle) }
            var x = inner.x
            x += b.put((selected ? "› " : "  ") + t.name + (t.isYou ? " (you)" : ""), x: x, y: y, style: rowStyle, maxWidth: max(6, inner.width / 2))
            for (text, style) in TileRenderer.stateItems(t, m, g) where x < inner.maxX - 1 {
                var s = style
                s.reverse = selected
                x += 2 + b.put(text, x: x + 2, y: y, style: s, maxWidth: inner.maxX - x - 2)
            }
        }
        if listed.isEmpty { b.put("no match", x: inner.x, y: inner.y, style: CellStyle(dim: true)) }
        if footer == 1 {
            let who = m.selectedTile.map { $0.isYou ? "you" : $0.name } ?? "nobody"
            b.put("on \(who): m mute  v video  Enter pin (view)  P pin (all)  x remove  / search  Esc",
                  x: inner.x, y: inner.maxY - 1, style: CellStyle(dim: true), maxWidth: inner.width)
        }
    }

    /// The chat panel: recent messages, newest at the bottom, and the input line.
    static func drawChat(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        b.box(rect, title: "Chat \(b.glyphs.separator) Enter sends \(b.glyphs.separator) Esc closes", style: CellStyle(fg: .blue))
        let inner = rect.inset(1)
        var lines: [(String, Bool)] = []
        for msg in m.chat.suffix(inner.height) {
            for (i, l) in TextWrap.wrap("\(msg.name): \(msg.text)", width: inner.width, indent: 2).enumerated() { lines.append((l, i == 0)) }
        }
        let room = max(0, inner.height - 1)
        for (i, (line, first)) in lines.suffix(room).enumerated() {
            b.put(line, x: inner.x, y: inner.y + i, style: CellStyle(bold: false, dim: !first), maxWidth: inner.width)
        }
        let prompt = "> " + DisplayWidth.suffix(m.chatDraft, cells: max(0, inner.width - 3)) + "_"
        b.put(prompt, x: inner.x, y: inner.maxY - 1, style: CellStyle(bold: true), maxWidth: inner.width, ellipsis: false)
    }

    /// Audio settings: the modes this machine can route to (a digit picks one) and the devices.
    static func drawSettings(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        let g = b.glyphs
        b.box(rect, title: "Audio \(g.separator) digit selects \(g.separator) Esc closes", style: CellStyle(fg: .green))
        let inner = rect.inset(1)
        var y = inner.y
        for (i, mode) in m.audioModes.enumerated() where y < inner.maxY {
            let current = mode == m.audioMode
            b.put("\(i + 1) \(current ? g.selected : g.unselected) \(mode.value)\(current ? " (current)" : "")", x: inner.x, y: y,
                  style: CellStyle(bold: current), maxWidth: inner.width)
            y += 1
        }
        if y + 1 < inner.maxY { b.put("Playback devices:", x: inner.x, y: y + 1, style: CellStyle(dim: true)); y += 2 }
        for d in (m.playbackDevices.isEmpty ? ["(none: audio plays to null)"] : m.playbackDevices) where y < inner.maxY {
            b.put("  " + d, x: inner.x, y: y, maxWidth: inner.width)
            y += 1
        }
        if let you = m.you, y + 1 < inner.maxY {
            let width = min(inner.width - 8, 30)
            let filled = CallScreenRenderer.meterCells(you.isMuted ? nil : you.level, width: width)
            b.put("Input ", x: inner.x, y: y + 1, style: CellStyle(dim: true))
            b.put(String(repeating: g.meterFull, count: filled) + String(repeating: g.meterEmpty, count: width - filled), x: inner.x + 6, y: y + 1,
                  style: CellStyle(fg: .green), maxWidth: width)
        }
    }
}
