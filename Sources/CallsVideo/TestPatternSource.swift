import CallsCore
import Synchronization

/// A synthetic camera: colour bars across the top, a square that sweeps across the middle (the
/// picture is visibly live), the participant's own colour behind it, the participant's name and
/// a running clock (time since its first frame, to the tenth of a second) written below in a real
/// font (`TextRasterizer`: FreeType; left out where no font is installed), and the capture time
/// stamped across the bottom for machines (`FrameStamp`). `.avatar` draws only a face on that colour, whose
/// mouth opens with `setMouthOpen` (or moves idly) — the demo's bots. The rear-facing variant draws its
/// bars in reverse order, so a switch of camera shows. For machines without a camera, and QA.
///
/// Thread rules: `read` from one thread (its drawing state is behind a lock that is never
/// contended); `close`, `setMouthOpen` from any.
public final class TestPatternSource: VideoSource {
    public enum Style: Sendable { case pattern, avatar }

    public let name: String
    public let width: Int
    public let height: Int
    public let style: Style
    public let facing: VideoFacing
    private let background: (y: UInt8, u: UInt8, v: UInt8)
    private let closed = Atomic<Bool>(false)
    private let mouth = Atomic<Int>(0)
    /// The name drawn once (nil without a font).
    private let nameBitmap: TextRasterizer.Bitmap?
    /// What `read` changes: frames made, and the text line's font (FreeType's state), first
    /// frame time and the clock's last text and drawing.
    private struct Drawing {
        var frameCount = 0
        let text: TextRasterizer?
        var firstFrameAt: UInt64?
        var clock: (text: String, bitmap: TextRasterizer.Bitmap)?
    }
    private let drawing: LockedState<Drawing>

    /// The seven bars, left to right (front-facing): white, yellow, cyan, green, magenta, red, blue.
    public static let bars: [(r: Int, g: Int, b: Int)] = [(235, 235, 235), (235, 235, 16), (16, 235, 235), (16, 235, 16),
                                                          (235, 16, 235), (235, 16, 16), (16, 16, 235)]

    public init(name: String, width: Int = 320, height: Int = 180, style: Style = .pattern, facing: VideoFacing = .front) {
        self.name = name
        self.width = width & ~1
        self.height = height & ~1
        self.style = style
        self.facing = facing
        // A colour of the participant's own (stable per name), darkish so the bars stand out.
        var h: UInt32 = 2166136261
        for b in name.utf8 { h = (h ^ UInt32(b)) &* 16777619 }
        let r = 40 + Int(h & 0x7F), g = 40 + Int(h >> 8 & 0x7F), b = 40 + Int(h >> 16 & 0x7F)
        background = YUV.from(r: r, g: g, b: b)
        // The text line sits between the sweep and the stamp: a seventh of the height.
        let text = style == .pattern ? TextRasterizer(pixelSize: max(8, self.height / 7)) : nil
        nameBitmap = text?.render(name)
        drawing = LockedState(Drawing(text: text))
    }

    /// The clock's text for a capture `elapsed` nanoseconds after the first frame: "m:ss.t".
    public static func clockText(elapsed: UInt64) -> String {
        let tenths = elapsed / 100_000_000
        let seconds = tenths / 10 % 60, minutes = tenths / 600
        return "\(minutes):\(seconds < 10 ? "0" : "")\(seconds).\(tenths % 10)"
    }

    /// 0 (closed) … 100 (wide open): the avatar's mouth.
    public func setMouthOpen(_ percent: Int) { mouth.store(max(0, min(100, percent)), ordering: .relaxed) }

    public func read(at nanoseconds: UInt64) throws(VideoError) -> VideoFrame {
        guard !closed.load(ordering: .acquiring) else { throw .closed }
        var f = VideoFrame(width: width, height: height, y: background.y, u: background.u, v: background.v)
        f.captureNanoseconds = nanoseconds
        let frameCount = drawing.withLock { d in d.frameCount += 1; return d.frameCount }
        guard style == .pattern else {
            drawFace(&f, frameCount: frameCount)
            return f
        }
        drawBars(&f)
        // The sweeping square: across the middle band, one pass every 4 s at 15 fps.
        let side = height / 5
        let travel = max(1, width - side)
        let phase = (frameCount - 1) % 60
        let x = (phase * travel / 59) & ~1
        fill(&f, x: x, y: height / 3 + side / 4, w: side, h: side, (235, 128, 128))
        drawTextLine(&f, at: nanoseconds)
        FrameStamp.write(UInt32(truncatingIfNeeded: nanoseconds / 1_000_000), into: &f)
        return f
    }

    public func close() { closed.store(true, ordering: .releasing) }

    private func drawBars(_ f: inout VideoFrame) {
        let n = Self.bars.count
        let barHeight = (height / 3) & ~1
        for i in 0..<n {
            let c = Self.bars[facing == .front ? i : n - 1 - i]
            let x0 = (i * width / n) & ~1, x1 = ((i + 1) * width / n) & ~1
            fill(&f, x: x0, y: 0, w: x1 - x0, h: barHeight, YUV.from(r: c.r, g: c.g, b: c.b))
        }
    }

    /// The name at the left and the clock at the right, white on a dark plate, between the
    /// sweep and the stamp. The name gives way to the clock when both do not fit.
    private func drawTextLine(_ f: inout VideoFrame, at nanoseconds: UInt64) {
        guard let nameBitmap else { return }
        let clockBitmap: TextRasterizer.Bitmap? = drawing.withLock { d in
            guard let text = d.text else { return nil }
            let start = d.firstFrameAt ?? nanoseconds
            d.firstFrameAt = start
            let now = Self.clockText(elapsed: nanoseconds &- start)
            if d.clock?.text != now { d.clock = (now, text.render(now)) }
            return d.clock?.bitmap
        }
        guard let clockBitmap else { return }
        let top = (height * 2 / 3 - nameBitmap.height / 3) & ~1
        let margin = max(2, width / 64) & ~1
        let clockX = (width - margin - clockBitmap.width) & ~1
        let nameRoom = max(0, clockX - 2 * margin)
        blit(&f, nameBitmap, x: margin, y: top, maxWidth: nameRoom)
        blit(&f, clockBitmap, x: clockX, y: top, maxWidth: width - clockX)
    }

    /// Draws `b` at (x, y), clipped to `maxWidth` and the frame: a dark neutral plate, then ink.
    private func blit(_ f: inout VideoFrame, _ b: TextRasterizer.Bitmap, x: Int, y: Int, maxWidth: Int) {
        let w = min(b.width, maxWidth, width - x), h = min(b.height, height - y)
        guard w > 0, h > 0, x >= 0, y >= 0 else { return }
        fill(&f, x: x - 2, y: y, w: (w + 4 + 1) & ~1, h: (h + 1) & ~1, (24, 128, 128))
        for row in 0..<h {
            for col in 0..<w {
                let a = Int(b[col, row])
                guard a > 0 else { continue }
                let i = (y + row) * width + x + col
                f.bytes[i] = UInt8((Int(f.bytes[i]) * (255 - a) + 235 * a) / 255)
            }
        }
    }

    private func drawFace(_ f: inout VideoFrame, frameCount: Int) {
        let cx = width / 2, cy = height * 5 / 12, r = height / 3
        let skin = YUV.from(r: 224, g: 172, b: 105), dark = YUV.from(r: 40, g: 30, b: 30)
        disc(&f, cx: cx, cy: cy, r: r, skin)
        disc(&f, cx: cx - r / 3, cy: cy - r / 4, r: max(2, r / 7), dark)
        disc(&f, cx: cx + r / 3, cy: cy - r / 4, r: max(2, r / 7), dark)
        // The mouth: as set (a speaking bot), else a slow idle movement so the face looks alive.
        let set = mouth.load(ordering: .relaxed)
        let open = set > 0 ? set : (frameCount % 40 < 6 ? 40 : 10)
        let mh = max(2, (r / 2) * open / 100) & ~1
        fill(&f, x: (cx - r / 3) & ~1, y: (cy + r / 3) & ~1, w: (2 * r / 3) & ~1, h: mh, dark)
    }

    private func fill(_ f: inout VideoFrame, x: Int, y: Int, w: Int, h: Int, _ c: (y: UInt8, u: UInt8, v: UInt8)) {
        let x0 = max(0, x), y0 = max(0, y), x1 = min(width, x + w), y1 = min(height, y + h)
        guard x1 > x0, y1 > y0 else { return }
        for row in y0..<y1 { for col in x0..<x1 { f.bytes[row * width + col] = c.y } }
        let cw = width / 2
        for row in (y0 / 2)..<((y1 + 1) / 2) {
            for col in (x0 / 2)..<((x1 + 1) / 2) {
                f.bytes[f.uOffset + row * cw + col] = c.u
                f.bytes[f.vOffset + row * cw + col] = c.v
            }
        }
    }

    private func disc(_ f: inout VideoFrame, cx: Int, cy: Int, r: Int, _ c: (y: UInt8, u: UInt8, v: UInt8)) {
        let cw = width / 2
        for row in max(0, cy - r)..<min(height, cy + r) {
            for col in max(0, cx - r)..<min(width, cx + r) where (col - cx) * (col - cx) + (row - cy) * (row - cy) <= r * r {
                f.bytes[row * width + col] = c.y
                f.bytes[f.uOffset + (row / 2) * cw + col / 2] = c.u
                f.bytes[f.vOffset + (row / 2) * cw + col / 2] = c.v
            }
        }
    }
}
