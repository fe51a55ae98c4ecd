/// A time written into a picture as 40 black and white cells (two rows of 20 across the bottom
/// sixth of the frame): a 32-bit millisecond clock and an 8-bit check, coarse enough to survive
/// VP8 at any bitrate CallRoom uses. The test pattern stamps its capture time; a receiver reads
/// it back from the decoded frame to measure glass-to-glass latency (both on CLOCK_MONOTONIC).
/// A value; any thread.
public enum FrameStamp {
    static let columns = 20
    static let rows = 2
    static let bits = 40

    /// The rectangle of one cell.
    static func cell(_ i: Int, width: Int, height: Int) -> (x: Int, y: Int, w: Int, h: Int) {
        let strip = height / 6, top = height - strip
        let cw = width / columns, ch = strip / rows
        return ((i % columns) * cw, top + (i / columns) * ch, cw, ch)
    }

    static func check(_ v: UInt32) -> UInt8 {
        let b = [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
        return b.reduce(0xA5) { ($0 &* 31) &+ $1 }
    }

    /// Writes `milliseconds` into the frame's bottom strip (luma only; chroma made neutral).
    public static func write(_ milliseconds: UInt32, into f: inout VideoFrame) {
        let word = UInt64(milliseconds) << 8 | UInt64(check(milliseconds))
        let strip = f.height / 6
        for row in (f.height - strip)..<f.height {
            for col in 0..<f.width { f.bytes[row * f.width + col] = 16 }
        }
        for row in (f.height - strip) / 2..<f.height / 2 {
            for col in 0..<f.chromaWidth {
                f.bytes[f.uOffset + row * f.chromaWidth + col] = 128
                f.bytes[f.vOffset + row * f.chromaWidth + col] = 128
            }
        }
        for i in 0..<bits where word >> UInt64(bits - 1 - i) & 1 == 1 {
            let c = cell(i, width: f.width, height: f.height)
            for row in c.y..<(c.y + c.h) {
                for col in c.x..<(c.x + c.w) { f.bytes[row * f.width + col] = 235 }
            }
        }
    }

    /// The time stamped in a frame; nil when the strip does not read (not a stamped frame,
    /// or too damaged: the check fails).
    public static func read(_ f: VideoFrame) -> UInt32? {
        guard f.width >= columns * 4, f.height >= 24 else { return nil }
        var word: UInt64 = 0
        for i in 0..<bits {
            let c = cell(i, width: f.width, height: f.height)
            let m = f.meanLuma(x: c.x + c.w / 4, y: c.y + c.h / 4, width: max(1, c.w / 2), height: max(1, c.h / 2))
            word = word << 1 | (m > 125 ? 1 : 0)
        }
        let v = UInt32(truncatingIfNeeded: word >> 8)
        return UInt8(word & 0xFF) == check(v) ? v : nil
    }
}
