import CYuv

extension VideoFrame {
    /// The frame scaled to `width` × `height` (libyuv, box filter); itself when it already is.
    public func scaled(width w: Int, height h: Int) -> VideoFrame {
        let w = w & ~1, h = h & ~1
        guard w > 0, h > 0, (w, h) != (width, height) else { return self }
        var out = [UInt8](repeating: 0, count: VideoFrame.byteCount(width: w, height: h))
        bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                guard let s = src.baseAddress, let d = dst.baseAddress else { return }
                let du = d + w * h, dv = du + (w / 2) * (h / 2)
                I420Scale(s, Int32(width), s + uOffset, Int32(chromaWidth), s + vOffset, Int32(chromaWidth), Int32(width), Int32(height),
                          d, Int32(w), du, Int32(w / 2), dv, Int32(w / 2), Int32(w), Int32(h), kFilterBox)
            }
        }
        return VideoFrame(width: w, height: h, bytes: out, captureNanoseconds: captureNanoseconds)
    }
}
