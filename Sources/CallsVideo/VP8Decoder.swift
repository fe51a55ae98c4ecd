import CVpx

/// A VP8 decoder (libvpx). Decodes one compressed frame at a time into an I420 `VideoFrame`.
///
/// Thread rules: owned by one thread (the receiver's video path); not thread-safe. The libvpx
/// context is owned and destroyed with the object.
public final class VP8Decoder {
    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>

    public init() throws(VideoError) {
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        let rc = callroom_vp8_dec_init(context)
        guard rc == VPX_CODEC_OK else {
            context.deallocate()
            throw .codec("vpx_codec_dec_init: \(String(cString: vpx_codec_err_to_string(rc)))")
        }
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
    }

    /// The decoded picture, and whether it was drawn from a reference that a lost frame
    /// damaged (then the sender should be asked for a keyframe).
    public struct Output: Sendable {
        public var frame: VideoFrame
        public var corrupted: Bool
    }

    /// Decodes one compressed frame. Throws on data libvpx cannot decode (ask for a keyframe).
    public func decode(_ data: [UInt8], captureNanoseconds: UInt64 = 0) throws(VideoError) -> Output? {
        let rc = data.withUnsafeBufferPointer { vpx_codec_decode(context, $0.baseAddress, UInt32($0.count), nil, 0) }
        guard rc == VPX_CODEC_OK else { throw .codec("vpx_codec_decode: \(String(cString: vpx_codec_err_to_string(rc)))") }
        var iterator: vpx_codec_iter_t? = nil
        var last: VideoFrame?
        while let img = vpx_codec_get_frame(context, &iterator) {
            last = Self.copy(img.pointee, captureNanoseconds: captureNanoseconds)
        }
        guard let frame = last else { return nil }
        return Output(frame: frame, corrupted: callroom_vp8_frame_corrupted(context) != 0)
    }

    /// libvpx's image (planes with strides, possibly odd display size) as a packed even-sized frame.
    private static func copy(_ img: vpx_image_t, captureNanoseconds: UInt64) -> VideoFrame? {
        let w = Int(img.d_w) & ~1, h = Int(img.d_h) & ~1
        guard w > 0, h > 0, img.fmt == VPX_IMG_FMT_I420, let py = img.planes.0, let pu = img.planes.1, let pv = img.planes.2 else { return nil }
        var bytes = [UInt8](repeating: 0, count: VideoFrame.byteCount(width: w, height: h))
        let sy = Int(img.stride.0), su = Int(img.stride.1), sv = Int(img.stride.2)
        let cw = w / 2, ch = h / 2
        bytes.withUnsafeMutableBufferPointer { out in
            guard let o = out.baseAddress else { return }
            for row in 0..<h { (o + row * w).update(from: py + row * sy, count: w) }
            let uo = o + w * h, vo = uo + cw * ch
            for row in 0..<ch {
                (uo + row * cw).update(from: pu + row * su, count: cw)
                (vo + row * cw).update(from: pv + row * sv, count: cw)
            }
        }
        return VideoFrame(width: w, height: h, bytes: bytes, captureNanoseconds: captureNanoseconds)
    }
}
