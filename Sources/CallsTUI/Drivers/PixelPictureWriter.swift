import CallsVideo
import Foundation

/// Draws a screen's `PixelPicture`s with the terminal's graphics protocol after ncurses has
/// drawn the cells: each at its cells (cursor saved and restored around it, so ncurses' idea of
/// the cursor holds), only when its frame or place changed. Kitty: one image id per participant
/// (a new frame replaces the old; a tile that goes is deleted). Sixel: pixels stay until text
/// covers them, so when a picture moves or goes the caller repaints the whole screen
/// (`update` says so) and every picture is drawn again.
///
/// Encoding costs (kitty ≈ 0.6 ms, sixel 5–8 ms a tile: `callroom bench video`), so one call
/// encodes pictures only while it is inside `budgetNanoseconds` (at least one): new places
/// first, then the longest waiting. The rest stay `pending` for the next call — with many tiles a
/// terminal gets fewer frames a second, never a slower screen.
///
/// Thread rules: the UI thread (the driver's), like ncurses.
public final class PixelPictureWriter {
    public let graphics: TerminalGraphics
    private let encoder = TerminalGraphicsEncoder()
    private let converter = TerminalPicture(mode: .truecolor, unicode: true)
    private var shown: [String: PixelPicture] = [:]
    private var ids: [String: UInt32] = [:]
    private var nextID: UInt32 = 1
    /// Images sent so far (tests, benchmarks).
    public private(set) var imagesSent = 0
    /// Bytes of escape sequences written so far.
    public private(set) var bytesWritten = 0
    /// How long one call may spend encoding.
    public var budgetNanoseconds: UInt64 = 4_000_000
    /// When each participant's picture was last sent (the longest waiting goes first).
    private var sentAt: [String: UInt64] = [:]
    /// Whether pictures wait for the next call (their frame or place changed, the budget ran out).
    public private(set) var pending = false

    public init(graphics: TerminalGraphics) { self.graphics = graphics }

    /// Brings the terminal's pictures to `pictures`, writing through `write`. Returns true when
    /// the screen must be repainted first (sixel pixels left where a picture went): repaint,
    /// then call `redrawAll` with the same pictures.
    public func update(_ pictures: [PixelPicture], cell: (width: Int, height: Int), write: (String) -> Void) -> Bool {
        let wanted = Dictionary(pictures.map { ($0.pid, $0) }, uniquingKeysWith: { a, _ in a })
        let gone = shown.keys.filter { wanted[$0] == nil }
        if graphics == .sixel {
            let relocated = pictures.contains { p in shown[p.pid].map { $0.rect != p.rect } ?? false }
            if !gone.isEmpty || relocated { return true }
        }
        var out = ""
        for pid in gone {
            if graphics == .kitty, let id = ids[pid] { out += TerminalGraphicsEncoder.kittyDelete(id: id) }
            shown[pid] = nil
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let waiting = pictures.filter { shown[$0.pid] != $0 }
            .sorted { (shown[$0.pid] == nil ? 0 : sentAt[$0.pid] ?? 0, $0.pid) < (shown[$1.pid] == nil ? 0 : sentAt[$1.pid] ?? 0, $1.pid) }
        var drawn = 0
        for p in waiting {
            if drawn > 0 && DispatchTime.now().uptimeNanoseconds - started > budgetNanoseconds { break }
            out += sequence(p, cell: cell)
            shown[p.pid] = p
            sentAt[p.pid] = DispatchTime.now().uptimeNanoseconds
            drawn += 1
        }
        pending = drawn < waiting.count
        flush(out, write)
        return false
    }

    /// Draws every picture (after the screen was repainted or cleared).
    public func redrawAll(_ pictures: [PixelPicture], cell: (width: Int, height: Int), write: (String) -> Void) {
        shown = [:]
        flush(graphics == .kitty ? TerminalGraphicsEncoder.kittyDelete(id: nil) : "", write)
        _ = update(pictures, cell: cell, write: write)
    }

    private func flush(_ out: String, _ write: (String) -> Void) {
        guard !out.isEmpty else { return }
        bytesWritten += out.utf8.count
        write(out)
    }

    /// Cursor to the picture's top-left cell, the image, cursor back.
    private func sequence(_ p: PixelPicture, cell: (width: Int, height: Int)) -> String {
        let r = p.rect
        guard r.width > 0, r.height > 0 else { return "" }
        // No more pixels than the cells show (nor than the frame has).
        let w = min(p.video.frame.width, r.width * cell.width) & ~1, h = min(p.video.frame.height, r.height * cell.height) & ~1
        guard w >= 2, h >= 2 else { return "" }
        let rgba = converter.rgba(p.video.frame, width: w, height: h, mirrored: p.video.mirrored)
        let image: String
        switch graphics {
        case .kitty:
            let id = ids[p.pid] ?? { defer { nextID += 1 }; ids[p.pid] = nextID; return nextID }()
            image = TerminalGraphicsEncoder.kitty(rgba: rgba, width: w, height: h, id: id, columns: r.width, rows: r.height)
        case .sixel:
            guard let s = encoder.sixel(rgba: rgba, width: w, height: h, columns: r.width, rows: r.height,
                                        cellWidth: cell.width, cellHeight: cell.height) else { return "" }
            image = s
        case .cells:
            return ""
        }
        imagesSent += 1
        return "\u{1B}7\u{1B}[\(r.y + 1);\(r.x + 1)H" + image + "\u{1B}8"
    }
}
