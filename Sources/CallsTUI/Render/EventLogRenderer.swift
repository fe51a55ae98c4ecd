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
        let query = log.search
        for (i, (text, style)) in lines.prefix(capacity).enumerated() {
            b.put(text, x: inner.x, y: inner.y + i, style: style, maxWidth: inner.width)
            // The search's matches, highlighted where they are.
            guard !query.isEmpty else { continue }
            var from = text.startIndex
            while let r = text.range(of: query, options: .caseInsensitive, range: from..<text.endIndex), !r.isEmpty {
                let x = DisplayWidth.of(String(text[text.startIndex..<r.lowerBound]))
                if x < inner.width {
                    b.put(String(text[r]), x: inner.x + x, y: inner.y + i, style: CellStyle(fg: .yellow, bold: true, reverse: true), maxWidth: inner.width - x)
                }
                from = r.upperBound
            }
        }
        if newBelow > 0 {
            let marker = " \(newBelow) new \(g.down)  End follows "
            b.put(marker, x: inner.maxX - min(inner.width, DisplayWidth.of(marker)), y: inner.maxY - 1, style: CellStyle(fg: .yellow, bold: true, reverse: true), maxWidth: inner.width)
        }
        let hint = " Enter payload \(g.separator) / search \(g.separator) f u filter \(g.separator) n counts \(g.separator) x export "
        if DisplayWidth.of(hint) <= rect.width - 4 { b.put(hint, x: rect.x + 2, y: rect.maxY - 1, style: CellStyle(fg: .cyan, dim: true)) }
    }

    /// The counts panel's rows: each listener's total (bold), then each callback's, most
    /// frequent first.
    static func countRows(_ m: CallViewModel) -> [(name: String, count: Int, listener: Bool)] {
        let listeners = m.log.countsByListener.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        return listeners.map { ($0.key, $0.value, true) } + m.log.countsByEvent.map { ($0.0, $0.1, false) }
    }

    /// Counts per listener and per callback name (all events seen), most frequent first, in
    /// columns; rows that do not fit scroll (↑↓ PgUp PgDn Home End).
    static func drawCounts(_ m: CallViewModel, into b: inout ScreenBuffer, rect: Rect) {
        guard rect.width >= 10, rect.height >= 3 else { return }
        let g = b.glyphs
        let rows = countRows(m)
        let inner = rect.inset(1)
        let colWidth = min(inner.width, 36)
        let cols = max(1, inner.width / (colWidth + 1))
        let perPage = max(1, inner.height) * cols
        let first = min(m.countsScroll, max(0, rows.count - perPage))
        var title = "Event counts \(g.separator) \(m.log.total) events"
        if rows.count > perPage { title += " \(g.separator) \(first + 1)-\(min(rows.count, first + perPage)) of \(rows.count) \(g.up)\(g.down)" }
        b.box(rect, title: title + " \(g.separator) n closes", style: CellStyle(fg: .cyan))
        for (i, r) in rows.dropFirst(first).prefix(perPage).enumerated() {
            let col = i / max(1, inner.height), row = i % max(1, inner.height)
            let text = DisplayWidth.pad(r.name, to: colWidth - 6) + String(format: "%6d", r.count)
            b.put(text, x: inner.x + col * (colWidth + 1), y: inner.y + row, style: CellStyle(bold: r.listener), maxWidth: colWidth)
        }
    }
}
