import CallsVideo
import CometChatCallsSDK

/// Draws the tile area in every layout: the tile grid, spotlight and sidebar, with paging when
/// not everyone fits ("+N more", `[`/`]`), your own tile always on screen, and a one-line-per-
/// participant list when the area is too small for boxes. Pure; any thread.
enum TileRenderer {
    static let minTileWidth = 16
    static let minTileHeight = 3

    // MARK: Layouts

    /// You first, then everyone else in roster order.
    static func ordered(_ m: CallViewModel) -> [ParticipantTile] { m.tiles.filter(\.isYou) + m.tiles.filter { !$0.isYou } }

    /// The page of `others` to show next to `pinned` with room for `capacity` tiles in all,
    /// clamped to the last page; returns the tiles and the pages line ("+N more · page 1/3").
    static func page(_ pinned: [ParticipantTile], _ others: [ParticipantTile], capacity: Int, page: Int, g: GlyphSet) -> ([ParticipantTile], String?) {
        guard pinned.count + others.count > capacity else { return (pinned + others, nil) }
        let per = max(1, capacity - pinned.count)
        let pages = (others.count + per - 1) / per
        let p = min(max(0, page), pages - 1)
        let shown = Array(others[min(others.count, p * per)..<min(others.count, (p + 1) * per)])
        let hidden = others.count - shown.count
        return (pinned + shown, "+\(hidden) more \(g.separator) page \(p + 1)/\(pages) \(g.separator) [ ] pages")
    }

    static func drawGrid(_ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        let all = ordered(m)
        guard let plan = grid(count: all.count, in: area) else {
            // Not all fit: page the others, keeping you, with the last row for the pages line.
            let body = Rect(x: area.x, y: area.y, width: area.width, height: area.height - 1)
            let cols = max(1, body.width / minTileWidth), rows = body.height / minTileHeight
            // One line per participant when that shows more of them than boxes would.
            guard rows >= 1, cols * rows >= min(all.count, area.height - 1) else {
                return drawCompact(m, pinned: all.filter(\.isYou), others: all.filter { !$0.isYou }, into: &b, area: area)
            }
            let (shown, line) = page(all.filter(\.isYou), all.filter { !$0.isYou }, capacity: cols * rows, page: m.tilePage, g: b.glyphs)
            if let p = grid(count: shown.count, in: body) { place(shown, m, p, into: &b, area: body) }
            if let line { b.put(line, x: area.x + 1, y: area.maxY - 1, style: CellStyle(bold: true), maxWidth: area.width - 2) }
            return
        }
        place(all, m, plan, into: &b, area: area)
    }

    /// Columns and rows that fit `count` tiles of at least the minimum size, as close to the
    /// shape of a 16:9 picture (cells are twice as tall as wide) as the area allows; nil when
    /// they do not fit.
    static func grid(count: Int, in area: Rect) -> (cols: Int, rows: Int)? {
        guard count > 0 else { return (1, 1) }
        var best: (cols: Int, rows: Int, score: Double)?
        for cols in 1...count {
            let rows = (count + cols - 1) / cols
            let w = area.width / cols, h = area.height / rows
            guard w >= minTileWidth, h >= minTileHeight else { continue }
            let score = min(Double(w) / 3.6, Double(h))
            if score > (best?.score ?? -1) + 0.01 { best = (cols, rows, score) }
        }
        return best.map { ($0.cols, $0.rows) }
    }

    private static func place(_ tiles: [ParticipantTile], _ m: CallViewModel, _ plan: (cols: Int, rows: Int), into b: inout ScreenBuffer, area: Rect) {
        let w = area.width / plan.cols, h = area.height / plan.rows
        for (i, t) in tiles.enumerated() {
            let col = i % plan.cols, row = i / plan.cols
            // The last column and row take the cells the division leaves over.
            let tw = col == plan.cols - 1 ? area.width - col * w : w
            let th = row == plan.rows - 1 ? area.height - row * h : h
            drawTile(t, m, into: &b, rect: Rect(x: area.x + col * w, y: area.y + row * h, width: tw, height: th))
        }
    }

    /// One line per participant, paged: for areas too small for tile boxes.
    /// `pinned` (you, the spotlight's main participant) are on every page.
    static func drawCompact(_ m: CallViewModel, pinned: [ParticipantTile], others: [ParticipantTile], into b: inout ScreenBuffer, area: Rect) {
        guard area.height >= 1 else { return }
        let count = pinned.count + others.count
        let rows = count > area.height ? area.height - 1 : area.height
        let (shown, line) = page(pinned, others, capacity: max(pinned.count + 1, rows), page: m.tilePage, g: b.glyphs)
        for (i, t) in shown.prefix(max(1, rows)).enumerated() where i < area.height {
            let items = stateItems(t, m, b.glyphs, compact: true)
            var x = area.x + 1
            x += b.put(t.name + (t.isYou ? " (you)" : ""), x: x, y: area.y + i, style: CellStyle(bold: true), maxWidth: max(4, area.width / 2))
            for (text, style) in items where x < area.maxX - 2 { x += 1 + b.put(text, x: x + 1, y: area.y + i, style: style, maxWidth: area.maxX - x - 1) }
        }
        if let line, rows < area.height { b.put(line, x: area.x + 1, y: area.maxY - 1, style: CellStyle(bold: true), maxWidth: area.width - 2) }
    }

    /// Spotlight: the main participant large, a strip of the others below (you first).
    static func drawSpotlight(_ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        guard let main = m.mainTile else { return }
        let others = ordered(m).filter { $0.pid != main.pid }
        let stripH = others.isEmpty ? 0 : (area.height >= 14 ? 5 : (area.height >= 9 ? 3 : 0))
        guard area.height - stripH >= minTileHeight, stripH > 0 || others.isEmpty else {
            // Too low for a strip: one line each, the main participant and you on every page.
            let pinned = [main] + others.filter(\.isYou)
            return drawCompact(m, pinned: pinned, others: others.filter { !$0.isYou }, into: &b, area: area)
        }
        drawTile(main, m, into: &b, rect: Rect(x: area.x, y: area.y, width: area.width, height: area.height - stripH))
        guard stripH > 0 else { return }
        let strip = Rect(x: area.x, y: area.maxY - stripH, width: area.width, height: stripH)
        drawStrip(others, m, into: &b, strip: strip, vertical: false)
    }

    /// Sidebar: the main participant on the left, the others in a column on the right.
    static func drawSidebar(_ m: CallViewModel, into b: inout ScreenBuffer, area: Rect) {
        guard let main = m.mainTile else { return }
        let others = ordered(m).filter { $0.pid != main.pid }
        let sideW = others.isEmpty || area.width < 40 ? 0 : max(minTileWidth + 2, area.width / 3)
        // Too small for a column of at least two tiles: as spotlight.
        if !others.isEmpty && (sideW == 0 || area.height < 2 * minTileHeight + 1) { return drawSpotlight(m, into: &b, area: area) }
        drawTile(main, m, into: &b, rect: Rect(x: area.x, y: area.y, width: area.width - sideW, height: area.height))
        guard sideW > 0 else { return }
        drawStrip(others, m, into: &b, strip: Rect(x: area.maxX - sideW, y: area.y, width: sideW, height: area.height), vertical: true)
    }

    /// A strip (row or column) of small tiles; when not all fit, the last slot says "+N more".
    private static func drawStrip(_ tiles: [ParticipantTile], _ m: CallViewModel, into b: inout ScreenBuffer, strip: Rect, vertical: Bool) {
        let length = vertical ? strip.height : strip.width
        let step = vertical ? max(minTileHeight, min(7, strip.height / max(1, tiles.count))) : max(minTileWidth, strip.width / max(1, tiles.count))
        var fit = max(0, length / step)
        var shown = tiles
        if fit < tiles.count {
            // Keep one slot for the "+N more" line (a row, or 12 columns of the strip).
            fit = max(1, (length - (vertical ? 1 : 12)) / step)
            shown = page(tiles.filter(\.isYou), tiles.filter { !$0.isYou }, capacity: fit, page: m.tilePage, g: b.glyphs).0
        }
        for (i, t) in shown.prefix(fit).enumerated() {
            let r = vertical ? Rect(x: strip.x, y: strip.y + i * step, width: strip.width, height: step)
                : Rect(x: strip.x + i * step, y: strip.y, width: step, height: strip.height)
            drawTile(t, m, into: &b, rect: r)
        }
        let hidden = tiles.count - min(fit, shown.count)
        guard hidden > 0 else { return }
        let bold = CellStyle(bold: true)
        if vertical {
            b.put("+\(hidden) more [ ]", x: strip.x + 1, y: strip.maxY - 1, style: bold, maxWidth: strip.width - 2)
        } else {
            let x = strip.x + fit * step + 1, mid = strip.y + strip.height / 2
            b.put("+\(hidden)", x: x, y: mid - 1, style: bold, maxWidth: strip.maxX - x)
            b.put("more", x: x, y: mid, style: bold, maxWidth: strip.maxX - x)
            b.put("[ ]", x: x, y: mid + 1, style: CellStyle(dim: true), maxWidth: strip.maxX - x)
        }
    }

    /// Picture-in-picture: a compact box in the bottom-right corner.
    static func drawPictureInPicture(_ m: CallViewModel, into b: inout ScreenBuffer) {
        let w = min(b.width, 44), h = min(b.height, 5)
        guard w >= 10, h >= 3 else { return }
        let r = Rect(x: b.width - w, y: b.height - h, width: w, height: h)
        let g = b.glyphs
        b.box(r, title: "PiP \(g.separator) \(m.title)", style: CellStyle(fg: .cyan))
        let speaker = m.tiles.first { m.isDominant($0) }?.name ?? m.mainTile?.name ?? g.dash
        b.put("\(m.tiles.count) in call \(g.separator) \(CallScreenRenderer.timer(m)) \(g.separator) \(m.isMuted ? "MUTED" : "mic on")", x: r.x + 1, y: r.y + 1, maxWidth: w - 2)
        if h >= 4 { b.put("speaking: \(speaker)", x: r.x + 1, y: r.y + 2, maxWidth: w - 2) }
        if h >= 5 { b.put("[m] mute  [w] full view  [l] leave", x: r.x + 1, y: r.y + 3, style: CellStyle(dim: true), maxWidth: w - 2) }
    }

    // MARK: One tile

    /// The smallest inside of a tile that shows video (smaller tiles show the name and state).
    static let videoMinWidth = 8
    static let videoMinHeight = 3

    /// The picture, centred, with the name over its top-left and the state badges over its
    /// bottom row (always readable: text cells replace picture cells).
    static func drawVideo(_ t: ParticipantTile, _ v: TileVideo, _ m: CallViewModel, into b: inout ScreenBuffer, inner: Rect) {
        if m.graphics != .cells && inner.height >= 4 {
            // Pixels, between the name row and the badge row (a sixel would cover text drawn
            // inside it); the cells under it stay blank for the driver to draw over.
            let area = Rect(x: inner.x, y: inner.y + 1, width: inner.width, height: inner.height - 2)
            let fit = TerminalPicture.fit(width: v.frame.width, height: v.frame.height, columns: area.width, rows: area.height)
            b.pixelPictures.append(PixelPicture(pid: t.pid, rect: Rect(x: area.x + (area.width - fit.columns) / 2, y: area.y + (area.height - fit.rows) / 2,
                                                                      width: fit.columns, height: fit.rows), video: v))
        } else {
            let p = v.picture(columns: inner.width, rows: inner.height, mode: m.pictureMode, unicode: b.unicode)
            b.put(p, x: inner.x + (inner.width - p.columns) / 2, y: inner.y + (inner.height - p.rows) / 2)
        }
        let name = t.name + (t.isYou ? " (you)" : "")
        b.put(" \(name) ", x: inner.x, y: inner.y, style: CellStyle(bold: true, reverse: true), maxWidth: inner.width)
        var x = inner.x
        let y = inner.maxY - 1
        for (text, style) in stateItems(t, m, b.glyphs, compact: true) where x < inner.maxX - 1 {
            var s = style
            s.reverse = true
            x += 1 + b.put(" \(text) ", x: x, y: y, style: s, maxWidth: inner.maxX - x)
        }
    }

    /// The state row: microphone, dominant, hand, pin, sharing, camera, network — each with
    /// its own glyph and colour.
    static func stateItems(_ t: ParticipantTile, _ m: CallViewModel, _ g: GlyphSet, compact: Bool = false) -> [(String, CellStyle)] {
        var out: [(String, CellStyle)] = []
        if t.isMuted { out.append(("\(g.muted) muted", CellStyle(fg: .red, bold: true))) }
        else if m.isDominant(t) { out.append(("\(g.speaking) speaking", CellStyle(fg: .green, bold: true))) }
        else if t.isSpeaking { out.append(("\(g.speaking) speaking", CellStyle(fg: .green))) }
        else if !compact { out.append(("mic on", CellStyle(dim: true))) }
        if let n = m.handOrder(of: t) { out.append(("\(g.hand) hand \(n)", CellStyle(fg: .magenta, bold: true))) }
        if t.isPinned || m.localPinPID == t.pid { out.append(("\(g.pinned) \(m.localPinPID == t.pid && !t.isPinned ? "pinned (you)" : "pinned")", CellStyle(fg: .cyan))) }
        if t.isPresenting { out.append(("\(g.sharing) sharing", CellStyle(fg: .blue, bold: true))) }
        if t.isVideoPaused && m.settings.sessionType == .video { out.append(("\(g.camOff) cam off", CellStyle(dim: true))) }
        if t.isModerator && !compact { out.append(("mod", CellStyle(dim: true))) }
        if let q = t.quality, q != .good {
            let bars = q == .fair ? g.net.fair : g.net.poor
            out.append(("\(bars) net \(q.rawValue)", CellStyle(fg: q == .poor ? .red : .yellow, bold: q == .poor)))
        }
        return out
    }

    static func drawTile(_ t: ParticipantTile, _ m: CallViewModel, into b: inout ScreenBuffer, rect r: Rect) {
        guard r.width >= 4, r.height >= 2 else { return }
        let g = b.glyphs
        let dominant = m.isDominant(t)
        let border = dominant ? CellStyle(fg: .green, bold: true) : (t.isSpeaking ? CellStyle(fg: .green) : CellStyle(dim: !t.isYou))
        b.box(r, title: t.initials, style: border)
        let inner = r.inset(1)
        guard inner.height >= 1, inner.width >= 1 else { return }
        if m.settings.sessionType == .video, inner.width >= videoMinWidth, inner.height >= videoMinHeight {
            if !t.isYou { b.videoTiles.append(t.pid) }
            let paused = t.isYou ? (t.isVideoPaused || m.isVideoPaused) : t.isVideoPaused
            if !paused, let v = m.video[t.pid] { return drawVideo(t, v, m, into: &b, inner: inner) }
        }
        let name = t.name + (t.isYou ? " (you)" : "")
        var rows: [(kind: Int, height: Int)] = []  // 0 big initials, 1 name, 2 state, 3 meter, 4 history
        let big = BigInitials.render(t.initials, glyphs: g)
        let wantBig = big != nil && inner.height >= 7 && inner.width >= BigInitials.width(t.initials) + 2
        if wantBig { rows.append((0, BigInitials.rows + (inner.height >= 8 ? 1 : 0))) }
        rows.append((1, 1))
        if inner.height >= 2 { rows.append((2, 1)) }
        if inner.height >= 3 { rows.append((3, 1)) }
        if inner.height >= 4 { rows.append((4, 1)) }
        let used = rows.reduce(0) { $0 + $1.height }
        var y = inner.y + max(0, (inner.height - used) / 2)
        for row in rows {
            switch row.kind {
            case 0:
                if let big {
                    let x = inner.x + (inner.width - BigInitials.width(t.initials)) / 2
                    let style = CellStyle(fg: dominant ? .green : (t.isYou ? .cyan : .normal), bold: true)
                    for (i, line) in big.enumerated() { b.put(line, x: x, y: y + i, style: style, maxWidth: inner.maxX - x) }
                }
            case 1:
                if inner.height == 1 {
                    // One row: the name and the first state glyphs.
                    var x = inner.x + b.put(name, x: inner.x, y: y, style: CellStyle(bold: true), maxWidth: max(3, inner.width * 2 / 3))
                    for (text, style) in stateItems(t, m, g, compact: true) where x < inner.maxX - 1 {
                        x += 1 + b.put(text, x: x + 1, y: y, style: style, maxWidth: inner.maxX - x - 1)
                    }
                } else {
                    let w = DisplayWidth.of(name)
                    let x = w < inner.width ? inner.x + (inner.width - w) / 2 : inner.x
                    b.put(name, x: x, y: y, style: CellStyle(bold: true), maxWidth: inner.width)
                }
            case 2:
                let items = stateItems(t, m, g)
                let total = items.reduce(0) { $0 + DisplayWidth.of($1.0) } + 2 * max(0, items.count - 1)
                var x = total < inner.width ? inner.x + (inner.width - total) / 2 : inner.x
                for (i, (text, style)) in items.enumerated() where x < inner.maxX {
                    if i > 0 { x += 2 }
                    x += b.put(text, x: x, y: y, style: style, maxWidth: inner.maxX - x)
                }
            case 3:
                let width = min(inner.width, 48)
                let filled = CallScreenRenderer.meterCells(t.isMuted ? nil : t.level, width: width)
                let x = inner.x + (inner.width - width) / 2
                b.put(String(repeating: g.meterFull, count: filled), x: x, y: y, style: CellStyle(fg: t.isMuted ? .red : .green), maxWidth: width)
                b.put(String(repeating: g.meterEmpty, count: width - filled), x: x + filled, y: y, style: CellStyle(dim: true), maxWidth: width - filled)
            default:
                let width = min(inner.width, 48)
                let samples = t.levelHistory.suffix(width)
                var spark = String(repeating: " ", count: width - samples.count)
                for l in samples { spark += l <= -60 ? " " : g.spark[min(7, max(0, Int((l + 60) / 60 * 8)))] }
                b.put(spark, x: inner.x + (inner.width - width) / 2, y: y, style: CellStyle(fg: .green, dim: true), maxWidth: width, ellipsis: false)
            }
            y += row.height
        }
    }
}
