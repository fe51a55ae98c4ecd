import CallsCore
import CallsVideo
import Synchronization

/// A participant's latest video frame as the call screen holds it: compared by its serial
/// number (a new frame is a change), never by its pixels. Its picture for a tile size is made
/// once and kept until the frame or the size changes (redraws for other reasons cost nothing).
/// A value; owned by the UI thread.
public struct TileVideo: Equatable, Sendable {
    public let frame: VideoFrame
    public let serial: UInt64
    /// Your own preview: shown as a mirror shows you.
    public let mirrored: Bool
    private let cache = PictureCache()

    public init(frame: VideoFrame, serial: UInt64, mirrored: Bool) {
        self.frame = frame
        self.serial = serial
        self.mirrored = mirrored
    }

    public static func == (a: TileVideo, b: TileVideo) -> Bool { a.serial == b.serial && a.mirrored == b.mirrored }

    /// The frame as `columns` × `rows` cells at most (its shape kept), in `mode`.
    func picture(columns: Int, rows: Int, mode: PictureMode, unicode: Bool) -> Picture {
        let fit = TerminalPicture.fit(width: frame.width, height: frame.height, columns: columns, rows: rows)
        let key = PictureCache.Key(columns: fit.columns, rows: fit.rows, mode: mode, unicode: unicode)
        if let kept = cache.kept.withLock({ $0 }), kept.key == key { return kept.picture }
        let p = PictureRenderers.shared.render(frame, key: key, mirrored: mirrored)
        cache.kept.withLock { $0 = (key, p) }
        return p
    }
}

/// One frame's rendered picture and the size it was made for (the UI thread's; the lock is
/// never contended and lets the value the call screen's model holds stay `Sendable`).
final class PictureCache: Sendable {
    struct Key: Equatable, Sendable { var columns: Int; var rows: Int; var mode: PictureMode; var unicode: Bool }
    let kept = Locked<(key: Key, picture: Picture)?>(nil)
}

/// The chafa renderers, one per mode (each keeps its canvases); used under a lock, though only
/// the UI thread draws.
final class PictureRenderers: Sendable {
    static let shared = PictureRenderers()
    /// Chafa's canvases are C state; the `Mutex` owns them (it is Sendable for any value it holds).
    private let renderers = LockedState<[String: TerminalPicture]>([:])
    /// Pictures made so far (tests: a redraw of the same frame at the same size makes none).
    let rendered = Locked(0)

    func render(_ frame: VideoFrame, key: PictureCache.Key, mirrored: Bool) -> Picture {
        rendered.withLock { $0 += 1 }
        return renderers.withLock { r in
            let name = "\(key.mode.rawValue)-\(key.unicode)"
            let renderer = r[name] ?? TerminalPicture(mode: key.mode, unicode: key.unicode)
            r[name] = renderer
            return renderer.render(frame, columns: key.columns, rows: key.rows, mirrored: mirrored)
        }
    }
}
