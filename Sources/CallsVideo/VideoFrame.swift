/// One picture in I420 (planar YUV 4:2:0, BT.601 limited range): the Y plane (`width` ×
/// `height`), then U and V (each half the width and half the height), tightly packed in one
/// buffer. Dimensions are even. `captureNanoseconds` is the monotonic time the source made it.
/// A value; any thread.
public struct VideoFrame: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public var bytes: [UInt8]
    public var captureNanoseconds: UInt64

    public init(width: Int, height: Int, bytes: [UInt8], captureNanoseconds: UInt64 = 0) {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "I420 frames have even, positive dimensions")
        precondition(bytes.count == Self.byteCount(width: width, height: height), "an I420 buffer is width × height × 3/2 bytes")
        self.width = width
        self.height = height
        self.bytes = bytes
        self.captureNanoseconds = captureNanoseconds
    }

    /// A frame of one colour.
    public init(width: Int, height: Int, y: UInt8 = 16, u: UInt8 = 128, v: UInt8 = 128) {
        let luma = width * height
        var b = [UInt8](repeating: y, count: luma + luma / 2)
        for i in luma..<(luma + luma / 4) { b[i] = u }
        for i in (luma + luma / 4)..<b.count { b[i] = v }
        self.init(width: width, height: height, bytes: b)
    }

    public static func byteCount(width: Int, height: Int) -> Int { width * height + 2 * ((width / 2) * (height / 2)) }

    public var chromaWidth: Int { width / 2 }
    public var chromaHeight: Int { height / 2 }
    /// Offsets of the U and V planes in `bytes`.
    public var uOffset: Int { width * height }
    public var vOffset: Int { width * height + chromaWidth * chromaHeight }

    @inline(__always) public func luma(x: Int, y: Int) -> UInt8 { bytes[y * width + x] }

    /// Mean luma over a rectangle (clipped to the frame).
    public func meanLuma(x: Int, y: Int, width w: Int, height h: Int) -> Double {
        let x0 = max(0, x), y0 = max(0, y), x1 = min(width, x + w), y1 = min(height, y + h)
        guard x1 > x0, y1 > y0 else { return 0 }
        var sum = 0
        for row in y0..<y1 { for col in x0..<x1 { sum += Int(bytes[row * width + col]) } }
        return Double(sum) / Double((x1 - x0) * (y1 - y0))
    }

    /// Mean (Y, U, V) over a rectangle: U and V from the chroma planes under it.
    public func meanYUV(x: Int, y: Int, width w: Int, height h: Int) -> (y: Double, u: Double, v: Double) {
        let l = meanLuma(x: x, y: y, width: w, height: h)
        let cx0 = max(0, x / 2), cy0 = max(0, y / 2), cx1 = min(chromaWidth, (x + w) / 2), cy1 = min(chromaHeight, (y + h) / 2)
        guard cx1 > cx0, cy1 > cy0 else { return (l, 128, 128) }
        var su = 0, sv = 0
        for row in cy0..<cy1 {
            for col in cx0..<cx1 {
                su += Int(bytes[uOffset + row * chromaWidth + col])
                sv += Int(bytes[vOffset + row * chromaWidth + col])
            }
        }
        let n = Double((cx1 - cx0) * (cy1 - cy0))
        return (l, Double(su) / n, Double(sv) / n)
    }
}

/// BT.601 limited-range conversions for the synthetic sources and for tests.
public enum YUV {
    public static func from(r: Int, g: Int, b: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
        let y = (66 * r + 129 * g + 25 * b + 128) >> 8 + 16
        let u = (-38 * r - 74 * g + 112 * b + 128) >> 8 + 128
        let v = (112 * r - 94 * g - 18 * b + 128) >> 8 + 128
        return (clamp(y), clamp(u), clamp(v))
    }

    static func clamp(_ v: Int) -> UInt8 { UInt8(max(0, min(255, v))) }
}
