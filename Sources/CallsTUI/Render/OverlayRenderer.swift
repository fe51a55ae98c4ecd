import CometChatCallsSDK
import Foundation

/// Overlays drawn over the tiles and panels: help (every key, wrapped, scrollable), an event's
/// payload, per-participant statistics, and the summary after leaving. Pure; any thread.
enum OverlayRenderer {
    /// Every key of the call screen, by where it works.
    static let helpSections: [(String, [(String, String)])] = [
        ("In the call", [
            ("m", "mute / unmute your microphone"), ("v", "stop / start your video"), ("c", "switch camera"),
            ("h", "raise / lower your hand"), ("y", "next layout (tile, spotlight, sidebar)"), ("[ ]", "previous / next page of tiles"),
            ("p", "participant list"), ("t", "chat (type, Enter sends, Esc closes)"), ("s", "share the invite link (copied)"),
            ("r", "start / stop recording"), ("a", "captions on / off (starts transcription)"), ("g", "start / stop transcription"),
            ("b", "start / stop the live stream (Icecast)"),
            ("d", "share a terminal as text: a new shell or one of your tmux panes (again: stop)"),
            ("w", "picture-in-picture"), ("o", "audio settings (digit picks a mode)"),
            ("k", "lock / unlock the room: nobody new may join (moderators)"),
            ("y, n", "while someone waits in the lobby: let the first in / send them away (moderators)"),
            ("i", "statistics per participant"), ("l, q", "leave (press again to confirm)"), ("Ctrl-C", "leave at once"),
            ("?", "this help"), ("Esc", "close a panel or overlay"),
        ]),
        ("Event log", [
            ("↑ ↓", "scroll one event (the view stays put as events arrive)"), ("PgUp PgDn", "scroll a page"),
            ("Home End", "oldest / newest (End follows new events)"), ("Enter", "the selected event's full payload (JSON)"),
            ("/", "search (Enter keeps, Esc clears)"), ("f", "filter by listener"), ("u", "filter by participant"),
            ("n", "counts per event"), ("x", "export the whole log as JSONL (path shown)"), ("e", "hide / show the log (tiles take its room)"),
        ]),
        ("Participant list (p)", [
            ("↑ ↓ PgUp PgDn", "select a participant"), ("/", "search by name or uid"),
            ("m", "mute the selected participant (moderators; yourself: your mic)"), ("v", "pause their video (moderators)"),
            ("Enter", "pin them in your own view (spotlight, sidebar)"), ("P", "pin them for everyone (moderators)"),
            ("x", "remove them (moderators; press again to confirm)"),
            ("R", "let the last one removed join this session again (moderators)"),
            ("B", "ban them from the room for good (moderators; press again to confirm)"), ("U", "lift the last ban (moderators)"),
            ("Esc, p", "close the list"),
        ]),
        ("Mouse", [
            ("click", "a control-bar button (one click, one action)"), ("wheel", "scroll the event log or the list"),
        ]),
    ]

    /// The help text as lines wrapped to `width`.
    static func helpLines(width: Int, glyphs g: GlyphSet) -> [String] {
        var out: [String] = []
        let keyWidth = 14
        for (title, keys) in helpSections {
            if !out.isEmpty { out.append("") }
            out.append(title)
            for (k, what) in keys {
                let key = g.isUnicode ? k : k.replacingOccurrences(of: "↑", with: "Up").replacingOccurrences(of: "↓", with: "Down")
                if width >= keyWidth + 12 {
                    let wrapped = TextWrap.wrap(what, width: width - keyWidth - 2)
                    for (i, l) in wrapped.enumerated() { out.append((i == 0 ? "  " + DisplayWidth.pad(key, to: keyWidth) : String(repeating: " ", count: keyWidth + 2)) + l) }
                } else {
                    out += TextWrap.wrap("  \(key): \(what)", width: width, indent: 4)
                }
            }
        }
        return out
    }

    /// A centred box in `area` for an overlay.
    static func frame(_ area: Rect, maxWidth: Int) -> Rect {
        let w = min(area.width, maxWidth), h = area.height
        return Rect(x: area.x + (area.width - w) / 2, y: area.y, width: w, height: h)
    }

    /// Draws scrollable `lines` in a box; returns nothing (the scroll is clamped by the caller's model).
    static func drawScrollable(_ lines: [String], title: String, scroll: Int, style: CellStyle, into b: inout ScreenBuffer, box r: Rect) {
        guard r.width >= 8, r.height >= 3 else { return }
        b.fill(r)
        b.box(r, title: title, style: style)
        let inner = r.inset(1)
        let start = min(max(0, scroll), max(0, lines.count - inner.height))
        for (i, line) in lines.dropFirst(start).prefix(inner.height).enumerated() {
            b.put(line, x: inner.x, y: inner.y + i, maxWidth: inner.width)
        }
        let g = b.glyphs
        if lines.count > inner.height {
            let pos = " \(start + 1)-\(min(lines.count, start + inner.height))/\(lines.count) \(g.up)\(g.down) PgUp PgDn "
            b.put(pos, x: r.maxX - 1 - min(r.width - 2, DisplayWidth.of(pos)), y: r.maxY - 1, style: style, maxWidth: r.width - 2)
        }
    }

    static func drawHelp(_ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        let r = frame(area, maxWidth: 84)
        let lines = helpLines(width: max(1, r.width - 2), glyphs: b.glyphs)
        drawScrollable(lines, title: "Keys \(b.glyphs.separator) Esc or ? closes", scroll: m.overlayScroll, style: CellStyle(fg: .yellow), into: &b, box: r)
        // Section titles in bold.
        let inner = r.inset(1)
        for y in inner.y..<inner.maxY {
            let row = b.lines[y]
            let text = String(row.dropFirst(inner.x))
            if helpSections.contains(where: { text.hasPrefix($0.0) }) {
                for x in inner.x..<inner.maxX { var c = b[x, y]; c.style.bold = true; b[x, y] = c }
            }
        }
    }

    /// The payload of one event: its JSON, pretty-printed and wrapped.
    static func payloadLines(_ entry: EventLog.Entry, width: Int) -> [String] {
        var text = entry.json
        if let data = entry.json.data(using: .utf8), let obj = try? JSONSerialization.jsonObject(with: data),
           let pretty = try? JSONSerialization.data(withJSONObject: obj, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) {
            text = String(decoding: pretty, as: UTF8.self)
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).flatMap { line -> [String] in
            let indent = line.prefix { $0 == " " }.count
            return TextWrap.wrap(String(line), width: width, indent: min(indent + 2, 12)).map { l in
                // Keep the JSON indentation that wrapping would drop.
                l.hasPrefix(String(repeating: " ", count: indent)) ? l : String(repeating: " ", count: indent) + l
            }
        }
    }

    static func drawPayload(_ m: CallViewModel, seq: Int, into b: inout ScreenBuffer, area: Rect) {
        guard let e = m.log.entries.first(where: { $0.seq == seq }) else { return }
        let r = frame(area, maxWidth: 100)
        let lines = payloadLines(e, width: max(1, r.width - 2))
        drawScrollable(lines, title: "\(e.shortListener).\(e.event) \(b.glyphs.separator) Esc closes", scroll: m.overlayScroll,
                       style: CellStyle(fg: .cyan), into: &b, box: r)
    }

    /// Per-participant statistics (what you receive from each; your round trip to the server).
    static func statsLines(_ m: CallViewModel, width: Int) -> [String] {
        var out: [String] = []
        let nameW = max(8, min(20, width - 58))
        out.append(DisplayWidth.pad("participant", to: nameW) + "   loss  jitter  kbit/s   packets  lost  FEC  PLC  late")
        for t in TileRenderer.ordered(m) {
            let name = DisplayWidth.pad(DisplayWidth.truncate(t.name + (t.isYou ? " (you)" : ""), to: nameW), to: nameW)
            if t.isYou {
                let rtt = m.roundTripMs.map { String(format: "%.1f ms", $0) } ?? "measuring"
                let sent = m.media.map { "sent \($0.packetsSent) packets" } ?? ""
                out.append("\(name)   round trip to server \(rtt)  \(sent)")
                continue
            }
            guard let s = m.receiveStats[t.pid] else {
                out.append("\(name)   \(t.isMuted ? "muted: nothing received" : "no audio received yet")")
                continue
            }
            let loss = s.recentLossPercent ?? s.lossPercent
            let kbps = m.bitrates[t.pid].map { String(format: "%6.1f", $0) } ?? "     -"
            out.append(name + String(format: " %5.1f%% %5.1fms ", loss, s.jitterMs) + kbps
                       + String(format: " %9d %5d %4d %4d %5d", s.packetsReceived, s.packetsLost, s.recovered, s.concealed, s.late))
        }
        // Table rows are cut (columns stay aligned); the note wraps.
        return out.map { DisplayWidth.truncate($0, to: width) } + [""]
            + TextWrap.wrap("loss: last 2 s (since joining when not yet reported); jitter: RFC 3550; FEC: frames recovered; PLC: concealed.",
                            width: width, indent: 2)
    }

    static func drawStats(_ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        let r = frame(area, maxWidth: 100)
        drawScrollable(statsLines(m, width: max(1, r.width - 2)), title: "Statistics \(b.glyphs.separator) i or Esc closes",
                       scroll: m.overlayScroll, style: CellStyle(fg: .green), into: &b, box: r)
    }

    /// The share picker's rows: "1  a new shell …", one per choice.
    static func sharePickerLines(_ m: CallViewModel) -> [String] {
        m.shareChoices.enumerated().map { i, c in (i < 9 ? "\(i + 1)  " : "   ") + c.label }
    }

    /// The share picker: the choices, the selected one reversed; its box fits the rows.
    /// Where the share picker sits in `area`: its box, and the first choice shown (the list
    /// scrolls to keep the selection in view). Drawing and mouse clicks both use it.
    static func sharePickerBox(_ m: CallViewModel, area: Rect) -> (box: Rect, first: Int) {
        let full = frame(area, maxWidth: 72)
        let r = Rect(x: full.x, y: full.y, width: full.width, height: min(full.height, m.shareChoices.count + 3))
        return (r, max(0, m.shareSelection - r.inset(1).height + 2))
    }

    /// The choice at (x, y) — a row of the picker's list — or nil.
    static func sharePickerChoice(_ m: CallViewModel, area: Rect, x: Int, y: Int) -> Int? {
        let (r, first) = sharePickerBox(m, area: area)
        let inner = r.inset(1)
        let row = y - inner.y
        guard inner.contains(x: x, y: y), row < inner.height - 1, first + row < m.shareChoices.count else { return nil }
        return first + row
    }

    static func drawSharePicker(_ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        let lines = sharePickerLines(m)
        let (r, start) = sharePickerBox(m, area: area)
        guard r.width >= 8, r.height >= 3 else { return }
        let style = CellStyle(fg: .cyan)
        b.fill(r)
        b.box(r, title: "Share a terminal \(b.glyphs.separator) digit or Enter picks, Esc cancels", style: style)
        let inner = r.inset(1)
        for (i, line) in lines.enumerated().dropFirst(start).prefix(max(0, inner.height - 1)) {
            let y = inner.y + i - start
            let selected = i == m.shareSelection
            if selected { b.fill(Rect(x: inner.x, y: y, width: inner.width, height: 1), style: CellStyle(reverse: true)) }
            b.put(line, x: inner.x, y: y, style: selected ? CellStyle(reverse: true) : .plain, maxWidth: inner.width)
        }
        b.put("Viewers see its text, colours and cursor; d again stops.", x: inner.x, y: inner.maxY - 1, style: CellStyle(dim: true), maxWidth: inner.width)
    }

    static func drawSummary(_ m: CallViewModel, into b: inout ScreenBuffer) {
        let r = Rect(x: 0, y: 0, width: b.width, height: b.height)
        var lines = CallSummary(m).lines.flatMap { TextWrap.wrap($0, width: max(1, r.width - 4), indent: 18) }
        lines.append("")
        lines.append("Last events:")
        let room = max(0, r.height - 2 - lines.count - 2)
        lines += m.log.entries.suffix(room).map { "  " + $0.line }
        lines.append("")
        lines.append("Press any key to exit.")
        // The box says how the call ended ("ann ended the call", "You were removed by Grace") —
        // not "You left" whoever ended it.
        b.box(r, title: m.ending?.sentence ?? "The call is over", style: CellStyle(fg: .cyan))
        for (i, line) in lines.prefix(r.height - 2).enumerated() {
            b.put(line, x: 2, y: 1 + i, style: i == 0 ? CellStyle(bold: true) : .plain, maxWidth: r.width - 4)
        }
    }
}
