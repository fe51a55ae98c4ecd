import Foundation
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
            // Someone removed: how to let them back comes first (moderators).
            let back = m.rejoinable
            let text = back.last.map { "removed: \($0.name)\(back.count > 1 ? " +\(back.count - 1)" : "") \(g.separator) R lets them back" }
                ?? m.bans.last.map { "banned: \($0)\(m.bans.count > 1 ? " +\(m.bans.count - 1)" : "") \(g.separator) U lifts it" }
                ?? "on \(who): m mute  v video  Enter pin (view)  P pin (all)  x remove  B ban  / search  Esc"
            b.put(text, x: inner.x, y: inner.maxY - 1, style: CellStyle(dim: true), maxWidth: inner.width)
        }
    }

    /// The chat panel: the scrollback (every message kept, with its time; newest at the bottom,
    /// PgUp/PgDn/↑↓ scroll, End returns), and the input line.
    static func drawChat(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        b.box(rect, title: "Chat \(b.glyphs.separator) Enter sends \(b.glyphs.separator) Esc closes", style: CellStyle(fg: .blue))
        let inner = rect.inset(1)
        let lines = chatLines(m, width: inner.width)
        let room = max(0, inner.height - 1)
        let scroll = min(m.chatScroll, max(0, lines.count - room))
        let shown = lines.dropLast(scroll).suffix(room)
        for (i, (line, first)) in shown.enumerated() {
            b.put(line, x: inner.x, y: inner.y + i, style: CellStyle(bold: false, dim: !first), maxWidth: inner.width)
        }
        if scroll > 0, room > 0 {
            let more = " \(b.glyphs.down) \(scroll) newer line\(scroll == 1 ? "" : "s") (End) "
            b.put(more, x: inner.maxX - DisplayWidth.of(more), y: inner.y + room - 1, style: CellStyle(reverse: true), maxWidth: inner.width)
        }
        // A pasted line break shows as " | " in the one-line prompt (it is sent as a line break).
        let draft = m.chatDraft.replacingOccurrences(of: "\n", with: " | ")
        let prompt = "> " + DisplayWidth.suffix(draft, cells: max(0, inner.width - 3)) + "_"
        b.put(prompt, x: inner.x, y: inner.maxY - 1, style: CellStyle(bold: true), maxWidth: inner.width, ellipsis: false)
    }

    /// Every chat message wrapped to `width`, `HH:mm Name: text` (first lines marked true).
    static func chatLines(_ m: CallViewModel, width: Int) -> [(String, Bool)] {
        var lines: [(String, Bool)] = []
        for msg in m.chat {
            let time = chatTime.string(from: Date(timeIntervalSince1970: Double(msg.sentAt) / 1000))
            for (i, l) in TextWrap.wrap("\(time) \(msg.name): \(msg.text)", width: width, indent: 6).enumerated() { lines.append((l, i == 0)) }
        }
        return lines
    }

    /// Local time of day, hours and minutes.
    private static let chatTime: DateFormatter = {
        let f = DateFormatter()
        f.dateFormat = "HH:mm"
        f.locale = Locale(identifier: "en_US_POSIX")
        return f
    }()

    /// Audio settings: your input meter, then rows to pick (↑↓ Enter): the audio modes (a
    /// digit picks one too), microphones, speakers and a local test tone. ● marks what is in use.
    static func drawSettings(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        let g = b.glyphs
        b.box(rect, title: "Audio \(g.separator) \(g.up)\(g.down) Enter picks \(g.separator) Esc closes", style: CellStyle(fg: .green))
        let inner = rect.inset(1)
        // The meter first: it is what people look at while picking a microphone.
        var rows: [(String, CellStyle, Int?)] = []
        if let you = m.you {
            let width = max(4, min(inner.width - 12, 30))
            let filled = CallScreenRenderer.meterCells(you.isMuted ? nil : you.level, width: width)
            rows.append(("input level " + String(repeating: g.meterFull, count: filled) + String(repeating: g.meterEmpty, count: width - filled)
                         + (you.isMuted ? " (muted)" : ""), CellStyle(fg: .green), nil))
        }
        if let media = m.media, media.playbackPeriodMs > 0 {
            let how = media.playbackPeriodIsAutomatic ? "auto" : "fixed"
            rows.append(("playback period \(media.playbackPeriodMs) ms, \(how), \(media.xruns) under-run\(media.xruns == 1 ? "" : "s")",
                         CellStyle(dim: true), nil))
            // What the network costs: the redundancy our packets carry, the frames others' repaired.
            let n = media.redundancyFrames
            rows.append(("redundancy \(n == 0 ? "none" : "\(n) frame\(n == 1 ? "" : "s")"), \(media.repaired) repaired", CellStyle(dim: true), nil))
        }
        var section = ""
        for (i, c) in m.audioChoices.enumerated() {
            let (head, text, current): (String, String, Bool)
            switch c {
            case .mode(let mode):
                let n = (m.audioModes.firstIndex(of: mode) ?? 0) + 1
                (head, text, current) = ("Mode (digit picks)", "\(n) \(mode.value)", mode == m.audioMode)
            case .input(let spec, let label): (head, text, current) = ("Microphone", label, spec == m.audioInput)
            case .output(let spec, let label): (head, text, current) = ("Speaker", label, spec == m.audioOutput)
            case .testTone: (head, text, current) = ("Test", "play a test tone (1 s, only you hear it)", false)
            }
            if head != section { rows.append((head, CellStyle(dim: true), nil)); section = head }
            rows.append(("\(current ? g.selected : g.unselected) \(text)", CellStyle(bold: current), i))
        }
        let sel = min(max(0, m.settingsSelection), max(0, m.audioChoices.count - 1))
        let selRow = rows.firstIndex { $0.2 == sel } ?? 0
        let start = rows.count > inner.height ? min(max(0, selRow - inner.height / 2), rows.count - inner.height) : 0
        for (i, row) in rows.dropFirst(start).prefix(inner.height).enumerated() {
            var style = row.1
            let selected = row.2 == sel
            if selected { style.reverse = true; b.fill(Rect(x: inner.x, y: inner.y + i, width: inner.width, height: 1), style: style) }
            b.put((row.2 == nil ? "" : (selected ? "› " : "  ")) + row.0, x: inner.x, y: inner.y + i, style: style, maxWidth: inner.width)
        }
    }
}
