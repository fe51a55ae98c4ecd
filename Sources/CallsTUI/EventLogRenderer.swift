import Foundation

/// Draws the event log panel (newest at the bottom, millisecond times, word-aware wrapping, a
/// view that stays put while scrolled back with an "N new" marker) and the per-event counts.
/// Pure; any thread.
enum EventLogRenderer {
    static func draw(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        let g = b.glyphs
        let log = m.log
        var title = "Event log"
        if let f = log.listenerFilter { title += " \(g.separator) " + f.replacingOccurrences(of: "Listener", with: "") }
        if let u = log.participantFilter { title += " \(g.separator) @" + (m.seen[u] ?? u) }
        if !log.search.isEmpty || m.editingLogSearch { title += " \(g.separator) /" + log.search + (m.editingLogSearch ? "_" : "") }
        let visible = log.visible
        title += " \(g.separator) \(visible.count)"
        if visible.count != log.total { title += "/\(log.total)" }
        b.box(rect, title: title, style: CellStyle(fg: .cyan))
        let inner = rect.inset(1)
        guard inner.height > 0 else { return }
        let newBelow = log.newBelow(in: visible)
        let capacity = inner.height - (newBelow > 0 ? 1 : 0)
        var lines: [(String, CellStyle)] = []
        if let bottom = log.bottomIndex(in: visible) {
            // Whole entries only, newest at the bottom; an entry taller than the panel shows its start.
            var i = bottom
            while i >= 0 && lines.count < capacity {
                let e = visible[i]
                let selected = log.anchor != nil && i == bottom
                let wrapped = TextWrap.wrap(e.line, width: inner.width, indent: 13)
                if i != bottom && lines.count + wrapped.count > capacity { break }
                let styled = wrapped.prefix(capacity).enumerated().map { ($0.element, CellStyle(reverse: selected, dim: $0.offset > 0 && !selected)) }
                lines.insert(contentsOf: styled, at: 0)
                i -= 1
            }
        } else {
            lines = [(log.total == 0 ? "no events yet" : "no events match", CellStyle(dim: true))]
        }
        for (i, (text, style)) in lines.prefix(capacity).enumerated() {
            b.put(text, x: inner.x, y: inner.y + i, style: style, maxWidth: inner.width)
        }
        if newBelow > 0 {
            let marker = " \(newBelow) new \(g.down)  End follows "
            b.put(marker, x: inner.maxX - min(inner.width, DisplayWidth.of(marker)), y: inner.maxY - 1, style: CellStyle(fg: .yellow, bold: true, reverse: true), maxWidth: inner.width)
        }
        let hint = " Enter payload \(g.separator) / search \(g.separator) f u filter \(g.separator) n counts \(g.separator) x export "
        if DisplayWidth.of(hint) <= rect.width - 4 { b.put(hint, x: rect.x + 2, y: rect.maxY - 1, style: CellStyle(fg: .cyan, dim: true)) }
    }

    /// Counts per callback name (all events seen), most frequent first, and per listener.
    static func drawCounts(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        b.box(rect, title: "Event counts \(b.glyphs.separator) \(m.log.total) events \(b.glyphs.separator) n closes", style: CellStyle(fg: .cyan))
        let inner = rect.inset(1)
        let rows = m.log.countsByEvent
        let colWidth = min(inner.width, 36)
        let cols = max(1, inner.width / (colWidth + 1))
        for (i, (name, n)) in rows.enumerated() {
            let col = i / max(1, inner.height), row = i % max(1, inner.height)
            guard col < cols else { break }
            let text = DisplayWidth.pad(name, to: colWidth - 6) + String(format: "%6d", n)
            b.put(text, x: inner.x + col * (colWidth + 1), y: inner.y + row, maxWidth: colWidth)
        }
    }
}
